"""Unit tests of samples.py: strict JSON parsing of blobs (load_samples) and each kind's sample shape (check_shape)."""

from __future__ import annotations

import pytest

from tools.oracle_gate.spec.samples import SampleError, check_shape, load_samples
from tools.oracle_gate.spec.schema import Invariant


def row(kind: str, args: tuple[str, ...] = ()) -> Invariant:
    extra = {"bound": {"min": 0, "max": 1}, "idempotent": {"args": args, "repeat": 2}, "exact_table": {}}[kind]
    return Invariant(
        id="r",
        entry="shop.calc:add",
        kind=kind,
        blob="oracles/blobs/r.json",
        blob_sha256="0" * 64,
        source="oracles/shop.toml",
        **extra,
    )  # type: ignore[arg-type]


def refusal(data: bytes) -> str:
    with pytest.raises(SampleError) as caught:
        load_samples(data)
    return str(caught.value)


def test_plain_json_keeps_every_type_exactly():
    parsed = load_samples(b'[{"a": 1, "b": 1.0, "c": true, "d": null, "e": "x", "f": [1e308]}]\r\n')
    assert parsed == [{"a": 1, "b": 1.0, "c": True, "d": None, "e": "x", "f": [1e308]}]
    values = parsed[0]
    assert (type(values["a"]), type(values["b"]), type(values["c"])) == (int, float, bool)


def test_a_top_level_that_is_not_an_array_still_parses():
    # Parsing is only JSON; the array rule is check_shape's.
    assert load_samples(b'{"a": 1}') == {"a": 1}
    assert load_samples(b"3") == 3


@pytest.mark.parametrize(
    "data, message",
    [
        (b"[NaN]", "is not usable JSON: NaN is not valid JSON"),
        (b"[Infinity]", "is not usable JSON: Infinity is not valid JSON"),
        (b'{"a": -Infinity}', "is not usable JSON: -Infinity is not valid JSON"),
        (b"[1e999]", "is not usable JSON: 1e999 overflows to infinity, which is not valid JSON"),
        (b'{"a": 1, "a": 2}', "is not usable JSON: object key 'a' appears twice"),
        (b'[{"x": {"b": 1, "b": 1}}]', "is not usable JSON: object key 'b' appears twice"),
        (b"[1,", "is not valid JSON: Expecting value at line 1 column 4"),
        (b"", "is not valid JSON: Expecting value at line 1 column 1"),
        (b"[1] [2]", "is not valid JSON: Extra data at line 1 column 5"),
        (b"[1,\n 'a']", "is not valid JSON: Expecting value at line 2 column 2"),
        (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
    ],
)
def test_refused_json(data, message):
    assert refusal(data) == message


def test_an_integer_too_long_to_convert_is_refused():
    assert refusal(b"[" + b"7" * 5000 + b"]").startswith(
        "is not usable JSON: Exceeds the limit (4300 digits) for integer string conversion"
    )


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\xef\xbb\xbf[]", "starts with a UTF-8 byte order mark (EF BB BF); save the file as UTF-8 without BOM"),
        (
            b"[1]\x00",
            "has a NUL byte (U+0000) at line 1, column 4 (byte offset 3), which JSON does not allow; "
            "delete it (a file with many NULs was saved as UTF-16 or is not text)",
        ),
        (
            b'["\xff"]',
            "is not UTF-8: byte 0xFF at line 1, column 3 (byte offset 2) is '\xff' in Latin-1/Windows-1252, "
            "so the file was probably saved in that encoding; save it as UTF-8",
        ),
    ],
)
def test_bytes_that_are_not_clean_utf8_are_named_in_words(data, message):
    assert refusal(data) == message


def test_sample_error_is_a_value_error():
    assert issubclass(SampleError, ValueError)


@pytest.mark.parametrize("samples", [[], {}, {"args": [1], "expected": 1}, "[]", None, 0])
@pytest.mark.parametrize("kind", ["bound", "idempotent", "exact_table"])
def test_samples_must_be_a_non_empty_array(kind, samples):
    with pytest.raises(SampleError, match=r"^must be a non-empty JSON array of samples$"):
        check_shape(row(kind, ("k",)), samples)


@pytest.mark.parametrize("kind", ["bound", "idempotent", "exact_table"])
def test_every_sample_must_be_an_object(kind):
    good = {"bound": {"a": 1}, "idempotent": {"state": 1, "k": 2}, "exact_table": {"args": [], "expected": 0}}[kind]
    with pytest.raises(SampleError) as caught:
        check_shape(row(kind, ("k",)), [good, [1, 2]])
    assert str(caught.value) == "sample 1 must be a JSON object"


def test_bound_samples_are_any_objects():
    assert check_shape(row("bound"), [{}, {"a": 1, "b": [2]}]) is None


