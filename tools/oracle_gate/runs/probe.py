"""The probe: one commit's production entries called on samples the gate chose, in a sealed root,
with nothing of the work tree or of another commit in reach (docs/design.md section 10, "The probe").

`record` observes the approved code with it, and `check`'s behaviour phase observes the base tip and
the merge result on the same samples (docs/oracles.md, "Recording expected values", "Behaviour
kept", "The behaviour diff"). A run folder (fresh, or for the base tip check's kept one:
sealed_session.py) gets a tree written from the commit's git objects
(dotenv files left out), whose `oracles/` is replaced whole by the files the gate gives (the probe's
rows and blobs, the owners' BUILD file and policy); a sealed root (sealed_root.py) shows only that
folder and the system directories, and one `bazel build` of the caller actions (tag
`oracle_observations`) in `//oracles/...` runs each row through the gate's own supervisor and caller
in Bazel's Linux sandbox, with every limit of a row run. No judge, no harness and no reference runs.
The gate reads the observations (a link or an oversized file is refused) and removes a fresh folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.pristine import is_dotenv, sync_tree
from tools.oracle_gate.git.tree import GitTree
from tools.oracle_gate.runs.bazel_run import OBSERVATIONS_TAG, confined_flags
from tools.oracle_gate.runs.execlog import read_spawns, unconfined
from tools.oracle_gate.runs.flags import ORACLE_PATTERN, config_flags, execution_log_flags, lockfile_flags, run_flags
from tools.oracle_gate.runs.hidden_phase import MAX_OBSERVATIONS_BYTES, entries, read_regular
from tools.oracle_gate.runs.launch import SealedLauncher
from tools.oracle_gate.runs.sealed_session import kept_session, sealed_session

# What a caller action writes in the oracles package of bazel-bin (oracle_test.bzl: `<test>.observations.json`).
OBSERVATIONS_SUFFIX = ".observations.json"
HIDDEN_SUFFIX = ".hidden_observations.json"
# A Python source file: never taken from anywhere but the probed commit (`extra` refuses it).
PYTHON_SUFFIXES = (".py", ".pyi", ".pth", ".so")


def probe(
    repo: str,
    commit: str,
    oracles: Mapping[str, bytes],
    environ: Mapping[str, str],
    *,
    extra: Mapping[str, bytes] | None = None,
    guarded: Sequence[str] = (),
    kept_as: str = "",
) -> dict[str, Any]:
    """Runs the caller actions of `oracles` on `commit`'s production code in a sealed root: a fresh
    one, or with `kept_as` the kept one of that name (sealed_session.py `kept_session`).

    Args:
        repo: the repository (only its git objects are read).
        commit: the commit whose production code, BUILD files and lock are used.
        oracles: repository-relative path -> bytes of every file of `oracles/` the tree gets (the
            commit's own `oracles/` is left out whole).
        environ: the gate's environment (pip's settings, the Bazel binary and configs, the cache).
        extra: files the commit lacks that the tree gets (build files `init` writes, read from the
            work tree by `record`); never a Python source, never a path the commit holds.
        guarded: further host paths the root must not show (a fresh root only).
        kept_as: the kept folder's name (`probe-base`: check's behaviour phase, for the base tip
            only, whose root never runs a change's code), or "" for a fresh root removed at the
            end (`record`, the judged commit's probe).

    Returns:
        row id -> the caller's reply for that row (`{"id", "results": [...]}` or `{"id", "error"}`),
        parsed; a row no caller action ran is absent.

    Raises:
        GateError: (exit 1) when the tree cannot be written, the root cannot be made, Bazel cannot
            run, the build fails, or a spawn ran outside Bazel's sandbox; with `kept_as`, also
            when `extra` or `guarded` is given (a kept root shows the same paths every time).
    """

    def fill(tree: str) -> None:
        write_probe_tree(repo, commit, oracles, extra or {}, tree)

    if kept_as:
        if extra or guarded:
            raise GateError("a kept probe root takes neither extra files nor guarded paths")
        with kept_session(repo, environ, kept_as, fill) as session:
            return _invoke(session.launcher, environ, session.root)
    with sealed_session(repo, environ, "probe-", fill, guarded) as session:
        return _invoke(session.launcher, environ, session.root)


def write_probe_tree(
    repo: str, commit: str, oracles: Mapping[str, bytes], extra: Mapping[str, bytes], tree: str
) -> None:
    """Makes the folder `tree` hold `commit`'s committed files (without `oracles/` and dotenv
    files), then `oracles` and `extra` as regular files, and nothing else (`pristine.sync_tree`: in
    a kept root, the files an earlier probe's tree had alike stay as they are, so its Bazel server
    keeps what it loaded and analysed).

    Raises:
        GateError: (exit 1) when `commit` cannot be read, a path is unsafe, an `oracles` path lies
            outside `oracles/`, or an `extra` path is a Python source or one the commit holds.
    """
    listing = {
        p: e for p, e in GitTree(repo, commit).files("").items() if not p.startswith("oracles/") and not is_dotenv(p)
    }
    for path in extra:
        if path.endswith(PYTHON_SUFFIXES) or path in listing or path.startswith("oracles/"):
            raise GateError(f"the probe of {commit[:12]} takes only build files the commit lacks, not {path}")
    for path in oracles:
        if not path.startswith("oracles/"):
            raise GateError(f"the probe's oracle files must lie under oracles/, not {path}")
    sync_tree(repo, tree, listing, {**oracles, **extra})


def _invoke(launcher: SealedLauncher, environ: Mapping[str, str], root: str) -> dict[str, Any]:
    """The probe's commands through `launcher`: `help`, `info`, one `bazel build` of the
    caller actions; then their observations (`read_replies`)."""
    help_text = launcher.help_test()
    extra = [
        *config_flags(environ),
        *lockfile_flags(help_text),
        "--noremote_accept_cached",
        "--incompatible_strict_action_env",
        *run_flags("", "clean", ()),
    ]
    info = launcher.info(extra, "bazel-bin")
    forget_observations(info["bazel-bin"])
    logs, tmp = os.path.join(root, "logs"), os.path.join(root, "tmp")
    os.makedirs(logs)
    os.makedirs(tmp)
    files = (os.path.join(logs, "probe.events.json"), os.path.join(logs, "probe.spawns.bin"))
    invocation = launcher.invoke(
        "build",
        [*confined_flags(extra, "linux-sandbox"), f"--build_tag_filters={OBSERVATIONS_TAG}"],
        [ORACLE_PATTERN],
        files,
        lambda path: execution_log_flags(help_text, path),
        tmp,
    )
    escaped = [e.describe() for e in unconfined(read_spawns(invocation.spawn_log))]
    if escaped:
        raise GateError(f"the probe refused its results: a spawn ran outside Bazel's sandbox: {escaped[0]}")
    if invocation.exit_code != 0:
        detail = invocation.failure.line() if invocation.failure is not None else f"exit {invocation.exit_code}"
        raise GateError(
            f"the probe's build failed ({detail}); run `bazel build //oracles/...` at that commit to see why"
        )
    return read_replies(info["bazel-bin"])


def forget_observations(bazel_bin: str) -> None:
    """Removes every observations file an earlier probe in the same output base left in
    `bazel_bin/oracles` (a kept root's), so that the replies read after the build are this build's:
    a suite the tree no longer has leaves no file behind, and Bazel runs again a caller action whose
    output is gone.

    Raises:
        GateError: (exit 1) when a file cannot be removed.
    """
    folder = os.path.join(bazel_bin, "oracles")
    for name in entries(folder):
        if name.endswith(OBSERVATIONS_SUFFIX):
            try:
                os.unlink(os.path.join(folder, name))
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise GateError(f"cannot remove an earlier probe's {name}: {exc.strerror or exc}") from None


def read_replies(bazel_bin: str) -> dict[str, Any]:
    """row id -> parsed reply, from every visible caller's observations file in `bazel_bin/oracles`.

    Raises:
        GateError: (exit 1) when a file is a link, oversized or not JSON of the observations shape.
    """
    folder = os.path.join(bazel_bin, "oracles")
    replies: dict[str, Any] = {}
    for name in entries(folder):
        if not name.endswith(OBSERVATIONS_SUFFIX) or name.endswith(HIDDEN_SUFFIX):
            continue
        data = read_regular(os.path.join(folder, name), MAX_OBSERVATIONS_BYTES)
        refused = GateError(f"the probe's bazel-bin/oracles/{name} is not an observations file the caller writes")
        try:
            rows = json.loads(data)["rows"] if data is not None else None
            parsed = [json.loads(row) if type(row) is str else row for row in rows] if type(rows) is list else None
        except (ValueError, KeyError, TypeError, RecursionError):
            parsed = None
        if parsed is None:
            raise refused
        for reply in parsed:
            if type(reply) is dict and type(reply.get("id")) is str:
                replies[reply["id"]] = reply
    return replies
