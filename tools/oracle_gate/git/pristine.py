"""A pristine tree: committed content only, written from git objects into an empty directory.

No work-tree file, untracked or ignored file, git filter, or eol conversion reaches it: each file
is the exact bytes of its blob, with its committed mode; symlinks are recreated as symlinks;
submodules (gitlinks) are left out. It is the clean run's tree (docs/design.md section 10).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.gitio import git_env
from tools.oracle_gate.git.tree import EXECUTABLE, GITLINK, SYMLINK, Entry, GitTree


def safe_target(dest: str, path: str) -> str:
    """Joins `path` under `dest`, refusing absolute paths and `..` (a tree cannot hold them, but
    the gate does not rely on that)."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
        raise GateError(f"refusing to write {path!r} into the pristine tree")
    return os.path.join(dest, *parts)


def read_blobs(repo: str, oids: list[str], environ: Mapping[str, str] = os.environ) -> dict[str, bytes]:
    """Reads many blobs with one `git cat-file --batch` process.

    Raises:
        GateError: when an object is missing or git fails.
    """
    proc = subprocess.Popen(
        ["git", "-C", repo, "--no-replace-objects", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git_env(environ),
    )
    assert proc.stdin is not None and proc.stdout is not None
    unique = list(dict.fromkeys(oids))
    out: dict[str, bytes] = {}
    try:
        proc.stdin.write("".join(f"{oid}\n" for oid in unique).encode())
        proc.stdin.close()
        for oid in unique:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GateError(f"git object {oid} is missing or not a blob")
            size = int(header[2])
            out[oid] = proc.stdout.read(size)
            proc.stdout.read(1)
    finally:
        proc.stdout.close()
        proc.wait()
    return out


def write_tree(repo: str, dest: str, entries: Mapping[str, Entry]) -> int:
    """Writes tree entries (path -> Entry from `GitTree.files`) under the empty directory `dest`.

    Returns:
        The number of files and symlinks written.

    Raises:
        GateError: (exit 1) for a path that is absolute, holds `..`, `.`, `.git` or an empty part,
            or lies below another entry (a symlink there could lead the write out of `dest`).
    """
    # A malformed tree can hold both an entry `a` and an entry `a/b`; written in order, `a` could be a
    # symlink leading out of `dest` that `a/b` is then written through. Any entry below another
    # entry is refused before anything is written.
    for path in entries:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in entries:
                raise GateError(
                    f"refusing to write {path!r} into the pristine tree: "
                    f"{'/'.join(parts[:depth])!r} is an entry of its own, not a directory"
                )
    blobs = read_blobs(repo, [e.ref for e in entries.values() if e.mode != GITLINK])
    count = 0
    for path, entry in sorted(entries.items()):
        if entry.mode == GITLINK:
            continue
        target = safe_target(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        data = blobs[entry.ref]
        if entry.mode == SYMLINK:
            os.symlink(os.fsdecode(data), target)
        else:
            fd = os.open(
                target,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                0o755 if entry.mode == EXECUTABLE else 0o644,
            )
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        count += 1
    return count


def is_dotenv(path: str) -> bool:
    """True for a dotenv file (`.env`, `.env.local`, ...): local secrets and settings that must not
    reach a clean run even when committed."""
    name = path.rsplit("/", 1)[-1]
    return name == ".env" or name.startswith(".env.")


def pristine_tree(repo: str, head: str, oracles_commit: str, dest: str, *, dotenv: bool = False) -> int:
    """Writes HEAD's committed tree to `dest`, with `oracles/` taken from `oracles_commit` instead
    and dotenv files left out (unless `dotenv`).

    Args:
        repo: the repository.
        head: commit whose production code, harness and build files are used.
        oracles_commit: commit whose `oracles/` is used (the base, or HEAD for a labelled change).
        dest: an empty directory.
        dotenv: keep committed dotenv files, as a checkout has them (the workspace run's checkout
            of a merge result: the clean run, which leaves them out, must then agree with it).

    Returns:
        The number of files and symlinks written.
    """
    entries = {
        p: e
        for p, e in GitTree(repo, head).files("").items()
        if not p.startswith("oracles/") and (dotenv or not is_dotenv(p))
    }
    entries.update(GitTree(repo, oracles_commit).files("oracles"))
    if os.listdir(dest):
        raise GateError(f"{dest} is not empty")
    return write_tree(repo, dest, entries)