@pytest.mark.parametrize(
    "sample, message",
    [
        ({"k": 1, "j": 2}, "sample 1 lacks state"),
        ({"state": {}}, "sample 1 lacks k, j"),
        ({"state": {}, "j": 2}, "sample 1 lacks k"),
        ({}, "sample 1 lacks state, k, j"),
    ],
)
def test_idempotent_samples_need_state_and_every_arg(sample, message):
    inv = row("idempotent", ("k", "j"))
    check_shape(inv, [{"state": None, "k": 0, "j": 0, "extra": 1}])
    with pytest.raises(SampleError) as caught:
        check_shape(inv, [{"state": None, "k": 0, "j": 0}, sample])
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "sample, message",
    [
        ({"args": [1]}, "sample 0 must have exactly the keys args and expected"),
        ({"expected": 1}, "sample 0 must have exactly the keys args and expected"),
        ({"args": [1], "expected": 1, "note": "x"}, "sample 0 must have exactly the keys args and expected"),
        ({"args": {"a": 1}, "expected": 1}, "sample 0: args must be a JSON array"),
        ({"args": "ab", "expected": 1}, "sample 0: args must be a JSON array"),
    ],
)
def test_exact_table_samples_are_args_and_expected_only(sample, message):
    with pytest.raises(SampleError) as caught:
        check_shape(row("exact_table"), [sample, {"args": [], "expected": None}])
    assert str(caught.value) == message


def test_exact_table_accepts_any_expected_value():
    assert check_shape(row("exact_table"), [{"args": [], "expected": None}, {"args": [1, [2]], "expected": {}}]) is None


def test_loaded_blobs_pass_the_shape_check_end_to_end():
    samples = load_samples(b'[{"state": {"n": 1}, "k": "x"}]')
    assert check_shape(row("idempotent", ("k",)), samples) is None


def kind_row(kind: str, **fields: object) -> Invariant:
    """A row of any kind on `shop.calc:add`, with the given fields."""
    return Invariant(
        id="r",
        entry="shop.calc:add",
        kind=kind,
        blob="oracles/blobs/r.json",
        blob_sha256="0" * 64,
        source="oracles/shop.toml",
        **fields,
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("inv", "sample"),
    [
        (row("exact_table"), {"args": ["x"], "raises": "ValueError"}),
        (row("exact_table"), {"args": ["x"], "raises": "shop.errors:ParseError"}),
        (row("exact_table"), {"args": ["x"], "raises": "decimal:InvalidOperation"}),
        (row("bound"), {"a": "x", "raises": "TypeError"}),
        (kind_row("matches", pattern="x"), {"a": "x", "raises": "KeyError"}),
        (kind_row("composed", entries=("shop.calc:a", "shop.calc:b"), min=0, max=1), {"a": 1, "raises": "ValueError"}),
    ],
)
def test_a_sample_of_a_kind_that_calls_once_may_name_what_it_must_raise(inv, sample):
    assert check_shape(inv, [sample]) is None


RAISES_WHAT = "write a builtin exception as its bare name (ValueError), another as module:Class (pkg.mod:ParseError)"


@pytest.mark.parametrize(
    ("inv", "sample", "message"),
    [
        (
            row("exact_table"),
            {"args": [1], "expected": 1, "raises": "ValueError"},
            "sample 0: raises: a sample gives either expected or raises, not both",
        ),
        (
            row("exact_table"),
            {"args": [1], "raises": 3},
            "sample 0: raises: must be a string naming an exception class, got int",
        ),
        (
            row("exact_table"),
            {"args": [1], "raises": ["ValueError"]},
            "sample 0: raises: must be a string naming an exception class, got list",
        ),
        (
            row("exact_table"),
            {"args": [1], "raises": "ValueErorr"},
            f"sample 0: raises: 'ValueErorr' is not an exception class of the builtins; {RAISES_WHAT}",
        ),
        (
            row("bound"),
            {"a": 1, "raises": "shop errors:E"},
            f"sample 0: raises: 'shop errors:E' is not a class name; {RAISES_WHAT}",
        ),
        (
            row("bound"),
            {"a": 1, "raises": "builtins:ValueError"},
            "sample 0: raises: write 'builtins:ValueError' as its bare name 'ValueError'",
        ),
        (
            row("exact_table"),
            {"args": [1], "raises": "other.errors:E"},
            "sample 0: raises: 'other.errors:E' is outside the builtins, the standard library and the entry's "
            "package 'shop'",
        ),
        (
            row("exact_table"),
            {"args": [1], "raises": "ValueError", "note": 1},
            "sample 0 must have exactly the keys args and raises",
        ),
        (
            row("idempotent", ("k",)),
            {"state": 1, "k": 1, "raises": "ValueError"},
            "sample 0: raises: kind 'idempotent' takes no raises; the kinds that call the entry once do "
            "(bound, exact_table, matches, composed)",
        ),
        (
            kind_row("round_trip", inverse="shop.calc:b"),
            {"x": 1, "raises": "ValueError"},
            "sample 0: raises: kind 'round_trip' takes no raises; the kinds that call the entry once do "
            "(bound, exact_table, matches, composed)",
        ),
        (
            kind_row("agrees", reference="oracles.reference.r:f"),
            {"a": 1, "raises": "ValueError"},
            "sample 0: raises: the stored samples of this agrees row are judged by its reference; give the row "
            "raises_agree = true to count both raising the same class as agreement",
        ),
        (
            kind_row("composed", entries=("shop.calc:a", "shop.calc:b"), reference="oracles.reference.r:f"),
            {"a": 1, "raises": "ValueError"},
            "sample 0: raises: the stored samples of this composed row are judged by its reference; give the "
            "row raises_agree = true to count both raising the same class as agreement",
        ),
    ],
)
def test_a_bad_raises_is_one_line_naming_the_sample_and_the_field(inv, sample, message):
    with pytest.raises(SampleError) as caught:
        check_shape(inv, [sample])
    assert str(caught.value) == message
