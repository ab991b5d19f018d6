"""Bazel's execution log: which spawns of a run ran outside a sandbox.

Bazel 4.2's local sandbox is no security boundary, but it is the only thing between agent code and
the files of the run: an action or test tagged `local` or `no-sandbox` (or any spawn that falls
back to the `local` strategy) runs with the user's full file-system rights, so it could rewrite the
expectations view or the judge's test.xml. The gate therefore runs Bazel with
`--execution_log_binary_file` and requires that every spawn that ran outside the Linux sandbox or the
remote executor is one of the oracles package's own (the pin check, the draw, the judge). A spawn
cannot declare outputs in another package (Bazel forbids it), so the output paths name the package
that owns it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError

# Runner names Bazel 4.2 writes for spawns that ran in the Linux sandbox, on a remote executor,
# or did not run at all (an action-cache hit in a remote or disk cache).
CONFINED_RUNNERS = frozenset({"linux-sandbox", "remote", "remote cache hit", "disk cache hit"})
# Output paths of the protected oracles package: bazel-out/<configuration>/{bin,testlogs}/oracles/...
_PROTECTED_OUTPUT = re.compile(r"bazel-out/[^/]+/(bin|testlogs)/oracles/")
# Field numbers of `SpawnExec` in Bazel's src/main/protobuf/spawn.proto (4.2): listed_outputs,
# mnemonic, runner. The log is a sequence of varint-length-delimited SpawnExec messages.
LISTED_OUTPUTS, MNEMONIC, RUNNER = 5, 10, 12
# Bazel 4.2's server also writes the unsorted log to java.io.tmpdir (/tmp) as exec<digits>.log
# and never deletes it.
_RAW_COPY = re.compile(r"exec\d+\.log")


@dataclass(frozen=True)
class Escape:
    """A spawn of code outside the oracles package that ran without a sandbox."""

    mnemonic: str
    runner: str
    output: str

    def describe(self) -> str:
        """One line: what ran, how, and the first output it declared."""
        return f"a {self.mnemonic} action writing {self.output} ran outside the sandbox (runner {self.runner!r})"


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
        yield data[index:index + length]
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
                out.setdefault(number, []).append(message[index:index + length].decode("utf-8", "replace"))
            index += length
        else:
            raise GateError(f"Bazel's execution log holds protobuf wire type {wire}; it is not a spawn log")
    if index != len(message):
        raise GateError("Bazel's execution log is truncated or not a spawn log")
    return out


def escapes(data: bytes) -> list[Escape]:
    """Every spawn that ran outside CONFINED_RUNNERS and declared an output outside the oracles
    package; one per output directory (a test and Bazel's test.xml writer for it count once).

    Args:
        data: the bytes of a `--execution_log_binary_file`.

    Raises:
        GateError: (exit 1) when the log cannot be parsed.
    """
    found = []
    seen: set[str] = set()
    for message in messages(data):
        fields = spawn_fields(message)
        runner = (fields.get(RUNNER) or [""])[0]
        if runner in CONFINED_RUNNERS:
            continue
        outputs = fields.get(LISTED_OUTPUTS, [])
        foreign = [p for p in outputs if not _PROTECTED_OUTPUT.match(p)]
        if foreign or not outputs:
            output = (foreign or ["(no outputs)"])[0]
            if output.rsplit("/", 1)[0] not in seen:
                seen.add(output.rsplit("/", 1)[0])
                found.append(Escape((fields.get(MNEMONIC) or ["?"])[0], runner, output))
    return found


def remove_raw_copy(data: bytes, since: float, folder: str = "/tmp") -> None:
    """Deletes the unsorted copy of an execution log that Bazel 4.2 leaves in `folder`: the
    `exec<digits>.log` written after `since` (a `time.time()` value) holding the same messages."""
    mine = sorted(messages(data))
    try:
        names = [n for n in os.listdir(folder) if _RAW_COPY.fullmatch(n)]
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            info = os.stat(path)
            if info.st_mtime < since or info.st_size != len(data):
                continue
            with open(path, "rb") as f:
                if sorted(messages(f.read())) == mine:
                    os.unlink(path)
                    return
        except (OSError, GateError):
            continue
