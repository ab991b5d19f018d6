"""Bazel's persistent-worker protocol for the gate's own actions: the pin check, the draw and the
reference check (`oracle_suite`'s `_gate_action`).

Started by Bazel with `--persistent_worker`, `serve` reads WorkRequests from stdin and writes one
WorkResponse per request to stdout, so one interpreter, its gate modules imported once, runs every
such action of a build. Started without it (another strategy: the Linux sandbox, a remote
executor), `run` reads the action's arguments from its `@FLAGFILE` and runs the action once.

Messages are protocol buffers (Bazel's `src/main/protobuf/worker_protocol.proto`), each preceded by
its length as a varint, which every Bazel version reads without a flag (the JSON form needs
`--experimental_worker_allow_json_protocol` before Bazel 6). The fields used:

    WorkRequest:  1 arguments (repeated string), 3 request_id (int32); the rest are skipped
    WorkResponse: 1 exit_code (int32), 2 output (string), 3 request_id (int32)

A request's stdout and stderr are captured and sent back as its `output`, which Bazel shows as the
action's stderr; nothing else reaches the protocol stream, since file descriptor 1 is pointed at
stderr for the worker's lifetime. Every request runs the action's `main` afresh; the actions keep no
state between calls. docs/design.md section 8 says why only gate code runs this way.
"""

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

from tools.oracle_gate import errors
from tools.oracle_gate.errors import error_line

# What Bazel adds to a worker's command line (and never to a one-shot action's).
PERSISTENT = "--persistent_worker"
# The modules under tools/oracle_gate/actions/ that `launch` runs: gate code only, never the
# caller, which runs the change's code in a fresh process per action.
ACTIONS = ("pin_check", "draw", "reference_check")
# Wire types of the protocol buffer encoding.
_VARINT, _FIXED64, _DELIMITED, _FIXED32 = 0, 1, 2, 5
# The largest request the worker reads: an action's arguments, never its files.
MAX_MESSAGE_BYTES = 64 << 20

Main = Callable[[Sequence[str]], int]


class ProtocolError(ValueError):
    """A malformed or oversized message on the worker's stdin."""


def encode_varint(value: int) -> bytes:
    """`value` (an int32 or a length; negative ones as 64-bit two's complement, as protobuf does)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def decode_varint(data: bytes, index: int) -> tuple[int, int]:
    """(the varint at `data[index:]`, the index after it).

    Raises:
        ProtocolError: when it is cut off or longer than 10 bytes.
    """
    value = shift = 0
    while True:
        if index >= len(data) or shift > 63:
            raise ProtocolError("a varint is cut off or too long")
        byte = data[index]
        value |= (byte & 0x7F) << shift
        index, shift = index + 1, shift + 7
        if not byte & 0x80:
            return value, index


def _fields(message: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of every field of `message`: an int for varints, bytes otherwise."""
    index = 0
    while index < len(message):
        tag, index = decode_varint(message, index)
        number, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            value, index = decode_varint(message, index)
            yield number, value
            continue
        size = {_FIXED64: 8, _FIXED32: 4}.get(wire)
        if size is None:
            if wire != _DELIMITED:
                raise ProtocolError(f"field {number} has wire type {wire}, which WorkRequest never uses")
            size, index = decode_varint(message, index)
        if index + size > len(message):
            raise ProtocolError(f"field {number} runs past the end of the message")
        yield number, message[index : index + size]
        index += size


def decode_request(message: bytes) -> tuple[list[str], int]:
    """(arguments, request id) of one WorkRequest's bytes (without its length prefix).

    Raises:
        ProtocolError: when the bytes are no WorkRequest, or an argument is not UTF-8.
    """
    arguments: list[str] = []
    request_id = 0
    for number, value in _fields(message):
        if number == 1 and isinstance(value, bytes):
            try:
                arguments.append(value.decode("utf-8"))
            except UnicodeDecodeError:
                raise ProtocolError("an argument is not UTF-8") from None
        elif number == 3 and isinstance(value, int):
            request_id = value
    return arguments, request_id


def encode_request(arguments: Sequence[str], request_id: int = 0) -> bytes:
    """One WorkRequest of `arguments`, length-prefixed as Bazel writes it (for tests and bench/)."""
    body = b"".join(b"\x0a" + encode_varint(len(raw)) + raw for raw in (a.encode("utf-8") for a in arguments))
    if request_id:
        body += b"\x18" + encode_varint(request_id)
    return encode_varint(len(body)) + body


def encode_response(exit_code: int, output: str, request_id: int = 0) -> bytes:
    """One WorkResponse, length-prefixed as Bazel reads it; fields at their default are left out."""
    raw = output.encode("utf-8", "replace")
    body = b""
    if exit_code:
        body += b"\x08" + encode_varint(exit_code)
    if raw:
        body += b"\x12" + encode_varint(len(raw)) + raw
    if request_id:
        body += b"\x18" + encode_varint(request_id)
    return encode_varint(len(body)) + body


