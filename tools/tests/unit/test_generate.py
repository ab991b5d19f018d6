"""Generated samples: deterministic per (id, seed, salt), within every generator's range, in each kind's shape."""

from __future__ import annotations

import hashlib
import json
import math
import random

import pytest

from tools.oracle_gate.spec.generate import MAX_DEPTH, derive_seed, draw, spec_from_json, spec_to_json
from tools.oracle_gate.spec.samples import check_shape
from tools.oracle_gate.spec.schema import Invariant, parse_oracle

PATH = "oracles/x.toml"


def invariant(
    generate: str,
    *,
    kind: str = "bound",
    ident: str = "gen_row",
    seed: int | None = None,
    args: tuple[str, ...] = ("k",),
) -> Invariant:
    """Parses one valid row whose `[invariant.generate]` table has the TOML lines `generate`."""
    head = {
        "bound": "min = 0\nmax = 1\n",
        "idempotent": f"args = {json.dumps(list(args))}\nrepeat = 2\n",
    }[kind]
    text = (
        "schema = 1\n[[invariant]]\n"
        f'id = "{ident}"\nentry = "shop.calc:add"\nkind = "{kind}"\n{head}'
        f'blob = "oracles/blobs/t.json"\nblob_sha256 = "{"a" * 64}"\n'
        + (f"seed = {seed}\n" if seed is not None else "")
        + "[invariant.generate]\n"
        + generate
        + "\n"
    )
    result = parse_oracle(text.encode(), PATH, ("shop",))
    assert result.problems == [], [str(p) for p in result.problems]
    return result.invariants[0]


CART = """count = 40
lines = { list = { object = { quantity = { int = [0, 1000] }, unit_price_cents = { int = [0, 10000000] } } }, len = [0, 6] }
discount_cents = { int = [0, 5000] }
tax_rate = { choice = ["0", "0.0825", "0.2"] }
"""  # noqa: E501 - a TOML inline table is one line


def values_of(samples: list[dict], name: str) -> list:
    return [sample[name] for sample in samples]


def assert_plain_json(value: object) -> None:
    """Only int, float, str, bool, None, list and dict with str keys, nothing subclassed."""
    if type(value) is list:
        for item in value:
            assert_plain_json(item)
    elif type(value) is dict:
        for key, item in value.items():
            assert type(key) is str
            assert_plain_json(item)
    else:
        assert value is None or type(value) in (int, float, str, bool), type(value)
        assert type(value) is not float or math.isfinite(value)


# --- determinism and the seed contract ---


def test_same_row_and_salt_give_identical_samples():
    inv = invariant(CART, seed=20261130)
    first = draw(inv, "run-1")
    assert first == draw(inv, "run-1") == draw(invariant(CART, seed=20261130), "run-1")
    assert json.dumps(first) == json.dumps(draw(inv, "run-1"))  # same key order and types too
    assert len(first) == 40


def test_a_spec_written_to_json_and_read_back_draws_the_same_samples():
    # The expectations view carries the generator this way, for the judge to show a failing
    # generated sample's inputs (docs/design.md section 8).
    inv = invariant(CART, seed=20261130)
    assert inv.generate is not None
    back = spec_from_json(json.loads(json.dumps(spec_to_json(inv.generate))))
    assert back == inv.generate
    assert draw(invariant(CART, seed=20261130), "run-1", limit=7) == draw(inv, "run-1")[:7]
    assert draw(inv, "run-1", limit=10**9) == draw(inv, "run-1") and draw(inv, "run-1", limit=0) == []


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        {"count": 1},
        {"count": "1", "fields": []},
        {"count": 1, "fields": [["a"]]},
        {"count": 1, "fields": [["a", {"int": [1]}]]},
        {"count": 1, "fields": [["a", {"int": [1, 2], "len": [0, 1]}]]},
        {"count": 1, "fields": [["a", {"float": [1, 2]}]]},
        {"count": 1, "fields": [["a", {"choice": [1]}]]},
        {"count": 1, "fields": [["a", {"string": "ab", "len": [2, 1]}]]},
        {"count": 1, "fields": [["a", {"list": {}}]]},
        {"count": 1, "fields": [["a", {"object": [[1, {"int": [0, 1]}]]}]]},
    ],
)
def test_a_spec_json_that_spec_to_json_does_not_write_is_refused(value):
    with pytest.raises(ValueError):
        spec_from_json(value)


