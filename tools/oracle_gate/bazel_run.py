"""Runs the harness with `bazel test` and reads the per-id outcomes of exactly that invocation.

The test targets and their `test.xml` files come from the Build Event Protocol file of the run, so a
stale `test.xml` left by an earlier build is never read. `--symlink_prefix=/` keeps Bazel from
creating convenience symlinks, so the work tree is not written to.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.results import merge, parse_junit

HARNESS_PATTERN = "//harness/..."
# Bazel exit codes: 0 ok, 3 some tests failed, 4 no tests found, 1 build failed.
_RESULT_EXITS = (0, 1, 3, 4)
# Bazel's process summary, e.g. "INFO: 9 processes: 2 remote, 7 internal."
_SUMMARY = re.compile(r"^INFO: \d+ process(es)?: ")
# Variables that `bazel run` sets for the gate itself; a nested Bazel must not inherit them.
_DROP_PREFIXES = ("RUNFILES_", "PYTHON", "BUILD_", "TEST_", "JAVA_RUNFILES", "BAZEL_")


@dataclass
class HarnessRun:
    """Outcome of one `bazel test` of the harness.

    Attributes:
        exit_code: Bazel's exit code.
        outcomes: id -> passed/failed/error/skipped, merged over every test target run.
        targets: label -> Bazel's overall status for that target (PASSED, FAILED, ...).
        build_failed: True when Bazel could not build something (exit 1).
        summary: Bazel's process summary lines, e.g. `INFO: 7 processes: 2 remote cache hit, 5 internal.`
    """

    exit_code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    build_failed: bool = False
    summary: list[str] = field(default_factory=list)


def clean_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Returns `environ` without the variables `bazel run` set for the current process."""
    return {k: v for k, v in environ.items() if not k.startswith(_DROP_PREFIXES)}


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


def stop(proc: "subprocess.Popen[bytes]", grace_s: float = 30.0) -> None:
    """Stops a child still running (the gate was interrupted): SIGTERM, then SIGKILL after
    `grace_s` seconds, and waits for it, so nothing it writes outlives the cleanup that follows."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _info(repo: str, env: Mapping[str, str], startup_flags: Sequence[str], flags: Sequence[str], key: str) -> str:
    """`bazel info KEY` with the same startup options and configuration flags as the test run."""
    # Output paths depend on the configuration; remote flags because `info` connects to the engine.
    config = [f for f in flags if f.startswith(("--config=", "--compilation_mode", "--remote_", "--tls_"))]
    proc = subprocess.run(["bazel", *startup_flags, "info", *config, key], cwd=repo, env=dict(env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise GateError(f"`bazel info {key}` failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
    return proc.stdout.strip()


def run_harness(
    repo: str,
    environ: Mapping[str, str],
    extra_flags: Sequence[str] = (),
    pattern: str = HARNESS_PATTERN,
    startup_flags: Sequence[str] = (),
    exact_env: bool = False,
) -> HarnessRun:
    """Runs `bazel test PATTERN` in `repo` and returns the per-id outcomes of that invocation.

    Bazel's own output goes to this process's stderr. Test results are read from the test.xml
    files the Build Event Protocol names.

    Args:
        repo: the workspace to test.
        environ: the environment; without `exact_env`, variables `bazel run` set are dropped.
        extra_flags: flags after `test`.
        pattern: the target pattern.
        startup_flags: flags before `test` (e.g. `--output_user_root=DIR`, `--nohome_rc`).
        exact_env: pass `environ` to Bazel as it is.

    Raises:
        GateError: (exit 1) when Bazel is missing or fails for a reason other than a build or test
            failure, or its event file cannot be read.
    """
    with tempfile.TemporaryDirectory(prefix="oracle-gate-") as tmp:
        bep = os.path.join(tmp, "events.json")
        cmd = [
            "bazel", *startup_flags, "test", "--symlink_prefix=/", f"--build_event_json_file={bep}",
            "--test_output=errors", *extra_flags, "--", pattern,
        ]
        print("oracle-gate: running " + " ".join(cmd), file=sys.stderr, flush=True)
        env = dict(environ) if exact_env else clean_env(environ)
        summary: list[str] = []
        try:
            proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)
        except FileNotFoundError:
            raise GateError("bazel is not installed; run tools/setup.sh, or pass --results FILE") from None
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace")
                sys.stderr.write(line)
                if _SUMMARY.search(line):
                    summary.append(line.strip())
            returncode = proc.wait()
        finally:
            stop(proc)
        sys.stderr.flush()
        if returncode not in _RESULT_EXITS:
            raise GateError(f"`bazel test {pattern}` exited {returncode}; see Bazel's output above")
        try:
            with open(bep, encoding="utf-8") as f:
                status, xml = parse_bep(f.readlines())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise GateError(f"cannot read Bazel's build event file: {exc}") from None
    if any(not p for paths in xml.values() for p in paths):
        testlogs = _info(repo, env, startup_flags, extra_flags, "bazel-testlogs")
        xml = {label: [p or junit_path_in_testlogs(testlogs, label) for p in paths] for label, paths in xml.items()}
    maps = []
    for label in sorted(xml):
        for path in xml[label]:
            try:
                with open(path, "rb") as f:
                    maps.append(parse_junit(f.read(), path))
            except OSError as exc:
                raise GateError(f"cannot read test.xml of {label}: {exc.strerror}") from None
    return HarnessRun(
        exit_code=returncode,
        outcomes=merge(maps),
        targets=status,
        build_failed=returncode == 1,
        summary=summary,
    )