def decode_response(message: bytes) -> tuple[int, str, int]:
    """(exit code, output, request id) of one WorkResponse's bytes (for tests and bench/)."""
    exit_code, output, request_id = 0, "", 0
    for number, value in _fields(message):
        if number == 1 and isinstance(value, int):
            exit_code = value - (1 << 64) if value >= 1 << 63 else value
        elif number == 2 and isinstance(value, bytes):
            output = value.decode("utf-8", "replace")
        elif number == 3 and isinstance(value, int):
            request_id = value
    return exit_code, output, request_id


def read_message(stream: BinaryIO) -> bytes | None:
    """The next length-prefixed message of `stream`, or None at its end.

    Raises:
        ProtocolError: when the stream ends inside a message or a length exceeds MAX_MESSAGE_BYTES.
    """
    size = shift = 0
    while True:
        byte = stream.read(1)
        if not byte:
            if shift:
                raise ProtocolError("the stream ends inside a length")
            return None
        size |= (byte[0] & 0x7F) << shift
        shift += 7
        if not byte[0] & 0x80:
            break
        if shift > 63:
            raise ProtocolError("a length is longer than 10 bytes")
    if size > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"a message of {size} bytes is larger than {MAX_MESSAGE_BYTES}")
    body = stream.read(size)
    if len(body) != size:
        raise ProtocolError("the stream ends inside a message")
    return body


def call(main: Main, arguments: Sequence[str]) -> tuple[int, str]:
    """(exit code, what it printed) of `main(arguments)`, its stdout and stderr captured: an
    argparse error or another `SystemExit` is its code; any other exception is exit 1
    (errors.UNDECIDED) with a one-line reason, as the interpreter would have failed the action."""
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
        try:
            code = main(list(arguments))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - one action's failure must not end the worker
            print(error_line(errors.UNDECIDED, f"the action failed: {type(exc).__name__}: {exc}"), file=sys.stderr)
            code = errors.UNDECIDED
    return int(code or 0), captured.getvalue()


def serve(main: Main, requests: BinaryIO, responses: BinaryIO) -> int:
    """Answers every WorkRequest on `requests` with `main`'s WorkResponse on `responses`, one at a
    time, until `requests` ends; returns 0 then.

    Raises:
        ProtocolError: on a malformed request (the worker then exits, and Bazel fails the action).
    """
    while (message := read_message(requests)) is not None:
        arguments, request_id = decode_request(message)
        code, output = call(main, arguments)
        responses.write(encode_response(code, output, request_id))
        responses.flush()
    return 0


def flagfile_arguments(argv: Sequence[str]) -> list[str]:
    """`argv` with an `@FILE` argument replaced by the lines of FILE (`ctx.actions.args`'s
    `multiline` parameter file: one argument per line).

    Raises:
        OSError: when FILE cannot be read.
    """
    out: list[str] = []
    for arg in argv:
        if arg.startswith("@") and len(arg) > 1:
            with open(arg[1:], encoding="utf-8") as handle:
                out += handle.read().splitlines()
        else:
            out.append(arg)
    return out


def run(main: Main, argv: Sequence[str]) -> int:
    """Runs an action (`main`) as Bazel started it: as a persistent worker when `argv` holds
    PERSISTENT, else once on the arguments of its flag file. Returns the exit code."""
    if PERSISTENT in argv:
        responses = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)  # anything printed past `call`'s capture goes to the worker's log, not to Bazel
        sys.stdout = sys.stderr
        try:
            return serve(main, sys.stdin.buffer, responses)
        except ProtocolError as exc:
            print(error_line(errors.UNDECIDED, f"the worker read a malformed request: {exc}"), file=sys.stderr)
            return errors.UNDECIDED
    try:
        arguments = flagfile_arguments(argv)
    except OSError as exc:
        print(
            error_line(errors.UNDECIDED, f"cannot read the action's flag file {exc.filename}: {exc.strerror}"),
            file=sys.stderr,
        )
        return errors.UNDECIDED
    return main(arguments)


def launch(argv: Sequence[str]) -> int:
    """The gate launcher's entry point (tools/bazel/private/gate_action.bzl): `argv` is an action's
    module (one of ACTIONS), then `run`'s arguments. Returns the exit code; 1 (errors.UNDECIDED) for
    a module not in ACTIONS."""
    if not argv or argv[0] not in ACTIONS:
        print(
            error_line(
                errors.UNDECIDED,
                f"the gate launcher runs one of {', '.join(ACTIONS)}, not {argv[0] if argv else 'nothing'!r}",
            ),
            file=sys.stderr,
        )
        return errors.UNDECIDED
    # Only the named action's module is imported: a one-shot action pays for its own imports alone.
    if argv[0] == "pin_check":
        from tools.oracle_gate.actions.pin_check import main
    elif argv[0] == "draw":
        from tools.oracle_gate.actions.draw import main
    else:
        from tools.oracle_gate.actions.reference_check import main
    return run(main, argv[1:])
