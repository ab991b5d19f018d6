"""The clean second runner: the oracle test and the harness on a pristine tree the work tree never touched.

The tree is written from git objects (HEAD's code and harness, the base's `oracles/`), then tested
inside a sealed root (sealed_root.py: bubblewrap; only the run's folder and the system directories exist
there), with a fresh Bazel output root, `--nohome_rc` (no user `~/.bazelrc`), a minimal environment,
sandboxed or remote execution, `--nocache_test_results` and `--noremote_accept_cached`, the same salt
as the workspace run and `--define=oracle_run=clean` (the caller's time zone, locale and hash seed
differ from the workspace run's). Outcomes or observation digests that differ from the workspace
run mean production code or the harness depends on something outside its declared inputs (an
undeclared file, an environment variable, a file never committed, the clock, the time zone).
What the clean run seals and how its digests must agree: docs/design.md sections 9 and 10.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from tools.oracle_gate.git.pristine import pristine_tree, remove_folder
from tools.oracle_gate.runs.bazel_binary import BAZEL_VARIABLE
from tools.oracle_gate.runs.bazel_run import BazelRun, RunSpec, run_bazel
from tools.oracle_gate.runs.blocks import repository_blocks, runs_dir
from tools.oracle_gate.runs.flags import BAZEL_CONFIG_ENV, config_flags, own_server_startup, run_flags
from tools.oracle_gate.runs.local_paths import LocalPath, local_paths, outside
from tools.oracle_gate.runs.sealed_root import READ_ONLY_VARIABLE, SealedRoot, sealed_root

# Environment variables a clean run keeps: what pip needs to find the locked wheels, and which
# .bazelrc configs and Bazel binary the caller chose.
_PASS_THROUGH = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_CERT",
    "PIP_CONSTRAINT",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_TRUSTED_HOST",
    "PIP_CONFIG_FILE",
    BAZEL_CONFIG_ENV,
    BAZEL_VARIABLE,
)
# Remote settings, from flags or these variables (docs/remote-execution.md).
REMOTE_ENV = {
    "ORACLE_GATE_REMOTE_EXECUTOR": "--remote_executor",
    "ORACLE_GATE_REMOTE_CACHE": "--remote_cache",
    "ORACLE_GATE_REMOTE_INSTANCE_NAME": "--remote_instance_name",
    "ORACLE_GATE_REMOTE_TLS_CERTIFICATE": "--tls_certificate",
}
REMOTE_HEADER_ENV = "ORACLE_GATE_REMOTE_HEADER"  # newline-separated `Name=value` pairs


def remote_flags(environ: Mapping[str, str]) -> list[str]:
    """Bazel flags for `--config=remote`: the config, then endpoint, instance name and headers from
    the environment (REMOTE_ENV, REMOTE_HEADER_ENV)."""
    flags = ["--config=remote"]
    for var, flag in REMOTE_ENV.items():
        if environ.get(var):
            flags.append(f"{flag}={environ[var]}")
    for header in environ.get(REMOTE_HEADER_ENV, "").splitlines():
        if header.strip():
            flags.append(f"--remote_header={header.strip()}")
    return flags


def clean_environment(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The whole environment of the clean run: a fixed PATH, a fresh HOME and TMPDIR, C.UTF-8."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"}
    env.update({k: environ[k] for k in _PASS_THROUGH if k in environ})
    return env


def clean_run(
    repo: str,
    head: str,
    oracles_commit: str,
    environ: Mapping[str, str],
    remote: bool = False,
    salt: str = "",
    block: Sequence[str] | None = None,
    salted: Collection[str] | None = None,
) -> BazelRun:
    """Runs the harness on a pristine tree and returns its per-id outcomes.

    Args:
        repo: the repository (only its git objects are read).
        head: commit whose code and harness are tested.
        oracles_commit: commit whose `oracles/` is used.
        environ: the caller's environment; only pip's variables and the remote settings are used.
        remote: run through `--config=remote` (REAPI), the endpoint from the environment (`remote_flags`).
        salt, salted: the run salt (the workspace run's) and the files whose suites get it (`run_flags`).
        block: paths the workspace run blocked (default: `repository_blocks(repo)`); the sealed root
            does not show them (sealed_root.sealed_root). Inside it, the pristine tree's `oracles/` and
            the fresh output base's judge's views are blocked from sandboxed actions.

    Raises:
        GateError: (exit 1) when the tree cannot be written, the sealed root cannot be made, or Bazel cannot run.
    """
    # Not under /tmp: Bazel 4.2's sandbox lets every action write there.
    root = tempfile.mkdtemp(prefix="clean-", dir=runs_dir(environ))
    try:
        tree, home = os.path.join(root, "tree"), os.path.join(root, "home")
        os.makedirs(tree)
        os.makedirs(home, exist_ok=True)
        pristine_tree(repo, head, oracles_commit, tree)
        startup, flags = _bazel_flags(root, environ, remote, salt, salted)
        env = clean_environment(environ, home)
        root_sealed = _clean_sealed_root(root, tree, repo, environ, env, block)
        run = run_bazel(
            tree,
            env,
            RunSpec(
                flags=flags,
                startup_flags=startup,
                exact_env=True,
                block=[os.path.join(tree, "oracles"), *root_sealed.blockable],
                strategy="remote" if remote else "linux-sandbox",
                sealed_root=root_sealed,
                one_server=True,
            ),
        )
        return _remotely_sealed(run) if remote else run
    finally:
        remove_folder(root, strict=False)


def _bazel_flags(
    root: str, environ: Mapping[str, str], remote: bool, salt: str, salted: Collection[str] | None
) -> tuple[list[str], list[str]]:
    """(startup flags, command flags) of the clean run's Bazel, its output user root in `root`."""
    # One Bazel server for the run (`one_server`), its output user root in `root`, removed by `clean_run`.
    startup = own_server_startup(root)
    flags = [
        "--nocache_test_results",
        "--noremote_accept_cached",
        "--incompatible_strict_action_env",
        *run_flags(salt, "clean", salted),
    ]
    if remote:
        flags += remote_flags(environ)
    return startup, flags


def _clean_sealed_root(
    root: str,
    tree: str,
    repo: str,
    environ: Mapping[str, str],
    env: Mapping[str, str],
    block: Sequence[str] | None,
) -> SealedRoot:
    """The sealed root of the clean run in `root`, hiding the repository and the paths the workspace
    run blocked, and showing the tree's local repositories."""
    hidden = [os.path.realpath(repo), *repository_blocks(repo), *(block or ())]
    # The remote settings' files (a TLS certificate) and the folders the user names must be
    # readable inside the root too.
    named = {k: environ[k] for k in (*REMOTE_ENV, READ_ONLY_VARIABLE) if environ.get(k)}
    local = local_outside(tree, repo, environ)
    return sealed_root(root, dict(env, **named), hidden, local)


def local_outside(tree: str, repo: str, environ: Mapping[str, str]) -> list[LocalPath]:
    """The local repositories of `tree`'s committed WORKSPACE, MODULE.bazel and .bazelrc (with the
    configs `environ` selects) that lie outside it, resolved against `repo`'s real path."""
    configs = [flag.split("=", 1)[1] for flag in config_flags(environ)]
    return outside(local_paths(tree, os.path.realpath(repo)), tree, configs)


def _remotely_sealed(run: BazelRun) -> BazelRun:
    """`run` whose boundary says that its actions ran by remote execution."""
    # The actions ran on the engine's workers: what confines them there is the engine's
    # locked-down worker.
    return replace(
        run,
        boundary=f"{run.boundary}; every action ran by remote execution, sealed by the "
        "engine's worker (docs/remote-execution.md)",
    )
