"""One sealed session on a tree the gate writes: the folder, the tree, the sealed root and the
Bazel launcher inside it (docs/design.md section 10, "The probe", "The hidden phase").

`sealed_session` makes everything anew and removes it whole at the end (the hidden phase, whose
inputs no later run may find, `record`'s probe, and the judged commit's probe in the behaviour
phase, whose code must find nothing an earlier change left). `kept_session` keeps the folder, the
root and its Bazel server for the next session of the same name and repository (kept_root.py), the
tree made exact each time (files alike left in place, so the server keeps its analysis): the
behaviour phase's probe of the base tip, which holds no expected value and never runs a change's
code.

The hidden phase and the probe both run one commit's code on inputs the gate wrote, never on the
work tree: a fresh folder under the runs directory holds `tree` (filled by the caller), `home` and
Bazel's output root; the sealed root (sealed_root.py) shows that folder and the system directories,
hides the repository, its blocks and the caller's `guarded` paths, and shows the local paths the
tree's Bazel files name (local_paths.py).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from tools.oracle_gate.git.pristine import remove_folder
from tools.oracle_gate.runs.blocks import path_folder, repository_blocks, runs_dir
from tools.oracle_gate.runs.clean_run import clean_environment
from tools.oracle_gate.runs.flags import config_flags, own_server_startup
from tools.oracle_gate.runs.kept_root import KeptRoot
from tools.oracle_gate.runs.launch import SealedLauncher, session_launcher
from tools.oracle_gate.runs.local_paths import local_paths, outside
from tools.oracle_gate.runs.merged_tree import locked_folder
from tools.oracle_gate.runs.sealed_root import READ_ONLY_VARIABLE, SealedRoot, sealed_root


@dataclass(frozen=True)
class Session:
    """A running sealed session.

    Attributes:
        launcher: runs Bazel commands inside the sealed root, on `tree`.
        root: an empty folder of this session's own, inside the root (logs and temporary files go there).
        tree: the tree the caller wrote.
    """

    launcher: SealedLauncher
    root: str
    tree: str


@contextmanager
def sealed_session(
    repo: str, environ: Mapping[str, str], prefix: str, fill: Callable[[str], None], guarded: Sequence[str] = ()
) -> Iterator[Session]:
    """A fresh sealed session whose tree `fill` wrote; everything is removed when it ends.

    Args:
        repo: the repository (hidden in the root, with its blocks).
        environ: the gate's environment (pip's settings, the Bazel binary and configs, the cache).
        prefix: the session folder's name prefix (`probe-`, `hidden-`).
        fill: writes the tree into the empty folder it is given, before the root is made.
        guarded: further host paths the root must not show.

    Raises:
        GateError: (exit 1) from `fill`, the root or the launcher.
    """
    root = tempfile.mkdtemp(prefix=prefix, dir=runs_dir(environ))
    try:
        tree, home = os.path.join(root, "tree"), os.path.join(root, "home")
        os.makedirs(tree)
        os.makedirs(home)
        fill(tree)
        seal, env = _root(repo, environ, root, tree, home, guarded)
        with session_launcher(seal, tree, env, own_server_startup(root)) as launcher:
            yield Session(launcher, root, tree)
    finally:
        remove_folder(root, strict=False)


@contextmanager
def kept_session(repo: str, environ: Mapping[str, str], name: str, fill: Callable[[str], None]) -> Iterator[Session]:
    """A session in the kept folder `RUNS/<name>-<16 hex digits of the sha256 of the repository's
    real path>`, holding its lock: the tree made exact by `fill`, the sealed root and its
    Bazel server those the last session of that folder left running when its key is the same
    (kept_root.py), else started anew. `Session.root` is the folder's `run/`, made empty.

    A session that raises ends the root and removes the output user root, as does the start of one
    after a session that did not end normally (the gate was killed): nothing an action left in an
    output base or a process is found by the next. The folder never holds an expected value: the
    caller gives it inputs only (docs/design.md section 10, "The probe").

    Args:
        repo: the repository (hidden in the root, with its blocks).
        environ: the gate's environment.
        name: the folder's name before the key (`probe-base`): one folder, root and server per
            name, never shared between names. Never give a kept session a change's code to run.
        fill: makes the folder it is given hold the tree and nothing else, whatever an earlier
            session left there (`pristine.sync_tree`), before the root is made.

    Raises:
        GateError: (exit 1) when the folder cannot be made, locked or emptied, from `fill`, the
            root or the launcher.
    """
    folder = path_folder(f"{name}-", repo, environ)
    tree, home, scratch = (os.path.join(folder, part) for part in ("tree", "home", "run"))
    output_root = os.path.join(folder, "bazel")
    kept = KeptRoot(folder)
    with locked_folder(folder, tree, "the probe's folder"):
        os.makedirs(home, exist_ok=True)
        if kept.unclean():
            kept.end()
            remove_folder(output_root, strict=False)
        if os.path.lexists(scratch):
            remove_folder(scratch, strict=False)
        os.makedirs(scratch)
        try:
            fill(tree)
            seal, env = _root(repo, environ, folder, tree, home, ())
            with kept.session(seal, tree, env) as session:
                startup = tuple(own_server_startup(folder))
                yield Session(SealedLauncher(tree, env, startup, root=seal, session=session), scratch, tree)
        except BaseException:
            kept.end()
            remove_folder(output_root, strict=False)
            raise


def _root(
    repo: str, environ: Mapping[str, str], folder: str, tree: str, home: str, guarded: Sequence[str]
) -> tuple[SealedRoot, dict[str, str]]:
    """The sealed root showing `folder` (its `tree` written), and the whole environment of its Bazel."""
    env = clean_environment(environ, home)
    named = {k: environ[k] for k in (READ_ONLY_VARIABLE,) if environ.get(k)}
    configs = [flag.split("=", 1)[1] for flag in config_flags(environ)]
    local = outside(local_paths(tree, os.path.realpath(repo)), tree, configs)
    seal = sealed_root(folder, dict(env, **named), [os.path.realpath(repo), *repository_blocks(repo), *guarded], local)
    return seal, env
