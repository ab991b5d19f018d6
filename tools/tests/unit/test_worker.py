"""Unit tests of actions/worker.py: Bazel's persistent-worker protocol for the gate's own actions,
against bytes written out by hand from worker_protocol.proto, and the launcher's bootstrap from
tools/bazel/private/gate_action.bzl run as Bazel runs it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.oracle_gate.actions import worker
from tools.oracle_gate.actions.worker import (
    ProtocolError,
    call,
    decode_request,
    decode_response,
    decode_varint,
    encode_request,
    encode_response,
    encode_varint,
    flagfile_arguments,
    launch,
    read_message,
    run,
    serve,
)
from tools.testing.starlark import starlark_string

ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = starlark_string(ROOT / "tools" / "bazel" / "private" / "gate_action.bzl", "_BOOTSTRAP") % ROOT


@pytest.mark.parametrize(
    ("value", "raw"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**31 - 1, b"\xff\xff\xff\xff\x07"),
        (-1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_varints_are_protobufs(value: int, raw: bytes) -> None:
    assert encode_varint(value) == raw
    assert decode_varint(raw, 0) == (value & (2**64 - 1), len(raw))


def test_a_cut_off_varint_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(ProtocolError):
        decode_varint(b"\x80" * 11 + b"\x01", 0)


# WorkRequest{arguments: ["--out", "é"], inputs: [{path: "a", digest: "\x01\x02"}], request_id: 7,
# verbosity: 10}, encoded field by field from worker_protocol.proto.
REQUEST = b"\x0a\x05--out" + b"\x0a\x02\xc3\xa9" + b"\x12\x07\x0a\x01a\x12\x02\x01\x02" + b"\x18\x07" + b"\x28\x0a"


def test_a_request_yields_its_arguments_and_id_and_skips_the_rest() -> None:
    assert decode_request(REQUEST) == (["--out", "é"], 7)


def test_a_request_without_an_id_is_singleplex() -> None:
    assert decode_request(b"\x0a\x01x") == (["x"], 0)


@pytest.mark.parametrize("raw", [b"\x0a\x05ab", b"\x0b", b"\x0a\x01\xff", b"\x1f\x00"])
def test_malformed_requests_are_protocol_errors(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_request(raw)


def test_requests_round_trip_with_their_length_prefix() -> None:
    stream = io.BytesIO(encode_request(["a", "b c", ""], 3) + encode_request([]))
    first, second = read_message(stream), read_message(stream)
    assert first is not None and second is not None
    assert decode_request(first) == (["a", "b c", ""], 3)
    assert decode_request(second) == ([], 0)
    assert read_message(stream) is None


def test_a_response_is_written_as_bazel_reads_it() -> None:
    assert encode_response(5, "no", 2) == b"\x08\x08\x05\x12\x02no\x18\x02"
    assert encode_response(0, "", 0) == b"\x00"
    assert decode_response(encode_response(5, "no", 2)[1:]) == (5, "no", 2)


def test_a_truncated_or_oversized_stream_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        read_message(io.BytesIO(b"\x05abc"))
    with pytest.raises(ProtocolError):
        read_message(io.BytesIO(b"\x80"))
    with pytest.raises(ProtocolError):
        read_message(io.BytesIO(encode_varint(worker.MAX_MESSAGE_BYTES + 1)))


def _main(argv: list[str]) -> int:
    """An action: prints to both streams, exits with its first argument, or fails as told."""
    if argv and argv[0] == "raise":
        raise RuntimeError("boom")
    if argv and argv[0] == "exit":
        raise SystemExit(argv[1] if argv[1:] else None)
    print("out:", *argv)
    print("err:", *argv, file=sys.stderr)
    return int(argv[0]) if argv else 0


def test_call_captures_both_streams_and_restores_them() -> None:
    before = sys.stdout, sys.stderr
    assert call(_main, ["3", "x"]) == (3, "out: 3 x\nerr: 3 x\n")
    assert (sys.stdout, sys.stderr) == before


def test_call_turns_an_exception_into_exit_1_with_one_line() -> None:
    code, output = call(_main, ["raise"])
    assert code == 1
    assert output == "oracle-gate: [1] the action failed: RuntimeError: boom\n"


@pytest.mark.parametrize(
    ("argv", "code", "output"),
    [
        (["exit", "text"], 1, "text\n"),
        (["exit"], 0, ""),
    ],
)
def test_call_keeps_system_exit_codes(argv: list[str], code: int, output: str) -> None:
    assert call(_main, argv) == (code, output)


def test_call_keeps_argparse_exit_2() -> None:
    from tools.oracle_gate.actions.draw import main

    code, output = call(main, ["--no-such-flag"])
    assert code == 2 and "usage: draw" in output


def test_serve_answers_every_request_in_order_and_survives_a_failure() -> None:
    requests = io.BytesIO(encode_request(["0", "a"], 1) + encode_request(["raise"], 2) + encode_request(["4"], 3))
    responses = io.BytesIO()
    assert serve(_main, requests, responses) == 0
    responses.seek(0)
    answers = []
    while (message := read_message(responses)) is not None:
        answers.append(decode_response(message))
    assert answers == [
        (0, "out: 0 a\nerr: 0 a\n", 1),
        (1, "oracle-gate: [1] the action failed: RuntimeError: boom\n", 2),
        (4, "out: 4\nerr: 4\n", 3),
    ]


def test_a_flag_file_gives_one_argument_per_line(tmp_path: Path) -> None:
    flags = tmp_path / "f.params"
    flags.write_text("--oracle\noracles/a b.toml=x\n\n--salt\n", encoding="utf-8")
    assert flagfile_arguments(["first", f"@{flags}"]) == ["first", "--oracle", "oracles/a b.toml=x", "", "--salt"]
    assert flagfile_arguments(["@"]) == ["@"]


def test_run_once_reads_the_flag_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = tmp_path / "f.params"
    flags.write_text("6\nz\n", encoding="utf-8")
    assert run(_main, [f"@{flags}"]) == 6
    assert capsys.readouterr().out == "out: 6 z\n"


def test_run_once_without_its_flag_file_is_one_line_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(_main, [f"@{tmp_path / 'missing'}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("oracle-gate: [1] cannot read the action's flag file ") and err.count("\n") == 1


@pytest.mark.parametrize("argv", [[], ["caller"], ["observe", "--persistent_worker"], ["../x"]])
def test_launch_runs_only_the_gate_actions(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert launch(argv) == 1
    assert "the gate launcher runs one of pin_check, draw, reference_check" in capsys.readouterr().err


def _launcher(*argv: str, stdin: bytes = b"", cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    """The launcher's command line, as gate_launcher writes it, with `argv` after it."""
    return subprocess.run(
        [sys.executable, "-S", "-E", "-B", "-c", BOOTSTRAP, *argv],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )


