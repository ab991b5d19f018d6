"""Bazel's execution log: which spawns a Bazel invocation ran, and where.

Bazel 4.2's local sandbox is no security boundary, but it is what stands between the change's code
and the files of the run: a spawn that runs unsandboxed has the user's full file-system rights and
could rewrite the expectations view or the judge's results. The gate's runs forbid it with their
flags (bazel_run.py) and check it afterwards from the binary execution log: on Bazel 4.2
`--experimental_execution_log_file` (unsorted, written straight to the path given; its
`--execution_log_binary_file` and `--execution_log_json_file` also leave an undeleted copy in
`/tmp`), on Bazel 7 `--execution_log_binary_file` with `--noexecution_log_sort` (the same messages,
written straight to the path; `flags.execution_log_flags` chooses): in the invocation that runs
the change's code every spawn must have run confined, and in the gate's own invocations only the
gate's own actions may have run at all. A spawn cannot declare outputs in another package (Bazel
forbids it), so its output paths name the package that owns it. Which spawns each invocation may
run: docs/design.md section 10.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError

# Runner names Bazel 4.2 writes for spawns that ran in the Linux sandbox, on a remote executor,
# or did not run at all (an action-cache hit in a remote or disk cache).
CONFINED_RUNNERS = frozenset({"linux-sandbox", "remote", "remote cache hit", "disk cache hit"})
# Field numbers of `SpawnExec` in Bazel's src/main/protobuf/spawn.proto (4.2): listed_outputs,
# mnemonic, runner. The log is a sequence of varint-length-delimited SpawnExec messages.
LISTED_OUTPUTS, MNEMONIC, RUNNER = 5, 10, 12


@dataclass(frozen=True)
class Spawn:
    """One spawn of an execution log: its mnemonic, the runner that ran it, its declared outputs."""

    mnemonic: str
    runner: str
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Escape:
    """A spawn that ran where the gate does not allow it: `why` says where it ran."""

    mnemonic: str
    runner: str
    output: str
    why: str = ""

    def describe(self) -> str:
        """One line: what ran, the first output it declared, and where it ran; without a mnemonic
        (a trace no one spawn left, collection.py), the path and what happened to it."""
        if not self.mnemonic:
            return f"{self.output} {self.why}"
        where = self.why or f"outside the sandbox (runner {self.runner!r})"
        return f"a {self.mnemonic} action writing {self.output} ran {where}"


def _varint(data: bytes, index: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if index >= len(data) or shift > 63:
            raise GateError("Bazel's execution log is truncated or not a spawn log")
        byte = data[index]
        index += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, index


def messages(data: bytes) -> Iterator[bytes]:
    """Yields each length-delimited message of a binary execution log.

    Raises:
        GateError: (exit 1) when the bytes are not a sequence of delimited messages.
    """
    index = 0
    while index < len(data):
        length, index = _varint(data, index)
        if index + length > len(data):
            raise GateError("Bazel's execution log is truncated or not a spawn log")
        yield data[index : index + length]
        index += length


def spawn_fields(message: bytes) -> dict[int, list[str]]:
    """The string fields of one SpawnExec message, by field number (other fields are skipped).

    Raises:
        GateError: (exit 1) on a wire type protobuf does not define.
    """
    out: dict[int, list[str]] = {}
    index = 0
    while index < len(message):
        key, index = _varint(message, index)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, index = _varint(message, index)
        elif wire == 1:
            index += 8
        elif wire == 5:
            index += 4
        elif wire == 2:
            length, index = _varint(message, index)
            if number in (LISTED_OUTPUTS, MNEMONIC, RUNNER):
                out.setdefault(number, []).append(message[index : index + length].decode("utf-8", "replace"))
            index += length
        else:
            raise GateError(f"Bazel's execution log holds protobuf wire type {wire}; it is not a spawn log")
    if index != len(message):
        raise GateError("Bazel's execution log is truncated or not a spawn log")
    return out


def read_spawns(data: bytes) -> list[Spawn]:
    """Every spawn of a binary execution log (`flags.execution_log_flags`), in its order.

    Raises:
        GateError: (exit 1) when the log cannot be parsed.
    """
    out = []
    for message in messages(data):
        fields = spawn_fields(message)
        out.append(
            Spawn(
                (fields.get(MNEMONIC) or ["?"])[0],
                (fields.get(RUNNER) or [""])[0],
                tuple(fields.get(LISTED_OUTPUTS, [])),
            )
        )
    return out


def _first_output(spawn: Spawn) -> str:
    return spawn.outputs[0] if spawn.outputs else "(no outputs)"


def unconfined(spawns: list[Spawn]) -> list[Escape]:
    """Every spawn that ran outside CONFINED_RUNNERS; one per output folder (a test and Bazel's
    test.xml writer for it count once)."""
    found = []
    seen: set[str] = set()
    for spawn in spawns:
        if spawn.runner in CONFINED_RUNNERS:
            continue
        folder = _first_output(spawn).rsplit("/", 1)[0]
        if folder not in seen:
            seen.add(folder)
            found.append(Escape(spawn.mnemonic, spawn.runner, _first_output(spawn)))
    return found


def unexpected(spawns: list[Spawn], mnemonics: frozenset[str], outputs: re.Pattern[str], where: str) -> list[Escape]:
    """Every spawn that executed (a cache hit did not) although its mnemonic is not in `mnemonics`
    or one of its outputs does not match `outputs`: in an invocation meant to run only the gate's
    own actions, anything else means the change's code ran there."""
    found = []
    for spawn in spawns:
        if spawn.runner in ("remote cache hit", "disk cache hit"):
            continue
        if spawn.mnemonic not in mnemonics or not spawn.outputs or not all(outputs.match(p) for p in spawn.outputs):
            found.append(Escape(spawn.mnemonic, spawn.runner, _first_output(spawn), f"in {where}"))
    return found


# What the gate's own invocations may run: the pin check, the draw, the reference implementations
# (human-owned code under the protected oracles/) and their check, and the judge.
VIEW_MNEMONICS = frozenset({"OraclePinCheck", "OracleDraw", "OracleReference", "OracleReferenceCheck"})
VIEW_OUTPUTS = re.compile(r"bazel-out/[^/]+/bin/oracles/")
JUDGE_MNEMONICS = frozenset({"TestRunner"})
JUDGE_OUTPUTS = re.compile(r"bazel-out/[^/]+/testlogs/oracles/")