def test_another_salt_gives_other_samples():
    inv = invariant(CART, seed=20261130)
    assert draw(inv, "run-1") != draw(inv, "run-2")
    assert draw(inv, "") != draw(inv, "run-1")


def test_the_id_and_the_seed_feed_the_draw():
    base = draw(invariant(CART, seed=1), "s")
    assert draw(invariant(CART, seed=2), "s") != base
    assert draw(invariant(CART, seed=1, ident="other_row"), "s") != base


def test_an_absent_seed_is_seed_zero():
    assert draw(invariant(CART), "s") == draw(invariant(CART, seed=0), "s")
    assert derive_seed("r", None, "s") == derive_seed("r", 0, "s")


def test_the_seed_derivation_is_the_documented_one():
    assert derive_seed("r", None, "s") == hashlib.sha256(b"r\x000\x00s").digest()
    assert derive_seed("row_a", -12, "pr 7/\u00e9") == hashlib.sha256("row_a\x00-12\x00pr 7/\u00e9".encode()).digest()
    assert derive_seed("r", 0, "\ud800") == hashlib.sha256(b"r\x000\x00\xed\xa0\x80").digest()
    inv = invariant("count = 3\nx = { float = [0, 1] }", seed=5, ident="doc_row")
    rng = random.Random(hashlib.sha256(b"doc_row\x005\x00salt").digest())
    assert values_of(draw(inv, "salt"), "x") == [rng.random() for _ in range(3)]


def test_golden_samples_do_not_change_between_releases():
    # A replay contract: these values must stay the same for this row and salt on every run.
    inv = invariant(
        'count = 3\nn = { int = [0, 1000] }\ns = { string = "abc", len = [0, 4] }\n'
        'c = { choice = ["x", 2, 2.5, false] }',
        seed=7,
        ident="golden",
    )
    assert draw(inv, "pr-17") == [
        {"n": 54, "s": "a", "c": 2},
        {"n": 153, "s": "c", "c": 2.5},
        {"n": 451, "s": "ca", "c": False},
    ]


def test_a_row_without_generate_draws_nothing():
    text = (
        f'schema = 1\n[[invariant]]\nid = "plain"\nentry = "shop.calc:add"\nkind = "exact_table"\n'
        f'blob = "oracles/blobs/t.json"\nblob_sha256 = "{"a" * 64}"\n'
    )
    inv = parse_oracle(text.encode(), PATH, ("shop",)).invariants[0]
    assert inv.generate is None
    assert draw(inv, "s") == []


# --- every generator kind within its range ---


def test_int_stays_in_range_and_reaches_both_ends():
    xs = values_of(draw(invariant("count = 500\nx = { int = [-2, 2] }"), "s"), "x")
    assert all(type(x) is int for x in xs)
    assert set(xs) == {-2, -1, 0, 1, 2}


def test_int_over_the_whole_64_bit_range_and_a_single_value():
    inv = invariant(f"count = 200\nx = {{ int = [{-(2**63)}, {2**63 - 1}] }}\ny = {{ int = [7, 7] }}")
    samples = draw(inv, "s")
    assert all(-(2**63) <= x <= 2**63 - 1 for x in values_of(samples, "x"))
    assert len(set(values_of(samples, "x"))) == 200
    assert set(values_of(samples, "y")) == {7}


@pytest.mark.parametrize(
    ("lo", "hi"),
    [
        ("0", "1"),
        ("-2.5", "-2.25"),
        ("-1.7e308", "1.7e308"),
        ("3", "3"),
        ("-1e-300", "1e-300"),
        (str(-(2**63)), str(2**63 - 1)),
    ],
)
def test_float_is_a_finite_float_in_range(lo, hi):
    xs = values_of(draw(invariant(f"count = 300\nx = {{ float = [{lo}, {hi}] }}"), "s"), "x")
    assert all(type(x) is float and math.isfinite(x) and float(lo) <= x <= float(hi) for x in xs)
    if lo != hi:
        assert len(set(xs)) > 250


