"""The workspace run's sealed root: its Bazel server, and everything that server runs, see the tree
under test, one persistent folder of the gate and the system directories, nothing else of the host
(docs/design.md section 10).

Bazel's server runs outside its sandbox: it collects an action's declared outputs as its own user,
following a symlinked output folder anywhere it can reach. So what a change must not read must not
exist where the workspace run's server runs: not the hidden store, not another clone, not the
gate's cache, not the CI user's home or credentials. The root (sealed_root.py) shows:

- the tree under test read-only at its own path: the work tree, with its git directories masked by
  an empty tmpfs, or the gate's checkout of the merge result (merged_tree.py), which lies in the
  persistent folder;
- the persistent folder `RUNS/workspace-<key>` (or the merge result's folder), read-write: the
  output user root and home, so the next `check` of the same tree finds its output base warm;
  the root itself, with its Bazel server, is kept for that next check (kept_root.py);
- the system directories, pip's local paths, `$ORACLE_GATE_SEAL_READ_ONLY` and the local
  repositories the tree names outside itself, read-only; a private `/tmp`, `/dev`, pid namespace.

Where bubblewrap cannot make the root (no user namespaces), the run is refused (exit 1) unless the
caller asks for an unsealed workspace run (`check --unsealed-workspace`), which runs Bazel on the
host as before the seal; the report's first line then says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.git.pristine import remove_folder
from tools.oracle_gate.runs import blocks
from tools.oracle_gate.runs.blocks import path_folder
from tools.oracle_gate.runs.clean_run import clean_environment, local_outside
from tools.oracle_gate.runs.flags import own_server_startup
from tools.oracle_gate.runs.kept_root import KeptRoot
from tools.oracle_gate.runs.merged_tree import locked_folder
from tools.oracle_gate.runs.sealed_root import READ_ONLY_VARIABLE, SealedRoot, inside, sealed_root

_PREFIX = "workspace-"
# The report's words for a workspace run the caller let run without the root (`--unsealed-workspace`).
UNSEALED = (
    "UNSEALED (--unsealed-workspace): Bazel's server ran on the host, where it can reach every file of the "
    "CI user (docs/threat-model.md)"
)


@dataclass(frozen=True)
class WorkspaceSeal:
    """How one workspace run is sealed.

    Attributes:
        root: the sealed root, or None when the run goes on unsealed (`unsealed` says why).
        env: the whole environment of the run's Bazel (a fresh home in the folder, a fixed PATH,
            pip's and the gate's Bazel settings: `clean_run.clean_environment`).
        startup: Bazel's startup flags: the output user root in the folder, no home `.bazelrc`.
        output_root: the output user root in the folder (removed after a run that left a trace of
            an output collected through a symlinked folder: collection.py).
        unsealed: the report's line for an unsealed run, else "".
        kept: the kept root the run's session runs in (kept_root.py), None when unsealed.
    """

    root: SealedRoot | None
    env: Mapping[str, str]
    startup: tuple[str, ...]
    output_root: str
    unsealed: str = ""
    kept: KeptRoot | None = None

    def discard(self) -> None:
        """Ends the kept root (if any) and removes the output user root, so that nothing the
        change's actions left (a link in the output tree, a file taken through output collection)
        is in a server or an output base a later check reuses."""
        if self.kept is not None:
            self.kept.end()
        remove_folder(self.output_root, strict=False)


def workspace_folder(tree: str, environ: Mapping[str, str]) -> str:
    """The persistent folder of the workspace run of `tree`: `RUNS/workspace-<16 hex digits of the
    sha256 of the tree's real path>` (`blocks.runs_dir`).

    Raises:
        GateError: (exit 1) when the run folder is unusable (`blocks.runs_dir`).
    """
    return path_folder(_PREFIX, tree, environ)


@contextmanager
def workspace_seal(
    tree: str,
    repo: str,
    folder: str | None,
    environ: Mapping[str, str],
    guarded: Sequence[str],
    *,
    accept_unsealed: bool = False,
) -> Iterator[WorkspaceSeal]:
    """Makes the sealed root of the workspace run of `tree` and yields it, holding the folder's lock.

    Args:
        tree: the tree under test: the work tree of `repo`, or the merge result's checkout.
        repo: the repository (its local paths are resolved against its real path).
        folder: the persistent folder when the tree lies in one of the gate's (the merge result's
            folder), or None for the work tree's own (`workspace_folder`).
        environ: the gate's environment.
        guarded: host paths the root must not show (the git directories, the hidden store, ...);
            one that lies in the tree is masked by an empty tmpfs.
        accept_unsealed: make no root: yield an unsealed seal (`root` None, `unsealed` the
            report's line), for a host where bubblewrap cannot make one.

    Raises:
        UsageError: (exit 1) when the tree lies under `/tmp` or `/dev/shm` (`blocks.SANDBOX_WRITABLE`),
            sealed or not: every action of the change could write the tree there.
        GateError: (exit 1) when the folder cannot be made or locked, a local path does not exist,
            or bubblewrap cannot make the root (the message names `--unsealed-workspace`).
    """
    own = folder or workspace_folder(tree, environ)
    real_tree = os.path.realpath(tree)
    _refuse_sandbox_writable(tree, real_tree)
    if accept_unsealed:  # Bazel on the host, as the caller's own: no folder, no root
        yield WorkspaceSeal(None, dict(environ), (), os.path.join(own, "bazel"), UNSEALED)
        return
    home = os.path.join(own, "home")
    # The merge result's folder is locked already, by its checkout (merged_tree.py).
    with locked_folder(own, home, "the workspace run's folder", lock=folder is None):
        env = clean_environment(environ, home)
        startup = tuple(own_server_startup(own))
        named = _read_only_named(tree, real_tree, repo, own, environ)
        root = _workspace_root(own, dict(env, **named), guarded, real_tree)
        yield WorkspaceSeal(root, env, startup, os.path.join(own, "bazel"), kept=KeptRoot(own))


def _refuse_sandbox_writable(tree: str, real_tree: str) -> None:
    """Refuses a tree under a folder Bazel's sandbox leaves writable (`blocks.SANDBOX_WRITABLE`).

    Raises:
        UsageError: (exit 1) naming the folder.
    """
    for top in blocks.SANDBOX_WRITABLE:  # sealed or not: the change's actions could write the tree
        if inside(real_tree, top):
            raise UsageError(
                f"the tree {tree} lies under {top}, which Bazel's sandbox leaves writable to every "
                "action of the change (and which the sealed root replaces by a private folder); run "
                "the gate on a checkout elsewhere"
            )


def _read_only_named(tree: str, real_tree: str, repo: str, own: str, environ: Mapping[str, str]) -> dict[str, str]:
    """`$ORACLE_GATE_SEAL_READ_ONLY` for the root: the caller's, plus the tree's local repositories
    that lie neither in the tree (real path `real_tree`) nor in the folder `own`."""
    named = {k: environ[k] for k in (READ_ONLY_VARIABLE,) if environ.get(k)}
    local = local_outside(tree, repo, environ)
    extra = sorted({p.host for p in local if not inside(p.host, real_tree) and not inside(p.host, own)})
    if extra:
        named[READ_ONLY_VARIABLE] = ":".join([*named.values(), *extra])
    return named


def _workspace_root(own: str, environ: Mapping[str, str], guarded: Sequence[str], real_tree: str) -> SealedRoot:
    """The sealed root in the folder `own` (`environ`: the run's environment and its read-only
    names), showing the tree read-only when it lies outside `own`.

    Raises:
        GateError: (exit 1) as `sealed_root`; when bubblewrap cannot make the root, the message
            names `--unsealed-workspace`.
    """
    try:
        return sealed_root(
            own,
            environ,
            [g for g in guarded if not inside(os.path.realpath(g), own)],
            trees=[] if inside(real_tree, os.path.realpath(own)) else [real_tree],
        )
    except GateError as exc:
        if "bubblewrap cannot make" in str(exc) or "`bwrap` is not on PATH" in str(exc):
            raise GateError(
                f"the workspace run is sealed like the clean run, and {exc}; on a host without user "
                "namespaces pass --unsealed-workspace to run it on the host (docs/threat-model.md)"
            ) from None
        raise
