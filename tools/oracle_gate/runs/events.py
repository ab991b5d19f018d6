"""Reading what Bazel ran: the Build Event Protocol file of an invocation (test statuses and
test.xml paths) and the oracle targets' observations in those test.xml files (docs/design.md
section 10). A test.xml is read only from this output base's test-log directory, and only the
ones the event file names, so a stale file left by an earlier build is never read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.flags import GATE_ACTIONS
from tools.oracle_gate.runs.results import FileResult, Observed, judge_target, read_result


@dataclass
class Invocation:
    """One `bazel` command of a run: its exit code, test statuses, test.xml paths, spawns, summary."""

    exit_code: int
    status: dict[str, str]
    xml: dict[str, list[str]]
    spawn_log: bytes
    summary: list[str]
    missing_mounts: list[str] = field(default_factory=list)
    failure: BuildFailure | None = None


@dataclass(frozen=True)
class BuildFailure:
    """Why an invocation that exited 1 failed, read from its Build Event Protocol file
    (`build_failure`).

    Attributes:
        setup: True when the failure is not the change's doing: an external repository that could not
            be fetched or loaded, or Bazel ending without a `buildFinished` event (it crashed or was
            killed). False for a failure of a target of the main repository.
        label: the root cause: `@NAME` for an external repository, a target label, or "" when the
            events name none.
        message: Bazel's first real error line for it (the last line of an aborted event's
            description, which for a repository rule is the error under the Starlark traceback, or a
            failed action's failure message), or "" when the events hold none.
    """

    setup: bool
    label: str
    message: str

    def line(self) -> str:
        """`LABEL: MESSAGE`, one line, for a report."""
        text = ": ".join(part for part in (self.label, self.message) if part)
        return text or "Bazel's events name no root cause; see its output"


ORACLE_LABEL_PREFIXES = ("//oracles:", "//oracles/", "@//oracles:", "@//oracles/")


def is_oracle_target(label: str) -> bool:
    """True for a target of the protected `oracles` package (or one of its subpackages)."""
    return label.startswith(ORACLE_LABEL_PREFIXES)


def _file_uri_path(uri: str) -> str:
    """The local path of a `file://` URI, or "" for a remote one (`bytestream://` under remote
    execution), whose local copy is found in the test-log directory instead."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme == "bytestream":
        return ""
    raise GateError(f"Bazel reported test.xml at {uri!r}, which is neither a local file nor a remote blob")


def junit_path_in_testlogs(testlogs: str, label: str) -> str:
    """The test.xml path of a (non-sharded) test target under Bazel's test-log directory.

    Raises:
        GateError: for a label outside the main repository.
    """
    if not label.startswith("//") or ":" not in label:
        raise GateError(f"cannot place the test log of {label!r}")
    package, name = label[2:].split(":", 1)
    return os.path.join(testlogs, package, name, "test.xml")


