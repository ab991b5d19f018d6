"""What `record` gives the probe besides its rows: the owners' `oracles/` of the work tree, and the
build files `init` writes that the recorded commit lacks (docs/oracles.md, "Recording expected
values").

A repository adopting the gate records from a commit made before `init` ran: it has production
code but no MODULE.bazel, WORKSPACE, .bazelrc, BUILD files or lock. The files `init` writes then
come from the work tree, and the first line of `record`'s output names them; a commit that is a
Bazel workspace gets nothing from the work tree, no `.bzl` file ever comes from it, and no Python
source ever does (runs/probe.py refuses one), so the code observed is the commit's alone.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from tools.oracle_gate.files import linked_folder
from tools.oracle_gate.git.tree import GitTree, WorkTree

# What makes a commit a Bazel workspace of its own: with one of them, the work tree gives nothing.
WORKSPACE_FILES = ("WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel")
# The files `init` writes at the root that a commit made before it lacks (bazel.build: "Bazel
# modules", ".bazelrc"; the lock `init` writes). `WORKSPACE.bazel` and `.bzl` files are never
# taken: nothing `init` writes needs them, and they would run code before any sandbox exists.
ROOT_NAMES = (
    "BUILD.bazel",
    "WORKSPACE",
    "MODULE.bazel",
    "MODULE.bazel.lock",
    ".bazelrc",
    ".bazelversion",
    "requirements.in",
    "requirements_lock.txt",
)
# The BUILD files `init` writes, one in each production package's folder.
BUILD_NAMES = ("BUILD.bazel", "BUILD")


def work_oracles(tree: WorkTree) -> dict[str, bytes]:
    """path -> bytes of every regular file under the work tree's `oracles/` (its BUILD file, policy,
    rows, blobs and reference code: the owners' files). Raises OSError when one cannot be read."""
    return {path: tree.read(entry) for path, entry in tree.files("oracles").items() if entry.is_regular}


def build_files_lacking(repo: str, commit: str, packages: Sequence[str]) -> dict[str, bytes]:
    """path -> bytes of the files `init` writes, read from the work tree, when `commit` predates
    `init` (it holds none of WORKSPACE_FILES): ROOT_NAMES at the root and BUILD_NAMES in the folder
    of each of `packages` (at the root or under `src/`). {} for a commit that is a workspace.

    Raises:
        GateError: (exit 1) when the commit cannot be read.
        OSError: when a file cannot be read.
    """
    held = GitTree(repo, commit).files("")
    if any(name in held for name in WORKSPACE_FILES):
        return {}
    wanted = [*ROOT_NAMES]
    for package in packages:
        wanted += [f"{prefix}{package}/{name}" for prefix in ("", "src/") for name in BUILD_NAMES]
    out: dict[str, bytes] = {}
    for path in wanted:
        full = os.path.join(repo, *path.split("/"))
        try:
            info = os.lstat(full)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode) and linked_folder(repo, path) is None:
            with open(full, "rb") as f:
                out[path] = f.read()
    return out
