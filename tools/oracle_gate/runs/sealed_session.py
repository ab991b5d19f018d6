"""One sealed session on a fresh tree: the folder, the tree the gate writes, the sealed root and
the Bazel launcher inside it, removed whole at the end (docs/design.md section 10, "The probe",
"The hidden phase").

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

from tools.oracle_gate.runs.blocks import repository_blocks, runs_dir
from tools.oracle_gate.runs.clean_run import clean_environment, remove_tree
from tools.oracle_gate.runs.flags import config_flags
from tools.oracle_gate.runs.launch import SealedLauncher, session_launcher
from tools.oracle_gate.runs.local_paths import local_paths, outside
from tools.oracle_gate.runs.sealed_root import READ_ONLY_VARIABLE, sealed_root


@dataclass(frozen=True)
class Session:
    """A running sealed session.

    Attributes:
        launcher: runs Bazel commands inside the sealed root, on `tree`.
        root: the session's folder (logs and temporary files go under it).
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
        env = clean_environment(environ, home)
        named = {k: environ[k] for k in (READ_ONLY_VARIABLE,) if environ.get(k)}
        configs = [flag.split("=", 1)[1] for flag in config_flags(environ)]
        local = outside(local_paths(tree, os.path.realpath(repo)), tree, configs)
        seal = sealed_root(
            root, dict(env, **named), [os.path.realpath(repo), *repository_blocks(repo), *guarded], local
        )
        startup = ["--nohome_rc", f"--output_user_root={os.path.join(root, 'bazel')}"]
        with session_launcher(seal, tree, env, startup) as launcher:
            yield Session(launcher, root, tree)
    finally:
        remove_tree(root)
