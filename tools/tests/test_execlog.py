"""execlog: spawns outside the sandbox are allowed only for the oracles package's own actions."""

from __future__ import annotations

import os
import time

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.execlog import LISTED_OUTPUTS, MNEMONIC, RUNNER, escapes, remove_raw_copy


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


def test_the_oracles_package_may_run_unsandboxed_and_sandboxed_or_remote_spawns_are_fine():
    log = b"".join([
        spawn("OraclePinCheck", "local", "bazel-out/k8-fastbuild/bin/oracles/_sealed/x.json"),
        spawn("TestRunner", "local", "bazel-out/k8-fastbuild/testlogs/oracles/oracle_test/test.xml"),
        spawn("TestRunner", "linux-sandbox", "bazel-out/k8-fastbuild/testlogs/harness/t/test.xml"),
        spawn("Genrule", "remote", "bazel-out/k8-fastbuild/bin/harness/out.txt"),
        spawn("Genrule", "remote cache hit", "bazel-out/k8-fastbuild/bin/harness/out2.txt"),
    ])
    assert escapes(log) == []


@pytest.mark.parametrize("runner", ["local", "processwrapper-sandbox", "worker", "standalone", ""])
def test_agent_spawns_outside_the_linux_sandbox_escape(runner):
    log = spawn("TestRunner", runner, "bazel-out/k8-fastbuild/testlogs/harness/t/test.log",
                "bazel-out/k8-fastbuild/testlogs/harness/t/test.xml")
    (found,) = escapes(log + spawn("TestRunner", runner, "bazel-out/k8-fastbuild/testlogs/harness/t/test.xml"))
    assert found.describe() == (f"a TestRunner action writing bazel-out/k8-fastbuild/testlogs/harness/t/test.log "
                                f"ran outside the sandbox (runner {runner!r})")


@pytest.mark.parametrize("output", [
    "bazel-out/k8-fastbuild/bin/oraclesx/a",            # a look-alike package
    "bazel-out/k8-fastbuild/bin/harness/oracles/a",     # a subfolder named oracles
    "external/x/bazel-out/k8/bin/oracles/a",
])
def test_only_the_oracles_package_itself_is_allowed(output):
    assert len(escapes(spawn("Genrule", "local", "bazel-out/k8-fastbuild/bin/oracles/ok", output))) == 1


def test_a_spawn_without_outputs_outside_the_sandbox_escapes():
    assert len(escapes(spawn("Genrule", "local"))) == 1


@pytest.mark.parametrize("data", [b"\x05abc", b"\xff\xff", varint(3) + b"\x0f\x00\x00", varint(2) + b"\x52\x09"])
def test_an_unreadable_log_is_undecided(data):
    with pytest.raises(GateError, match="execution log"):
        escapes(data)


def test_the_raw_copy_bazel_leaves_behind_is_removed_and_nothing_else(tmp_path):
    a = spawn("Genrule", "local", "bazel-out/k8/bin/oracles/a")
    b = spawn("Genrule", "linux-sandbox", "bazel-out/k8/bin/harness/b")
    since = time.time() - 1
    (tmp_path / "exec123.log").write_bytes(b + a)           # same spawns, other order: ours
    (tmp_path / "exec456.log").write_bytes(a + a)           # same size, other spawns
    (tmp_path / "other.log").write_bytes(a + b)
    old = tmp_path / "exec789.log"
    old.write_bytes(a + b)
    os.utime(old, (since - 100, since - 100))               # older than the run
    remove_raw_copy(a + b, since, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exec456.log", "exec789.log", "other.log"]
