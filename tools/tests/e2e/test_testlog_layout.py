"""Result ingestion reads every file Bazel writes for a test: real test logs of a small workspace.

A flaky oracle target whose first attempt fails an id and whose retry passes it must read as
failed through a test-log directory, as it does through the build event file; sharded and
repeated targets are read shard by shard, and a directory holding logs of two invocations is
refused (exit 1) instead of being merged.

It needs a nested Bazel because the files it reads are those Bazel itself writes for retried,
sharded and repeated tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.testing.workspace_copy import bazel, gate, source_root

FLAKY = """\
#!/bin/bash
# Fails id `kept` on the first attempt, passes it on the retry.
count=$(cat "$ATTEMPTS" 2>/dev/null || echo 0)
echo $((count + 1)) > "$ATTEMPTS"
if [ "$count" = 0 ]; then
  echo '<testsuites><testsuite name="o"><testcase name="invariant[kept]"><failure message="boom"/></testcase></testsuite></testsuites>' > "$XML_OUTPUT_FILE"
  exit 1
fi
echo '<testsuites><testsuite name="o"><testcase name="invariant[kept]"/></testsuite></testsuites>' > "$XML_OUTPUT_FILE"
"""  # noqa: E501 - the script writes its XML in one line

CRASHY = """\
#!/bin/bash
# Dies without writing any XML on the first attempt (Bazel then writes a testcase naming no id).
count=$(cat "$ATTEMPTS.crashy" 2>/dev/null || echo 0)
echo $((count + 1)) > "$ATTEMPTS.crashy"
if [ "$count" = 0 ]; then kill -SEGV $$; fi
echo '<testsuites><testsuite name="o"><testcase name="invariant[other]"/></testsuite></testsuites>' > "$XML_OUTPUT_FILE"
"""

SHARDED = """\
#!/bin/bash
touch "$TEST_SHARD_STATUS_FILE"
echo "<testsuites><testsuite name=\\"o\\"><testcase name=\\"invariant[shard_$TEST_SHARD_INDEX]\\"/></testsuite></testsuites>" > "$XML_OUTPUT_FILE"
"""  # noqa: E501 - the script writes its XML in one line

BUILD = """\
sh_test(name = "flaky", srcs = ["flaky.sh"], flaky = True)
sh_test(name = "sharded", srcs = ["sharded.sh"], shard_count = 2)
sh_test(name = "crashy", srcs = ["crashy.sh"], flaky = True)
"""

PASSING = """\
<testsuites><testsuite name="o"><testcase name="invariant[kept]"/><testcase name="invariant[shard_0]"/>
<testcase name="invariant[shard_1]"/><testcase name="invariant[other]"/></testsuite></testsuites>
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if shutil.which("bazel") is None:
        pytest.fail("bazel is not installed; run tools/setup.sh")
    ws = tmp_path_factory.mktemp("layout")
    root = source_root()
    (ws / "WORKSPACE").write_text(
        f'local_repository(name = "rules_cc", path = "{root}/third_party/rules_cc")\n'
        f'local_repository(name = "remote_coverage_tools", path = "{root}/third_party/coverage_tools")\n'
        'local_repository(name = "rules_java", path = "/usr/share/bazel/rules/java")\n'
    )
    (ws / ".bazelrc").write_text("build --nosandbox_debug\n")
    (ws / "oracles").mkdir()
    (ws / "oracles/BUILD").write_text(BUILD)
    for name, text in (("flaky.sh", FLAKY), ("sharded.sh", SHARDED), ("crashy.sh", CRASHY)):
        (ws / "oracles" / name).write_text(text)
        (ws / "oracles" / name).chmod(0o755)
    (ws / "passing.xml").write_text(PASSING)
    yield ws
    bazel(ws, "shutdown")


def logs_dir(ws: Path) -> Path:
    return Path(bazel(ws, "info", "bazel-testlogs", timeout=900).stdout.strip())


def test_every_attempt_and_shard_is_read_and_a_failed_attempt_fails(workspace: Path) -> None:
    attempts = workspace / "attempts"
    proc = bazel(workspace, "test", "--spawn_strategy=standalone", f"--test_env=ATTEMPTS={attempts}", "//oracles:all")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FLAKY" in proc.stderr
    logs = logs_dir(workspace)
    # The layout the gate reads, as Bazel wrote it.
    assert (logs / "oracles/flaky/test_attempts/attempt_1.xml").is_file()
    assert {p.name for p in (logs / "oracles/sharded").iterdir()} >= {"shard_1_of_2", "shard_2_of_2"}

    compared = gate(source_root(), "compare", str(logs / "oracles"), str(workspace / "passing.xml"))
    assert compared.returncode == 6, compared.stdout + compared.stderr
    assert "test_attempts/attempt_1.xml" in compared.stdout
    lines = compared.stdout.splitlines()
    assert any(line.split()[:3] == ["kept", "failed", "passed"] for line in lines), compared.stdout
    # The crashed attempt's XML, written by Bazel, names no id: it fails every id of its target.
    crashed = (logs / "oracles/crashy/test_attempts/attempt_1.xml").read_text()
    assert "invariant[" not in crashed
    assert any(
        line.split()[:3] == ["other", "error", "passed"] and "crashy/test_attempts/attempt_1.xml" in line
        for line in lines
    ), compared.stdout
    assert not any(line.split()[:1] == ["shard_0"] for line in lines), compared.stdout


def test_logs_of_two_invocations_are_refused(workspace: Path) -> None:
    # --runs_per_test=2 writes shard_I_of_2_run_J_of_2 folders beside the earlier shard_I_of_2 ones.
    proc = bazel(workspace, "test", "--spawn_strategy=standalone", "--runs_per_test=2", "//oracles:sharded")
    assert proc.returncode == 0, proc.stderr[-3000:]
    logs = logs_dir(workspace)
    assert (logs / "oracles/sharded/shard_2_of_2_run_2_of_2/test.xml").is_file()
    compared = gate(source_root(), "compare", str(logs / "oracles"), str(workspace / "passing.xml"))
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert compared.stdout == ""
    assert compared.stderr.count("\n") == 1
    assert "shard/run folders of different invocations" in compared.stderr
    assert os.path.join("oracles", "sharded") in compared.stderr