def test_choice_picks_only_the_given_values_and_keeps_their_types():
    xs = values_of(draw(invariant('count = 400\nx = { choice = [1, 1.0, true, "1", [1, { a = 2 }], {}] }'), "s"), "x")
    reprs = {json.dumps(x) for x in xs}
    assert reprs == {"1", "1.0", "true", '"1"', '[1, {"a": 2}]', "{}"}
    assert {type(x) for x in xs} == {int, float, bool, str, list, dict}


def test_choice_values_are_fresh_copies():
    samples = draw(invariant("count = 2\nx = { choice = [[1, 2]] }"), "s")
    samples[0]["x"].append(3)
    assert samples[1]["x"] == [1, 2]
    assert draw(invariant("count = 2\nx = { choice = [[1, 2]] }"), "s")[0]["x"] == [1, 2]


def test_string_length_and_alphabet():
    samples = draw(
        invariant(
            'count = 300\nx = { string = "ab\u00e9\U0001f600", len = [2, 5] }\ny = { string = "z", len = [0, 0] }'
        ),
        "s",
    )
    xs = values_of(samples, "x")
    assert all(2 <= len(x) <= 5 and set(x) <= set("ab\u00e9\U0001f600") for x in xs)
    assert {len(x) for x in xs} == {2, 3, 4, 5}
    assert set("".join(xs)) == set("ab\u00e9\U0001f600")
    assert set(values_of(samples, "y")) == {""}


def test_string_alphabet_repeats_weight_characters():
    xs = "".join(values_of(draw(invariant('count = 200\nx = { string = "aaab", len = [10, 10] }'), "s"), "x"))
    assert xs.count("a") > 2 * xs.count("b") > 0


def test_list_length_and_items():
    samples = draw(
        invariant(
            "count = 300\nx = { list = { int = [0, 9] }, len = [1, 4] }\ny = { list = { int = [0, 9] }, len = [0, 0] }"
        ),
        "s",
    )
    xs = values_of(samples, "x")
    assert {len(x) for x in xs} == {1, 2, 3, 4}
    assert all(type(x) is list and all(type(i) is int and 0 <= i <= 9 for i in x) for x in xs)
    assert all(y == [] for y in values_of(samples, "y"))


def test_object_has_exactly_its_keys_in_order():
    spec = (
        'count = 50\nx = { object = { b = { int = [0, 1] }, a = { string = "q", '
        'len = [1, 1] }, "unit price" = { float = [0, 1] } } }'
    )
    xs = values_of(draw(invariant(spec), "s"), "x")
    assert all(list(x) == ["b", "a", "unit price"] for x in xs)
    assert all(x["a"] == "q" and x["b"] in (0, 1) and 0.0 <= x["unit price"] <= 1.0 for x in xs)


def test_the_cart_example_matches_its_spec():
    samples = draw(invariant(CART, seed=20261130), "pr-1")
    for sample in samples:
        assert list(sample) == ["lines", "discount_cents", "tax_rate"]
        assert 0 <= len(sample["lines"]) <= 6
        for line in sample["lines"]:
            assert list(line) == ["quantity", "unit_price_cents"]
            assert 0 <= line["quantity"] <= 1000 and 0 <= line["unit_price_cents"] <= 10_000_000
        assert 0 <= sample["discount_cents"] <= 5000
        assert sample["tax_rate"] in ("0", "0.0825", "0.2")
        assert_plain_json(sample)


def test_sixteen_levels_of_nesting_draw():
    spec = "{ int = [0, 1] }"
    for _ in range(MAX_DEPTH - 1):
        spec = "{ list = " + spec + ", len = [1, 1] }"
    value = draw(invariant("count = 1\nx = " + spec), "s")[0]["x"]
    for _ in range(MAX_DEPTH - 1):
        assert type(value) is list and len(value) == 1
        value = value[0]
    assert value in (0, 1)


# --- shapes per kind ---


def test_bound_samples_are_keyword_arguments_in_written_order():
    inv = invariant("count = 5\nzeta = { int = [0, 1] }\nalpha = { int = [0, 1] }\nstate = { int = [0, 1] }")
    samples = draw(inv, "s")
    assert len(samples) == 5
    assert all(list(s) == ["zeta", "alpha", "state"] for s in samples)
    check_shape(inv, samples)


