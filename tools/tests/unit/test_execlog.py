"""execlog: where the change's code runs every spawn is confined; the gate's invocations run only its own."""

from __future__ import annotations

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.execlog import (
    JUDGE_MNEMONICS,
    JUDGE_OUTPUTS,
    LISTED_OUTPUTS,
    MNEMONIC,
    RUNNER,
    VIEW_MNEMONICS,
    VIEW_OUTPUTS,
    read_spawns,
    unconfined,
    unexpected,
)


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, text: str) -> bytes:
    data = text.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


def spawn(mnemonic: str, runner: str, *outputs: str) -> bytes:
    # Other fields a real SpawnExec carries (varint, fixed64, nested) must be skipped.
    body = field(1, "command") + varint(6 << 3) + varint(1) + varint(8 << 3 | 1) + b"\0" * 8
    body += b"".join(field(LISTED_OUTPUTS, o) for o in outputs) + field(MNEMONIC, mnemonic) + field(RUNNER, runner)
    return varint(len(body)) + body


def confined(log: bytes) -> list[str]:
    return [e.describe() for e in unconfined(read_spawns(log))]


def test_sandboxed_remote_and_cached_spawns_are_confined():
    log = b"".join(
        [
            spawn("TestRunner", "linux-sandbox", "bazel-out/k8-fastbuild/testlogs/harness/t/test.xml"),
            spawn("Genrule", "remote", "bazel-out/k8-fastbuild/bin/harness/out.txt"),
            spawn("Genrule", "remote cache hit", "bazel-out/k8-fastbuild/bin/harness/out2.txt"),
            spawn("Genrule", "disk cache hit", "bazel-out/k8-fastbuild/bin/harness/out3.txt"),
        ]
    )
    assert confined(log) == []


@pytest.mark.parametrize("runner", ["local", "processwrapper-sandbox", "worker", "standalone", ""])
def test_every_other_runner_is_an_escape_once_per_output_folder(runner):
    log = spawn(
        "TestRunner",
        runner,
        "bazel-out/k8-fastbuild/testlogs/harness/t/test.log",
        "bazel-out/k8-fastbuild/testlogs/harness/t/test.xml",
    )
    log += spawn("TestRunner", runner, "bazel-out/k8-fastbuild/testlogs/harness/t/test.xml")
    assert confined(log) == [
        f"a TestRunner action writing bazel-out/k8-fastbuild/testlogs/harness/t/test.log "
        f"ran outside the sandbox (runner {runner!r})"
    ]


def test_even_the_oracles_package_runs_confined_where_the_change_runs():
    log = spawn("OracleCall", "local", "bazel-out/k8-fastbuild/bin/oracles/oracle_test.observations.json")
    assert len(confined(log)) == 1


def test_the_gate_invocations_run_only_the_gate_actions():
    views = b"".join(
        [
            spawn("OraclePinCheck", "linux-sandbox", "bazel-out/k8-fastbuild/bin/oracles/_sealed/x.json"),
            spawn("OracleDraw", "remote", "bazel-out/k8-fastbuild/bin/oracles/oracles.generated.json"),
            spawn("OracleCall", "remote cache hit", "bazel-out/k8-fastbuild/bin/oracles/o.json"),  # not executed
        ]
    )
    assert unexpected(read_spawns(views), VIEW_MNEMONICS, VIEW_OUTPUTS, "x") == []
    judge = spawn("TestRunner", "linux-sandbox", "bazel-out/k8-fastbuild/testlogs/oracles/oracle_test/test.xml")
    assert unexpected(read_spawns(judge), JUDGE_MNEMONICS, JUDGE_OUTPUTS, "x") == []


@pytest.mark.parametrize(
    ("mnemonic", "output"),
    [
        ("OracleCall", "bazel-out/k8-fastbuild/bin/oracles/oracle_test.observations.json"),  # production code
        ("OraclePinCheck", "bazel-out/k8-fastbuild/bin/harness/spoof.json"),  # a spoofed mnemonic
        ("Genrule", "bazel-out/k8-fastbuild/bin/oracles/x"),
        ("OracleDraw", "bazel-out/k8-fastbuild/bin/oraclesx/a"),  # a look-alike package
        ("OracleDraw", "bazel-out/k8-fastbuild/bin/harness/oracles/a"),  # a folder named oracles
    ],
)
def test_anything_else_in_a_gate_invocation_is_reported(mnemonic, output):
    (found,) = unexpected(
        read_spawns(spawn(mnemonic, "linux-sandbox", output)),
        VIEW_MNEMONICS,
        VIEW_OUTPUTS,
        "the gate's view-building invocation",
    )
    assert found.describe() == f"a {mnemonic} action writing {output} ran in the gate's view-building invocation"


def test_a_spawn_without_outputs_in_a_gate_invocation_is_reported():
    assert len(unexpected(read_spawns(spawn("OracleDraw", "local")), VIEW_MNEMONICS, VIEW_OUTPUTS, "x")) == 1


@pytest.mark.parametrize("data", [b"\x05abc", b"\xff\xff", varint(3) + b"\x0f\x00\x00", varint(2) + b"\x52\x09"])
def test_an_unreadable_log_is_undecided(data):
    with pytest.raises(GateError, match="execution log"):
        read_spawns(data)
