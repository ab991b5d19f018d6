"""Unit tests of stream.py: a blob read in pieces gets exactly the outcome `check_shape(row,
load_samples(data))` gives all of its bytes at once, at every piece size, with bounded memory."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections.abc import Iterator

import pytest

from tools.oracle_gate.spec import stream
from tools.oracle_gate.spec.samples import SampleError, check_shape, load_samples
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.spec.stream import check_stream

SIZES = (1, 2, 3, 7, 64, 4096, None)  # None: one piece


def row(kind: str, **extra: object) -> Invariant:
    return Invariant(
        id="r",
        entry="shop.calc:add",
        kind=kind,
        blob="oracles/blobs/r.json",
        blob_sha256="0" * 64,
        source="oracles/shop.toml",
        **extra,
    )  # type: ignore[arg-type]


ROWS = {
    "bound": row("bound", min=0, max=1),
    "idempotent": row("idempotent", args=("k",), repeat=2),
    "exact_table": row("exact_table", args_names=("a", "b")),
    "exact_table_receiver": row("exact_table", receiver="shop.calc:Calc"),
    "antisymmetric": row("antisymmetric", args_names=("a", "b")),
    "commutative": row("commutative", args_names=("a", "b")),
    "round_trip": row("round_trip", inverse="shop.calc:sub", receiver="shop.calc:Calc"),
    "monotonic": row("monotonic", over="xs", direction="increasing"),
}
TABLE = ROWS["exact_table"]


def whole(inv: Invariant, data: bytes) -> str | None:
    try:
        check_shape(inv, load_samples(data))
    except SampleError as exc:
        return str(exc)
    return None


def streamed(inv: Invariant, data: bytes, size: int | None) -> str | None:
    pieces = [data] if size is None else [data[i : i + size] for i in range(0, len(data), size)]
    try:
        check_stream(inv, pieces)
    except SampleError as exc:
        return str(exc)
    return None


def same_everywhere(inv: Invariant, data: bytes) -> str | None:
    expected = whole(inv, data)
    for size in SIZES:
        assert streamed(inv, data, size) == expected, (size, data[:200])
    return expected


GOOD = {
    "bound": b'[{"a": 1}, {}, {"b": [2, {"c": null}]}]',
    "idempotent": b'[{"state": {"n": 1}, "k": "x"}, {"state": [], "k": 2, "extra": true}]',
    "exact_table": b'[{"args": [1, 2], "expected": 3}, {"args": [-1.5e3, "\\u00e9"], "expected": {"x": [1]}}]\n',
    "exact_table_receiver": b'[{"args": [], "expected": 1, "receiver": [1]}, {"args": [2], '
    b'"expected": 2, "receiver": {}}]',
    "antisymmetric": b'[{"a": 1, "b": 2}, {"b": "y", "a": "x"}]',
    "commutative": b'[{"a": [1], "b": {"c": 2}}, {"b": "y", "a": "x"}]',
    "round_trip": b'[{"x": 1, "receiver": []}, {"y": "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "receiver": {"k": 1}}]',
    "monotonic": b'[{"xs": [1, 2.5]}, {"xs": ["a", "b", "c"], "other": 1}]',
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_valid_blobs_of_every_kind_pass(name):
    assert same_everywhere(ROWS[name], GOOD[name]) is None


@pytest.mark.parametrize("name", sorted(ROWS))
def test_each_kind_refuses_a_wrong_sample_alike(name):
    wrong = GOOD[name][:-1] + b', {"zz": [1]}, 3]'
    assert same_everywhere(ROWS[name], wrong) is not None


CASES = {
    "trailing comma": b'[{"args": [1, 2], "expected": 3},]',
    "trailing comma, spaces": b'[{"args": [1, 2], "expected": 3} ,\n  ]',
    "missing comma": b'[{"args": [1, 2], "expected": 3} {"args": [1, 2], "expected": 3}]',
    "missing comma inside": b'[{"args": [1 2], "expected": 3}]',
    "unterminated string": b'[{"args": [1, 2], "expected": "' + b"x" * 5000,
    "unterminated string, closed": b'[{"args": [1, 2], "expected": "' + b"x" * 5000 + b'"}]',
    "split number": b'[{"args": [1234, 5678], "expected": 123456789012345678901234567890}]',
    "number then e": b'[{"args": [1e5, 2E-3, 0.5e+2], "expected": 1}]',
    "bad number": b'[{"args": [1., 2], "expected": 1}]',
    "split true": b'[{"args": [true, false], "expected": null}]',
    "NaN": b'[{"args": [1, 2], "expected": NaN}]',
    "Infinity": b'[{"args": [1, 2], "expected": -Infinity}]',
    "1e400": b'[{"args": [1, 2], "expected": 1e400}]',
    "long overflow": b'[{"args": [1, 2], "expected": ' + b"1" * 400 + b".0}]",
    "long float ok": b'[{"args": [1, 2], "expected": ' + b"1" * 400 + b".0e-300}]",
    "duplicate key": b'[{"args": [1, 2], "args": [1, 2], "expected": 3}]',
    "duplicate nested key": b'[{"args": [{"a": 1, "a": 2}, 2], "expected": 3}]',
    "too deep": b"[" * 100_000 + b"]" * 100_000,
    "too deep in a sample": b'[{"args": [1, 2], "expected": ' + b"[" * 50_000 + b"]" * 50_000 + b"}]",
    "int over 4300 digits": b'[{"args": [1, 2], "expected": ' + b"7" * 5000 + b"}]",
    "int of 4300 digits then float": b'[{"args": [1, 2], "expected": ' + b"7" * 5000 + b".5}]",
    "BOM": b'\xef\xbb\xbf[{"args": [1, 2], "expected": 3}]',
    "UTF-16 without BOM": '[{"args": [1, 2], "expected": 3}]'.encode("utf-16-le"),
    "UTF-16 BOM": '[{"args": [1, 2], "expected": 3}]'.encode("utf-16"),
    "NUL late after a JSON error": b'[{"args": [1, 2], "expected": 3},, ' + b" " * 3000 + b'"\x00"]',
    "control char after a shape error": b'[{"x": 1}, ' + b'{"args": [1, 2], "expected": 3}, ' * 100 + b'"\x1b"]',
    "invalid UTF-8": b'[{"args": [1, 2], "expected": "caf\xe9"}]',
    "invalid UTF-8 late": b'[{"args": [1, 2], "expected": 3},\n' * 300
    + b'{"args": [1, 2], "expected": "\xed\xa0\x80"}]',
    "truncated UTF-8 at the end": b'[{"args": [1, 2], "expected": "\xe2\x82',
    "invalid continuation": b'[{"args": [1, 2], "expected": "\xe2\x28\xa1"}]',
    "multi-byte characters": '[{"args": ["é€😀", "ü"], "expected": "\u2028"}]'.encode(),
    "CRLF": b'[\r\n  {"args": [1, 2], "expected": 3},\r\n  {"args": [1, 2], "expected": 3}\r\n]\r\n',
    "CRLF error": b'[\r\n  {"args": [1, 2], "expected": 3},\r\n  {"args": [1, 2], "expected": x}\r\n]\r\n',
    "lone CR": b'[{"args": [1, 2],\r"expected": 3}]\r',
    "tab in a string": b'[{"args": [1, 2], "expected": "a\tb"}]',
    "bad escape": b'[{"args": [1, 2], "expected": "\\q"}]',
    "bad unicode escape": b'[{"args": [1, 2], "expected": "\\u12"}]',
    "surrogate pair escape": b'[{"args": [1, 2], "expected": "\\ud83d\\ude00"}]',
    "empty array": b"[]",
    "empty array, spaces": b" [ \n ] \n",
    "top-level object": b'{"args": [1, 2], "expected": 3}',
    "top-level number": b"3",
    "top-level garbage": b"hello",
    "top-level broken object": b'{"a": ',
    "trailing garbage": b'[{"args": [1, 2], "expected": 3}] x',
    "trailing second array": b'[{"args": [1, 2], "expected": 3}]\n[1]',
    "trailing whitespace": b'[{"args": [1, 2], "expected": 3}]  \n\t ',
    "shape error then JSON error": b'[{"args": [1, 2], "expected": 3}, 5, '
    + b'{"args": [1, 2], "expected": 3}, ' * 200
    + b"}",
    "shape error then end": b'[{"args": [1, 2], "expected": 3}, {"args": [1]}, {"args": 2, "expected": 1}]',
    "whitespace only": b" \n\t\r\n ",
    "empty bytes": b"",
    "open array": b"[",
    "open array after a sample": b'[{"args": [1, 2], "expected": 3}',
    "open array after a comma": b'[{"args": [1, 2], "expected": 3},',
    "not a value": b"[}",
    "brace inside a string": b'[{"args": ["}, {", "},{"], "expected": "}, {\\"a\\": 1}, {"}, {"args": '
    b'[], "expected": 0}]',
    "nested objects": b'[{"args": [{"a": 1}, {"b": 2}], "expected": {"c": {}}}, ' * 50
    + b'{"args": [], "expected": 0}]',
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refusals_are_word_for_word_those_of_the_whole_bytes(name):
    same_everywhere(TABLE, CASES[name])


def test_the_cases_refuse_what_they_should():
    assert whole(TABLE, CASES["missing comma"]) == "is not valid JSON: Expecting ',' delimiter at line 1 column 34"
    assert whole(TABLE, CASES["NUL late after a JSON error"]).startswith("has a NUL byte (U+0000)")
    assert whole(TABLE, CASES["shape error then JSON error"]).startswith("is not valid JSON:")
    assert whole(TABLE, CASES["shape error then end"]) == "sample 1 must have exactly the keys args and expected"
    assert whole(TABLE, CASES["too deep"]) == "nests too deeply"
    assert whole(TABLE, CASES["CRLF error"]) == "is not valid JSON: Expecting value at line 3 column 32"


def _mutations(rng: random.Random, data: bytes) -> Iterator[bytes]:
    alphabet = b' \t\r\n,:[]{}"\\0123456789.eE+-tfnalsruNI\x00\x1f\xc3\xa9\xe2\x82\xac\xff'
    for _ in range(150):
        out = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(out) + 1)
            what = rng.randrange(3)
            if what == 0 and out:
                del out[min(at, len(out) - 1)]
            elif what == 1:
                out.insert(at, rng.choice(alphabet))
            elif out:
                out[min(at, len(out) - 1)] = rng.choice(alphabet)
        yield bytes(out)


def test_mutated_blobs_get_the_same_outcome():
    rng = random.Random(7)
    base = json.dumps(
        [{"args": [i, -i * 1.5, "s\u00e9" * (i % 3), None, True], "expected": {"k": [i]}} for i in range(6)],
        ensure_ascii=False,
    ).encode()
    for data in _mutations(rng, base):
        expected = whole(TABLE, data)
        for size in (1, 5, 64, None):
            assert streamed(TABLE, data, size) == expected, (size, data)


def _big_blob(blocks: int, text: int = 0) -> Iterator[bytes]:
    """`blocks` pieces of 20,000 samples (about 0.7 MiB each; with `text`, a string of that many
    characters in each sample, and 200 samples a piece), made as they are read."""
    pad = b', "%s"' % (b"x" * text) if text else b""
    block = b"".join(
        b', {"args": [%d, %d%s], "expected": %d}' % (i, i + 7, pad, 2 * i + 7) for i in range(200 if text else 20_000)
    )
    yield b'[{"args": [0, 0], "expected": 0}'
    for _ in range(blocks):
        yield block
    yield b"]\n"


def test_memory_stays_near_one_piece_whatever_the_blob_size():
    # Samples with long strings keep the number of allocations tracemalloc slows down small.
    tracemalloc.start()
    try:
        check_stream(row("exact_table"), _big_blob(256, text=4000))  # about 200 MiB
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 << 20, peak


def test_a_wrong_sample_deep_in_a_big_blob_is_named_by_its_index():
    def pieces() -> Iterator[bytes]:
        yield from _big_blob(5)

    data = list(pieces())
    data[3] = data[3].replace(b'"expected"', b'"expect"', 1)
    assert streamed(TABLE, b"".join(data), 4096) == whole(TABLE, b"".join(data))
    with pytest.raises(SampleError, match=r"^sample 40001 must have exactly the keys args and expected$"):
        check_stream(TABLE, data)


def test_a_huge_sample_is_read_in_growing_steps(monkeypatch):
    # One 4 MiB string in 1 KiB pieces: each retry reads as much again as it had, so the sample is
    # parsed a few dozen times, not four thousand.
    data = b'[{"args": ["' + b"x" * (4 << 20) + b'"], "expected": 1}]'
    decode = stream.STRICT.raw_decode
    calls = []

    def counted(text: str, index: int) -> object:
        calls.append(index)
        return decode(text, index)

    monkeypatch.setattr(stream.STRICT, "raw_decode", counted)
    assert (
        check_stream(row("exact_table", args_names=("a",)), (data[i : i + 1024] for i in range(0, len(data), 1024)))
        is None
    )
    assert 0 < len(calls) < 30