def test_idempotent_samples_have_state_then_args():
    inv = invariant(
        "count = 7\namount_cents = { int = [1, 100] }\n"
        'refund_id = { string = "0123456789abcdef", len = [8, 8] }\n'
        "state = { object = { refunded = { list = { int = [0, 5] }, len = [0, 3] } } }",
        kind="idempotent",
        args=("refund_id", "amount_cents"),
    )
    samples = draw(inv, "s")
    assert len(samples) == 7
    assert all(list(s) == ["state", "refund_id", "amount_cents"] for s in samples)
    assert all(list(s["state"]) == ["refunded"] and len(s["refund_id"]) == 8 for s in samples)
    check_shape(inv, samples)
    for sample in samples:
        assert_plain_json(sample)


def test_idempotent_field_order_as_written_does_not_change_the_draw():
    a = invariant("count = 9\nstate = { int = [0, 99] }\nk = { int = [0, 99] }", kind="idempotent")
    b = invariant("count = 9\nk = { int = [0, 99] }\nstate = { int = [0, 99] }", kind="idempotent")
    assert a == b
    assert draw(a, "s") == draw(b, "s")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            "state = { int = [0, 1] }",
            ("generate", "has no generator for k; an idempotent row generates state and every name in args"),
        ),
        (
            "k = { int = [0, 1] }",
            ("generate", "has no generator for state; an idempotent row generates state and every name in args"),
        ),
        (
            "state = { int = [0, 1] }\nk = { int = [0, 1] }\nextra = { int = [0, 1] }",
            ("generate.extra", "is neither state nor a name in args; an idempotent row generates exactly those"),
        ),
    ],
)
def test_idempotent_generates_exactly_state_and_args(fields, problem):
    text = (
        f'schema = 1\n[[invariant]]\nid = "idem"\nentry = "shop.calc:add"\nkind = "idempotent"\nargs = ["k"]\n'
        f'repeat = 2\nblob = "oracles/blobs/t.json"\nblob_sha256 = "{"a" * 64}"\n'
        f"[invariant.generate]\ncount = 1\n{fields}\n"
    )
    result = parse_oracle(text.encode(), PATH, ("shop",))
    assert [(e.path, e.row, e.field, e.code, e.message) for e in result.problems] == [
        (PATH, "idem", problem[0], 5, problem[1])
    ]


def test_count_is_exact_at_the_limits():
    assert len(draw(invariant("count = 1\nx = { int = [0, 1] }"), "s")) == 1
    assert len(draw(invariant("count = 100000\nx = { int = [0, 1] }"), "s")) == 100_000


# --- one_of and pieces ---


def test_one_of_draws_from_every_option_and_nothing_else():
    inv = invariant('count = 300\nk = { one_of = [{ int = [0, 2] }, { choice = ["x"] }, { int = [100, 100] }] }')
    xs = values_of(draw(inv, "s"), "k")
    assert set(xs) == {0, 1, 2, "x", 100}


def test_pieces_come_whole_beside_the_alphabet():
    inv = invariant('count = 300\nk = { string = " ", len = [1, 3], pieces = ["&#1;", "Word"] }')
    xs = values_of(draw(inv, "s"), "k")
    assert all(x.replace("&#1;", "").replace("Word", "").strip() == "" for x in xs)
    assert any("&#1;" in x for x in xs) and any("Word" in x for x in xs) and any(" " in x for x in xs)
    assert max(len(x) for x in xs) == 12  # three pieces of four characters: len counts items


def test_one_of_and_pieces_survive_the_json_view():
    inv = invariant('count = 20\nk = { one_of = [{ string = "ab", len = [0, 4], pieces = ["cd"] }, { int = [0, 9] }] }')
    assert inv.generate is not None
    assert spec_from_json(json.loads(json.dumps(spec_to_json(inv.generate)))) == inv.generate


def test_a_string_without_pieces_draws_as_before():
    plain = draw(invariant('count = 50\nk = { string = "abc", len = [0, 6] }'), "s")
    assert plain == draw(invariant('count = 50\nk = { string = "abc", len = [0, 6] }'), "s")
    assert all(set(v) <= set("abc") for v in values_of(plain, "k"))
