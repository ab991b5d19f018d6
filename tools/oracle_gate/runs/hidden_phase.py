"""The hidden phase of `check --clean`: the rows' hidden samples, run where nothing of the change's
harness runs and no expected value exists (docs/design.md section 10, "The hidden phase").

It starts after the workspace run and the clean run have ended and their Bazel servers have stopped.
A fresh run folder gets a pristine tree written again from git objects, the hidden inputs view the
gate split from the hidden blobs in its own process (`hidden.views`) at `schema.HIDDEN_INPUTS`, and
a fresh output root and home; a sealed root (sealed_root.py) shows only that folder and the system
directories. Its one invocation, `bazel build` of the hidden callers (tag `oracle_hidden_observations`)
in `//oracles/...`, builds the suites' pin checks and the production targets the protected
`oracle_test` names, and runs each hidden caller in Bazel's Linux sandbox; nothing of `harness/` is
built. Bazel's output is never shown. The gate then reads the hidden observations, refusing a link
or any file it did not expect where the phase writes, and removes the folder before the report is
printed. The expectations stay in the gate's process (check/hidden.py judges them).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.pristine import pristine_tree
from tools.oracle_gate.runs.bazel_run import HIDDEN_TAG, confined_flags
from tools.oracle_gate.runs.events import Invocation
from tools.oracle_gate.runs.execlog import read_spawns, unconfined
from tools.oracle_gate.runs.flags import ORACLE_PATTERN, config_flags, execution_log_flags, lockfile_flags, run_flags
from tools.oracle_gate.runs.launch import SealedLauncher
from tools.oracle_gate.runs.sealed_session import sealed_session
from tools.oracle_gate.spec.schema import HIDDEN_DIR, HIDDEN_INPUTS

# What the hidden callers write in the oracles package of bazel-bin (oracle_test.bzl: the rule's
# name is `<test>.hidden_observations`, its observations `<name>.json`).
OBSERVATIONS_SUFFIX = ".hidden_observations.json"
# A hidden observations file larger than this is refused (the supervisor keeps a reply to 64 MiB a row).
MAX_OBSERVATIONS_BYTES = 1 << 30
# The only entries the pin checks and the rule write in `bin/oracles/_hidden` (oracle_suite.bzl).
_HIDDEN_VIEW_SUFFIXES = (".inputs.json", ".generated.json")


@dataclass
class HiddenRun:
    """What the hidden phase gave.

    Attributes:
        observations: the parsed observations document of each hidden caller (one per oracle test
            target), or None when the phase did not run to its end (every delivered row fails).
        planted: why the gate refused what it found where the phase writes (a link, a file it did
            not expect, its inputs view changed), naming a path and never a sample; "" when nothing.
        escaped: descriptions of spawns that ran unsandboxed.
        boundary: what stood between the phase's Bazel and the host (`SealedRoot.description`).
        summary: Bazel's process summary lines.
    """

    observations: list[Any] | None = None
    planted: str = ""
    escaped: list[str] = field(default_factory=list)
    boundary: str = ""
    summary: list[str] = field(default_factory=list)


def hidden_phase(
    repo: str,
    head: str,
    oracles_commit: str,
    inputs_view: Mapping[str, Any],
    environ: Mapping[str, str],
    *,
    guarded: Sequence[str] = (),
) -> HiddenRun:
    """Runs the hidden callers on `inputs_view` in a fresh sealed root and returns their observations.

    Args:
        repo: the repository (only its git objects are read).
        head: the judged commit, whose production code is run.
        oracles_commit: the commit whose `oracles/` is used (the claims in force).
        inputs_view: the hidden inputs view (`hidden.views`): inputs only, never an expected value.
        environ: the gate's environment (pip's settings, the Bazel binary and configs, the cache).
        guarded: further host paths the root must not show (the hidden store, the other runs' paths).

    Raises:
        GateError: (exit 1) when the tree cannot be written, the root cannot be made, Bazel cannot
            run or could not set the phase up (an external repository, a toolchain): never a failure
            of the change, and never a message that quotes a sample.
    """
    written: list[bytes] = []

    def fill(tree: str) -> None:
        pristine_tree(repo, head, oracles_commit, tree)
        written.append(write_inputs(tree, inputs_view))

    with sealed_session(repo, environ, "hidden-", fill, guarded) as session:
        return _invoke(session.launcher, environ, session.root, session.tree, written[0])


def write_inputs(tree: str, view: Mapping[str, Any]) -> bytes:
    """Writes the hidden inputs view at `schema.HIDDEN_INPUTS` in the pristine `tree`, refusing a
    link or an existing entry on the way (the tree is the base's `oracles/`, which no commit may
    fill there); returns the bytes written.

    Raises:
        GateError: (exit 1) when the folder or file cannot be made as a new regular file.
    """
    data = (json.dumps(view, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
    folder = tree
    for part in HIDDEN_DIR.split("/"):
        folder = os.path.join(folder, part)
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            os.mkdir(folder, 0o755)
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise GateError(
                f"the hidden phase's tree holds {os.path.relpath(folder, tree)} as a link or file; "
                "its hidden inputs cannot be written there"
            )
    target = os.path.join(tree, *HIDDEN_INPUTS.split("/"))
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    except OSError as exc:
        raise GateError(f"cannot write the hidden inputs view into the hidden phase's tree: {exc.strerror}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return data


def _invoke(launcher: SealedLauncher, environ: Mapping[str, str], root: str, tree: str, written: bytes) -> HiddenRun:
    """The phase's commands through `launcher`: `help`, `info`, the one quiet `bazel build`; then
    what it left (`read_observations`)."""
    help_text = launcher.help_test()
    extra = [
        *config_flags(environ),
        *lockfile_flags(help_text),
        "--noremote_accept_cached",
        "--incompatible_strict_action_env",
        *run_flags("", "clean", ()),
    ]
    info = launcher.info(extra, "bazel-bin")
    logs = os.path.join(root, "logs")
    os.makedirs(logs)
    tmp = os.path.join(root, "tmp")
    os.makedirs(tmp)
    files = (os.path.join(logs, "hidden.events.json"), os.path.join(logs, "hidden.spawns.bin"))
    invocation: Invocation = launcher.invoke(
        "build",
        [*confined_flags(extra, "linux-sandbox"), f"--build_tag_filters={HIDDEN_TAG}"],
        [ORACLE_PATTERN],
        files,
        lambda path: execution_log_flags(help_text, path),
        tmp,
        quiet=True,
    )
    out = HiddenRun(
        boundary=launcher.boundary,
        summary=invocation.summary,
        escaped=[e.describe() for e in unconfined(read_spawns(invocation.spawn_log))],
    )
    if invocation.exit_code == 1:
        if invocation.failure is not None and invocation.failure.setup:
            raise GateError(
                "the hidden phase could not be set up (an external repository, a toolchain, or Bazel "
                "ending early); its output is not shown"
            )
        return out
    out.planted = planted(tree, written, info["bazel-bin"])
    if not out.planted and not out.escaped:
        out.observations, out.planted = read_observations(info["bazel-bin"])
    return out


def planted(tree: str, written: bytes, bazel_bin: str) -> str:
    """Why what the phase left where it writes is not what the gate expects, or "": the tree's
    hidden folder must hold the gate's inputs view alone, unchanged, as a regular file; the hidden
    views folder of bazel-bin only the suites' `.inputs.json` and `.generated.json` regular files.
    Names a path, never a sample. Raises nothing."""
    folder = os.path.join(tree, *HIDDEN_DIR.split("/"))
    names = entries(folder)
    if names != [os.path.basename(HIDDEN_INPUTS)]:
        return (
            f"{HIDDEN_DIR}/ of the phase's tree holds {', '.join(names) or 'nothing'}, not the gate's inputs view alone"
        )
    target = os.path.join(tree, *HIDDEN_INPUTS.split("/"))
    if read_regular(target, len(written) + 1) != written:
        return f"{HIDDEN_INPUTS} of the phase's tree is not the file the gate wrote"
    views = os.path.join(bazel_bin, "oracles", "_hidden")
    for name in entries(views):
        path = os.path.join(views, name)
        if not name.endswith(_HIDDEN_VIEW_SUFFIXES) or not stat.S_ISREG(os.lstat(path).st_mode):
            return f"bazel-bin/oracles/_hidden/{name} is not a hidden view the gate's actions write"
    for path in (bazel_bin, os.path.join(bazel_bin, "oracles")):
        if os.path.islink(path):
            return f"{path} is a link"
    return ""


def read_observations(bazel_bin: str) -> tuple[list[Any] | None, str]:
    """(the parsed hidden observations documents in `bazel_bin/oracles`, why they were refused or "").
    Each must be a regular file (never followed through a link) no larger than
    MAX_OBSERVATIONS_BYTES; one that does not parse as JSON is kept as None (its rows fail).
    Raises nothing."""
    folder = os.path.join(bazel_bin, "oracles")
    found: list[Any] = []
    for name in entries(folder):
        if not name.endswith(OBSERVATIONS_SUFFIX):
            continue
        data = read_regular(os.path.join(folder, name), MAX_OBSERVATIONS_BYTES)
        if data is None:
            return None, f"bazel-bin/oracles/{name} is not a regular file within {MAX_OBSERVATIONS_BYTES} bytes"
        try:
            found.append(json.loads(data))
        except ValueError:
            found.append(None)
    return found, ""


def entries(folder: str) -> list[str]:
    """The sorted names in `folder`, or [] when it does not exist."""
    try:
        return sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        return ["(not a folder)"]


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file `path` (opened without following a link), or None when it is
    not one, cannot be read, or holds more than `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None
