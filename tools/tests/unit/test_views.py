"""Unit tests of spec/views.py: the inputs view holds no bound or expected value; the expectations view does."""

from __future__ import annotations

import json

from tools.oracle_gate.spec.generate import GenerateSpec, IntGen
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.spec.views import VIEW_SCHEMA, expectation_row, input_row, input_samples, split

# Distinctive values: none of them may reach the inputs view.
LOW, HIGH, ANSWER = -31337, 987654321, 424242


def inv(ident: str, kind: str, **extra: object) -> Invariant:
    return Invariant(
        id=ident,
        entry="shop.calc:f",
        kind=kind,
        blob=f"oracles/blobs/{ident}.json",
        blob_sha256="a" * 64,
        source="oracles/shop.toml",
        **extra,
    )  # type: ignore[arg-type]


BOUND = inv(
    "sum_in_range", "bound", min=LOW, max=HIGH, seed=7, timeout_s=2.5, generate=GenerateSpec(3, (("a", IntGen(0, 1)),))
)
IDEM = inv("norm_is_idempotent", "idempotent", args=("k",), repeat=3)
TABLE = inv("add_table", "exact_table")
BOUND_SAMPLES = [{"a": 1, "b": 2}]
IDEM_SAMPLES = [{"state": {"n": 1}, "k": "x", "note": "not an argument"}]
TABLE_SAMPLES = [{"args": [1, 2], "expected": ANSWER}, {"args": [], "expected": [ANSWER]}]
PAIRS = [(BOUND, BOUND_SAMPLES), (IDEM, IDEM_SAMPLES), (TABLE, TABLE_SAMPLES)]


def test_split_gives_both_views_sorted_by_id():
    inputs, expectations = split(PAIRS)
    assert inputs == {
        "schema": VIEW_SCHEMA,
        "rows": [
            {
                "id": "add_table",
                "entry": "shop.calc:f",
                "kind": "exact_table",
                "seed": 0,
                "timeout_s": 60,
                "memory_mib": 2048,
                "samples": [[1, 2], []],
            },
            {
                "id": "norm_is_idempotent",
                "entry": "shop.calc:f",
                "kind": "idempotent",
                "seed": 0,
                "timeout_s": 60,
                "memory_mib": 2048,
                "samples": [{"state": {"n": 1}, "kwargs": {"k": "x"}}],
                "args": ["k"],
                "repeat": 3,
            },
            {
                "id": "sum_in_range",
                "entry": "shop.calc:f",
                "kind": "bound",
                "seed": 7,
                "timeout_s": 2.5,
                "memory_mib": 2048,
                "samples": [{"a": 1, "b": 2}],
            },
        ],
    }
    common = {"entry": "shop.calc:f", "source": "oracles/shop.toml"}
    assert expectations == {
        "schema": VIEW_SCHEMA,
        "rows": [
            {
                "id": "add_table",
                "kind": "exact_table",
                "blob": "oracles/blobs/add_table.json",
                "blob_samples": 2,
                "generated": 0,
                "expected": [ANSWER, [ANSWER]],
                "inputs": [[1, 2], []],
                "seed": 0,
                **common,
            },
            {
                "id": "norm_is_idempotent",
                "kind": "idempotent",
                "blob": "oracles/blobs/norm_is_idempotent.json",
                "blob_samples": 1,
                "generated": 0,
                "repeat": 3,
                "args": ["k"],
                "inputs": [{"state": {"n": 1}, "kwargs": {"k": "x"}}],
                "seed": 0,
                **common,
            },
            {
                "id": "sum_in_range",
                "kind": "bound",
                "blob": "oracles/blobs/sum_in_range.json",
                "blob_samples": 1,
                "generated": 3,
                "min": LOW,
                "max": HIGH,
                "inputs": [{"a": 1, "b": 2}],
                "seed": 7,
                "generate": {"count": 3, "fields": [["a", {"int": [0, 1]}]]},
                **common,
            },
        ],
    }
    assert VIEW_SCHEMA == 1


def test_the_inputs_view_never_holds_a_bound_or_an_expected_value():
    inputs, expectations = split(PAIRS)
    text = json.dumps(inputs)
    for secret in (LOW, HIGH, ANSWER):
        assert str(secret) not in text
        assert str(secret) in json.dumps(expectations)
    for row in inputs["rows"]:
        assert set(row) <= {"id", "entry", "kind", "seed", "timeout_s", "memory_mib", "samples", "args", "repeat"}
        assert not {"min", "max", "expected", "blob", "blob_sha256", "source"} & set(row)
    assert "expected" not in text and "not an argument" not in text


def test_the_expectations_view_holds_the_callers_inputs_for_the_failure_report_only():
    # The judge shows a failing sample's inputs; it judges by none of them. They are exactly the
    # inputs view's samples, so nothing a sample holds besides its arguments reaches the judge either.
    inputs, expectations = split(PAIRS)
    for given, sealed in zip(inputs["rows"], expectations["rows"], strict=True):
        assert sealed["inputs"] == given["samples"] and "samples" not in sealed
    assert "not an argument" not in json.dumps(expectations)


