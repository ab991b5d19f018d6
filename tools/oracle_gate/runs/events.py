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
        elif "targetCompleted" in ident and event.get("completed", {}).get("success") is False:
            status.setdefault(ident["targetCompleted"]["label"], "FAILED_TO_BUILD")
        elif "targetCompleted" in ident and "aborted" in event:
            status.setdefault(ident["targetCompleted"]["label"], "FAILED_TO_BUILD")
    return status, xml

def read_results(invocation: Invocation, testlogs: str) -> tuple[list[dict[str, Observed]], dict[str, list[str]]]:
    """The oracle targets' observations and the ids other targets named, from test.xml files that
    must lie in this output base's test-log directory.

    Raises:
        GateError: (exit 1) for a test.xml outside `testlogs` or one that cannot be read.
    """
    xml = {label: [p or junit_path_in_testlogs(testlogs, label) for p in paths] for label, paths in invocation.xml.items()}
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
