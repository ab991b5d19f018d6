"""What `record` gives the probe besides its rows: the owners' `oracles/` of the work tree, and the
build files `init` writes that the recorded commit lacks (docs/oracles.md, "Recording expected
values").

A repository adopting the gate records from a commit made before `init` ran: it has production
code but no MODULE.bazel, WORKSPACE, .bazelrc, BUILD files or lock. Those come from the work tree,
and the first line of `record`'s output names them; no Python source ever does (runs/probe.py
refuses one), so the code observed is the commit's alone.
"""

from __future__ import annotations

import os
import posixpath
import stat
import subprocess

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.tree import GitTree, WorkTree

# The files a commit may lack that the work tree gives the probe: Bazel's build and settings files
# (bazel.build: "BUILD files", "Bazel modules", ".bazelrc") and the lock `init` writes.
BUILD_NAMES = frozenset(
    {
        "BUILD",
        "BUILD.bazel",
        "WORKSPACE",
        "WORKSPACE.bazel",
        "WORKSPACE.bzlmod",
        "MODULE.bazel",
        "MODULE.bazel.lock",
        ".bazelrc",
        ".bazelversion",
        ".bazelignore",
        "requirements.in",
        "requirements_lock.txt",
    }
)
BUILD_SUFFIXES = (".bzl",)


def work_oracles(tree: WorkTree) -> dict[str, bytes]:
    """path -> bytes of every regular file under the work tree's `oracles/` (its BUILD file, policy,
    rows, blobs and reference code: the owners' files). Raises OSError when one cannot be read."""
    return {path: tree.read(entry) for path, entry in tree.files("oracles").items() if entry.is_regular}


def _work_files(repo: str) -> list[str]:
    """The work tree's tracked and new (not ignored) files, repository-relative."""
    try:
        out = subprocess.run(
            ["git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
            stdin=subprocess.DEVNULL,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise GateError(f"cannot list the work tree's files with git: {exc}") from None
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def build_files_lacking(repo: str, commit: str) -> dict[str, bytes]:
    """path -> bytes of the work tree's build files (BUILD_NAMES, BUILD_SUFFIXES) outside `oracles/`
    that `commit` does not hold.

    Raises:
        GateError: (exit 1) when git cannot list the files or the commit cannot be read.
        OSError: when a listed file cannot be read.
    """
    held = GitTree(repo, commit).files("")
    out: dict[str, bytes] = {}
    for path in _work_files(repo):
        name = posixpath.basename(path)
        if path in held or path.startswith("oracles/"):
            continue
        full = os.path.join(repo, *path.split("/"))
        if (name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES)) and stat.S_ISREG(os.lstat(full).st_mode):
            with open(full, "rb") as f:
                out[path] = f.read()
    return out