def parse_bep(lines: Sequence[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Reads a JSON Build Event Protocol file.

    Returns:
        (status, xml): label -> overall test status, and label -> paths of its test.xml files.
    """
    status: dict[str, str] = {}
    xml: dict[str, list[str]] = {}
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        ident = event.get("id", {})
        if "testResult" in ident and "testResult" in event:
            label = ident["testResult"]["label"]
            for out in event["testResult"].get("testActionOutput", []):
                if out.get("name") == "test.xml" and out.get("uri"):
                    xml.setdefault(label, []).append(_file_uri_path(out["uri"]))
        elif "testSummary" in ident and "testSummary" in event:
            status[ident["testSummary"]["label"]] = event["testSummary"].get("overallStatus", "")
        elif (
            "targetCompleted" in ident
            and event.get("completed", {}).get("success") is False
            or "targetCompleted" in ident
            and "aborted" in event
        ):
            status.setdefault(ident["targetCompleted"]["label"], "FAILED_TO_BUILD")
    return status, xml


# The ids of build events that carry a label, and the key of the label in each.
_LABELLED_IDS = ("unconfiguredLabel", "configuredLabel", "targetConfigured", "targetCompleted", "actionCompleted")


def external_repository(label: str) -> str:
    """`@NAME` when `label` is a target of an external repository, else "".

    Bazel 4.2 names a repository that failed to fetch `//external:NAME` in its events; later Bazels
    and bzlmod name its targets `@NAME//...` or `@@NAME//...` (a canonical name such as
    `rules_python~` included). `@//x` and `@@//x` are the main repository.
    """
    if label.startswith("//external:"):
        return "@" + label[len("//external:") :]
    name = label.lstrip("@").split("//", 1)[0] if label.startswith("@") else ""
    return f"@{name}" if name else ""


# Bazel's advice after a sandboxed action's failure: never the reason, and `init`'s .bazelrc turns
# the flag off on purpose.
_SANDBOX_HINT = "Use --sandbox_debug to see verbose messages from the sandbox"
MAX_STDERR_BYTES = 64 << 10


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and _SANDBOX_HINT not in line]
    return lines[-1] if lines else ""


def _gate_reason(action: dict[str, object]) -> str:
    """The first `oracle-gate: [N] ...` line of a failed gate action's stderr (`GATE_ACTIONS`, whose
    stderr holds the gate's one-line reason), read
    from the local file the event names; "" for another action or when there is none."""
    if action.get("type") not in GATE_ACTIONS:
        return ""
    stderr = action.get("stderr")
    uri = stderr.get("uri", "") if isinstance(stderr, dict) else ""
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return ""
    try:
        with open(uri[len("file://") :], "rb") as f:
            text = f.read(MAX_STDERR_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    return next((line.strip() for line in text.splitlines() if line.startswith("oracle-gate: [")), "")


def build_failure(lines: Sequence[str]) -> BuildFailure:
    """Why the invocation whose JSON event file has `lines` failed (it exited 1).

    The first `aborted` event of an external repository's target makes it a set-up failure; so does
    an event file without `buildFinished`. Otherwise the root cause is the first aborted event with
    a description, else the first failed action, of the main repository: the change's (or its
    oracles'). Events are read as `parse_bep` reads them: a line that is not JSON raises ValueError.
    """
    finished = False
    first: BuildFailure | None = None
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        ident = event.get("id", {})
        finished = finished or "buildFinished" in ident
        kind = next((k for k in _LABELLED_IDS if k in ident), "")
        label = ident[kind].get("label", "") if kind else ""
        if "pattern" in ident:
            label = " ".join(ident["pattern"].get("pattern", []))
        if "aborted" in event:
            message = _last_line(event["aborted"].get("description", ""))
            external = external_repository(label)
            if external:
                return BuildFailure(True, external, message)
            if message and first is None:
                first = BuildFailure(False, label, message)
        elif "action" in event and first is None and event["action"].get("success") is not True:
            detail = event["action"].get("failureDetail", {}).get("message", "")
            first = BuildFailure(
                False,
                label,
                _gate_reason(event["action"]) or _last_line(detail) or f"exit {event['action'].get('exitCode', '?')}",
            )
    if not finished:
        return BuildFailure(
            True,
            "",
            "Bazel ended without finishing the build (it crashed, was killed, or "
            "could not start the build); see its output",
        )
    return first or BuildFailure(False, "", "")


def read_results(invocation: Invocation, testlogs: str) -> tuple[list[dict[str, Observed]], dict[str, list[str]]]:
    """The oracle targets' observations and the ids other targets named, from test.xml files that
    must lie in this output base's test-log directory.

    Raises:
        GateError: (exit 1) for a test.xml outside `testlogs` or one that cannot be read.
    """
    xml = {
        label: [p or junit_path_in_testlogs(testlogs, label) for p in paths] for label, paths in invocation.xml.items()
    }
    root = os.path.realpath(testlogs) + os.sep
    maps: list[dict[str, Observed]] = []
    ignored: dict[str, list[str]] = {}
    for label in sorted(xml):
        files: list[FileResult] = []
        for path in xml[label]:
            if not os.path.realpath(path).startswith(root):
                raise GateError(f"Bazel's event file names {path!r} as test.xml of {label}, outside {testlogs}")
            try:
                with open(path, "rb") as f:
                    files.append(read_result(f.read(), path))
            except OSError as exc:
                raise GateError(f"cannot read test.xml of {label}: {exc.strerror}") from None
        if is_oracle_target(label):
            # Every attempt, shard and run of the target; a failure naming no id fails all its ids.
            maps.append(judge_target(files))
        else:
            named = {ident for f in files for ident in f.observed}
            if named:
                ignored[label] = sorted(named)
    return maps, ignored
