"""Does the work tree hold exactly HEAD? Bazel tests the work tree; `check` judges HEAD.

Git's own status hides some differences: a clean/smudge filter, eol conversion or `ident` makes the
checked-out bytes differ from the committed ones while status stays clean, and ignored files are
invisible to it yet a BUILD glob picks them up. This module compares bytes with filters off
(docs/design.md sections 4 and 10).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

from tools.oracle_gate.git.gitio import git
from tools.oracle_gate.git.transform import explain, restore_command
from tools.oracle_gate.git.tree import GITLINK, SYMLINK, GitTree

# Ignored files a normal Bazel or Python run leaves behind; they cannot change what a test reads.
_CONVENIENCE_SYMLINK = re.compile(r"^bazel-[^/]+$")
_BYTECODE_DIR = re.compile(r"(^|/)__pycache__$")


def _harmless(repo: str, path: str) -> bool:
    """True for Bazel's top-level convenience symlinks and Python bytecode caches holding only .pyc."""
    full = os.path.join(repo, path)
    if _CONVENIENCE_SYMLINK.match(path):
        return os.path.islink(full)
    if path.endswith(".pyc") and "__pycache__/" in path:
        return not os.path.islink(full)
    if _BYTECODE_DIR.search(path) and os.path.isdir(full) and not os.path.islink(full):
        return all(
            name.endswith(".pyc")
            and os.path.isfile(os.path.join(full, name))
            and not os.path.islink(os.path.join(full, name))
            for name in os.listdir(full)
        )
    return False


def object_id(data: bytes, algorithm: str) -> str:
    """Git's blob object id of `data` (sha1 or sha256 repositories)."""
    return hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()


def differences(repo: str, head: GitTree) -> list[str]:
    """Lists how the work tree at `repo` differs from the commit `head`, one entry per path.

    Covers: tracked files whose bytes (filters off) or type differ, missing files, untracked files,
    and ignored files other than Bazel's convenience symlinks and Python bytecode caches.
    """
    algorithm = git(repo, "rev-parse", "--show-object-format").decode().strip() or "sha1"
    out: list[str] = []
    for path, entry in sorted(head.files("").items()):
        if entry.mode == GITLINK:
            continue
        full = os.path.join(repo, path)
        try:
            st = os.lstat(full)
        except OSError:
            out.append(f"{path} (missing)")
            continue
        if entry.mode == SYMLINK:
            if not stat.S_ISLNK(st.st_mode):
                out.append(f"{path} (committed as a symlink, not one here)")
                continue
            data = os.fsencode(os.readlink(full))
        else:
            if not stat.S_ISREG(st.st_mode):
                out.append(f"{path} (committed as a regular file, not one here)")
                continue
            with open(full, "rb") as f:
                data = f.read()
        if object_id(data, algorithm) != entry.ref:
            what = explain(data, lambda original: object_id(original, algorithm) == entry.ref)  # noqa: B023 - explain calls it here
            out.append(
                f"{path} (bytes differ from the commit, rewritten at checkout: {what}; restore with "
                f"`{restore_command(path)}`)"
                if what
                else f"{path} (bytes differ from the commit)"
            )
    raw = git(
        repo,
        "status",
        "--porcelain",
        "-z",
        "--no-renames",
        "--untracked-files=all",
        "--ignored=matching",
        "--ignore-submodules=none",
    )
    for record in raw.split(b"\0"):
        if len(record) < 4:
            continue
        code, path = record[:2], record[3:].decode("utf-8", "surrogateescape")
        if code == b"??":
            out.append(f"{path} (untracked)")
        elif code == b"!!" and not _harmless(repo, path.rstrip("/")):
            out.append(f"{path} (ignored, but a BUILD glob could read it)")
    return out