def _draw_request(tmp_path: Path, name: str) -> list[str]:
    """A draw action's arguments on an oracle file without generators, writing tmp_path/NAME."""
    oracle = tmp_path / "o.toml"
    oracle.write_text(
        'schema = 1\n\n[[invariant]]\nid = "t"\nentry = "p.m:f"\nkind = "exact_table"\n'
        'blob = "oracles/blobs/t.json"\nblob_sha256 = "' + "0" * 64 + '"\n',
        encoding="utf-8",
    )
    index = tmp_path / "index.json"
    index.write_text(json.dumps({"schema": 1, "oracles": {}, "blobs": {}}), encoding="utf-8")
    return ["--index", str(index), "--unsalted", "--out", str(tmp_path / name), f"--oracle=oracles/o.toml={oracle}"]


def test_the_bootstrap_serves_requests_as_a_persistent_worker(tmp_path: Path) -> None:
    requests = (
        encode_request(_draw_request(tmp_path, "a.json"), 0)
        + encode_request(["--bad"], 0)
        + encode_request(_draw_request(tmp_path, "b.json"), 0)
    )
    proc = _launcher("draw", "--persistent_worker", stdin=requests, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    stream = io.BytesIO(proc.stdout)
    answers = []
    while (message := read_message(stream)) is not None:
        answers.append(decode_response(message))
    assert [code for code, _, _ in answers] == [0, 2, 0], answers
    assert "usage: draw" in answers[1][1]
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads((tmp_path / "b.json").read_text())


def test_the_bootstrap_runs_once_on_a_flag_file(tmp_path: Path) -> None:
    flags = tmp_path / "draw.params"
    flags.write_text("\n".join(_draw_request(tmp_path, "once.json")) + "\n", encoding="utf-8")
    proc = _launcher("draw", f"@{flags}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "once.json").read_text())["rows"] == {}


def test_a_malformed_request_ends_the_worker_with_one_line(tmp_path: Path) -> None:
    proc = _launcher("draw", "--persistent_worker", stdin=b"\x05ab", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode().strip().splitlines() == [
        "oracle-gate: [1] the worker read a malformed request: the stream ends inside a message"
    ]
