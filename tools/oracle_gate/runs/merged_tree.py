"""The gate's own checkout of a merge result, where the workspace run tests what would land.

When HEAD does not contain the base tip, `check` judges the merge commit it wrote
(`gitio.merge_commit`). The user's work tree is never touched: the merge result is written from git
objects (pristine.py: committed bytes and modes only, committed dotenv files included, as a
checkout holds them) into a folder of the gate's run folder, one per repository, so the Bazel
output base that belongs to that path stays warm from one `check` to the next. A lock file keeps two checks of
one repository from sharing it at once. The folder holds expected values (the merge result's `oracles/`): it
lies in the run folder, which other runs block from their actions, and this run blocks its `oracles/`
(docs/design.md section 11).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.pristine import pristine_entries, sync_tree
from tools.oracle_gate.runs.blocks import path_folder
from tools.oracle_gate.runs.flags import SERVER_JVM_FLAGS
from tools.oracle_gate.runs.local_paths import local_paths, outside

# Startup flags of the Bazel server of a merge result's checkout: it stops by itself after five idle
# minutes (seconds), where the server of a work tree would wait Bazel's default three hours; the
# gate's own servers' JVM flags (flags.py).
MERGED_TREE_STARTUP = ("--max_idle_secs=300", *SERVER_JVM_FLAGS)
_PREFIX = "merged-"


def merged_folder(repo: str, environ: Mapping[str, str]) -> str:
    """The folder of `repo`'s merge-result checkout: `RUNS/merged-<16 hex digits of the sha256 of
    the repository's real path>` (`blocks.runs_dir`); the tree itself is its `tree/`.

    Raises:
        GateError: (exit 1) when the run folder is unusable (`blocks.runs_dir`).
    """
    return path_folder(_PREFIX, repo, environ)


@contextmanager
def merged_tree(repo: str, commit: str, oracles_commit: str, environ: Mapping[str, str]) -> Iterator[str]:
    """Writes `commit`'s tree, with `oracles/` from `oracles_commit`, into the repository's
    merge-result folder (`merged_folder`) and yields the tree's path, holding the folder's lock
    until the block ends. Whatever an earlier check left there that the tree does not hold is
    removed (`pristine.sync_tree`).

    Args:
        repo: the repository whose objects hold both commits.
        commit: the merge commit (full id).
        oracles_commit: the commit whose `oracles/` the tree gets (the tip's, or the merge result's
            for a labelled change).
        environ: the environment (for the run folder).

    Raises:
        GateError: (exit 1) when the folder cannot be locked, emptied or written.
    """
    folder = merged_folder(repo, environ)
    tree = os.path.join(folder, "tree")
    with locked_folder(folder, tree, "the merge result's checkout"):
        os.makedirs(tree, exist_ok=True)
        # Committed dotenv files too, as a checkout of the merge would hold them: the clean run
        # leaves them out, so code that depends on one makes the runs disagree (exit 6). Files
        # alike stay in place, so the kept Bazel server keeps what it loaded and analysed.
        sync_tree(repo, tree, pristine_entries(repo, commit, oracles_commit, dotenv=True))
        link_local_paths(tree, repo, folder)
        yield tree


@contextmanager
def locked_folder(folder: str, inner: str, what: str, lock: bool = True) -> Iterator[None]:
    """Makes the folder `inner` (in `folder`, or `folder` itself) and, with `lock`, holds an
    exclusive lock on `folder + ".lock"` until the block ends, so two checks never share one of the
    gate's folders.

    Raises:
        GateError: (exit 1) naming `what` when the folder or its lock file cannot be made.
    """
    try:
        os.makedirs(inner, exist_ok=True)
        fd = os.open(folder + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600) if lock else -1
    except OSError as exc:
        raise GateError(f"cannot make {what} {inner}: {exc.strerror or exc}") from None
    try:
        if lock:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if lock:
            os.close(fd)


def link_local_paths(tree: str, repo: str, folder: str) -> None:
    """Makes each local path the tree's WORKSPACE, MODULE.bazel or .bazelrc names relative to its
    root, and that points outside it (`local_paths.outside`, a sibling checkout such as
    `../oracle-gate`), lead from `tree` where it leads from `repo`: a symlink at that place in
    `folder` (replaced on every check). A path that would leave `folder` is left alone: the build
    then fails to find it, exit 1 naming the repository.

    Raises:
        GateError: (exit 1) when a link cannot be made.
    """
    root = os.path.realpath(folder)
    for path in outside(local_paths(tree, os.path.realpath(repo)), tree, configs=None):
        seen = path.seen_at
        if path.host == seen or not seen.startswith(root + os.sep) or not os.path.exists(path.host):
            continue
        try:
            os.makedirs(os.path.dirname(seen), exist_ok=True)
            if os.path.islink(seen):
                os.unlink(seen)
            if not os.path.lexists(seen):
                os.symlink(path.host, seen)
        except OSError as exc:
            raise GateError(f"cannot link {seen} to {path.host} ({path.describe()}): {exc.strerror or exc}") from None