def test_the_generator_in_the_expectations_view_draws_the_same_samples():
    from tools.oracle_gate.spec.generate import ChoiceGen, FloatGen, ListGen, ObjectGen, StringGen, draw, spec_from_json

    spec = GenerateSpec(
        5,
        (
            ("a", IntGen(-3, 3)),
            ("b", FloatGen(-1.5, 2.0)),
            (
                "c",
                ListGen(
                    ObjectGen((("q", ChoiceGen(('"x"', "1", "1.0", "true"))), ("s", StringGen("ab\u00e9", 0, 3)))), 0, 2
                ),
            ),
        ),
    )
    row = inv("gen", "bound", min=0, max=1, generate=spec, seed=3)
    sealed = json.loads(json.dumps(expectation_row(row, [])))
    assert spec_from_json(sealed["generate"]) == spec
    again = inv("gen", "bound", min=0, max=1, generate=spec_from_json(sealed["generate"]), seed=sealed["seed"])
    assert draw(again, "s4lt") == draw(row, "s4lt") and draw(row, "s4lt", 2) == draw(row, "s4lt")[:2]


def test_input_samples_per_kind():
    assert input_samples(BOUND, [{"b": 2, "a": 1}]) == [{"b": 2, "a": 1}]
    assert input_samples(IDEM, [{"k": 5, "state": [1], "other": 0}]) == [{"state": [1], "kwargs": {"k": 5}}]
    assert input_samples(TABLE, [{"args": [3, "x"], "expected": 9}]) == [[3, "x"]]
    assert input_samples(TABLE, []) == []


def test_input_samples_are_copies():
    bound, table = [{"a": 1}], [{"args": [1], "expected": 1}]
    shown_bound, shown_table = input_samples(BOUND, bound), input_samples(TABLE, table)
    shown_bound[0]["a"] = 2
    shown_table[0].append(2)
    assert bound == [{"a": 1}] and table == [{"args": [1], "expected": 1}]


def test_idempotent_kwargs_follow_the_row_args_order():
    row = inv("two_args", "idempotent", args=("z", "a"), repeat=2)
    sample = input_samples(row, [{"a": 1, "state": 0, "z": 2}])[0]
    assert list(sample["kwargs"]) == ["z", "a"]
    assert input_row(row, [])["args"] == ["z", "a"]


def test_input_row_and_expectation_row_match_split():
    inputs, expectations = split([(TABLE, TABLE_SAMPLES)])
    assert inputs["rows"] == [input_row(TABLE, TABLE_SAMPLES)]
    assert expectations["rows"] == [expectation_row(TABLE, TABLE_SAMPLES)]


def test_split_of_no_rows():
    assert split([]) == ({"schema": 1, "rows": []}, {"schema": 1, "rows": []})


def test_split_names_the_production_packages_in_the_inputs_view_only_when_given():
    inputs, expectations = split(PAIRS, ("shop", "billing", "shop"))
    assert inputs["production_packages"] == ["billing", "shop"]
    assert "production_packages" not in expectations
    assert "production_packages" not in split(PAIRS)[0]


def test_a_pair_kinds_blob_sample_is_passed_in_args_names_order_whatever_its_key_order():
    # A blob is JSON written by hand: {"b": 2, "a": 1} is f(a=1, b=2), so the caller gets [1, 2]
    # (its `build` of `a` applies to 1), as a drawn sample in args_names order would be.
    for kind in ("antisymmetric", "commutative"):
        row = inv("pair", kind, args_names=("a", "b"))
        assert input_samples(row, [{"b": 2, "a": 1}, {"a": 3, "b": 4}]) == [[1, 2], [3, 4]]


def test_a_raises_goes_to_the_expectations_view_alone():
    table = [{"args": ["x"], "raises": "ValueError"}, {"args": ["1"], "expected": 1}]
    bound = [{"a": "x", "raises": "shop.calc:ParseError"}, {"a": "1"}]
    assert input_row(TABLE, table)["samples"] == [["x"], ["1"]]
    assert input_row(BOUND, bound)["samples"] == [{"a": "x"}, {"a": "1"}]
    assert "raises" not in json.dumps(input_row(TABLE, table)) + json.dumps(input_row(BOUND, bound))
    table_expect, bound_expect = expectation_row(TABLE, table), expectation_row(BOUND, bound)
    assert (table_expect["raises"], table_expect["expected"]) == (["ValueError", None], [None, 1])
    assert bound_expect["raises"] == ["shop.calc:ParseError", None]
    assert bound_expect["inputs"] == [{"a": "x"}, {"a": "1"}]
    assert "raises" not in expectation_row(TABLE, TABLE_SAMPLES)
    agrees = inv("p", "agrees", reference="oracles.reference.r:p", raises_agree=True)
    assert expectation_row(agrees, [{"a": 1}])["raises_agree"] is True
