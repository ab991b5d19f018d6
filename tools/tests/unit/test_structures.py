"""Real structures as arguments: tuples of mixed types, sets and optional values drawn by generators,
built into tuples and sets by `build`, and callables given as arguments (`{"callable": "builtins:int"}`),
through the real caller and judge; and the one-line refusals of each when it is malformed."""

from __future__ import annotations

import pytest

from tools.oracle_gate.spec.generate import (
    NONE_ODDS,
    ChoiceGen,
    IntGen,
    OptionalGen,
    SetGen,
    TupleGen,
    draw,
    gen_from_json,
    gen_to_json,
    parse_generate,
)
from tools.oracle_gate.spec.schema import parse_oracle
from tools.testing.gitrepo import oracle_toml
from tools.testing.rowrun import run_rows

FLAGS = {"tuple": [{"choice": [True, False]}, {"int": [0, 9]}, {"int": [-5, 5]}, {"choice": [True, False]}]}


def spec(fields: dict, kind: str = "bound", entry: str = "shop.calc:f"):
    found, errors = parse_generate({"count": 200, **fields}, kind, None, path="oracles/shop.toml", row="r", entry=entry)
    assert not errors, [e.args for e in errors]
    return found


class Row:
    def __init__(self, generate):
        self.id, self.seed, self.generate = "r", 1, generate


def test_a_tuple_draws_one_value_per_position_of_its_own_type():
    samples = draw(Row(spec({"flags": FLAGS})), "salt")
    for sample in samples:
        a, b, c, d = sample["flags"]
        assert type(a) is bool and type(b) is int and type(c) is int and type(d) is bool
        assert 0 <= b <= 9 and -5 <= c <= 5
    assert len({tuple(s["flags"]) for s in samples}) > 20


def test_a_set_draws_distinct_items_and_an_optional_draws_null_about_one_time_in_four():
    samples = draw(
        Row(spec({"tags": {"set": {"int": [0, 3]}, "len": [0, 6]}, "maybe": {"optional": {"int": [1, 2]}}})), "s"
    )
    for sample in samples:
        assert len(sample["tags"]) == len(set(sample["tags"])) <= 4  # only four values exist
    nones = sum(1 for s in samples if s["maybe"] is None)
    assert 200 / NONE_ODDS / 2 < nones < 200 / NONE_ODDS * 2
    assert {s["maybe"] for s in samples} == {None, 1, 2}


def test_the_new_generators_survive_the_expectations_view_and_draw_the_same():
    for gen in (TupleGen((IntGen(0, 1), ChoiceGen(('"a"',)))), SetGen(IntGen(0, 9), 1, 3), OptionalGen(IntGen(5, 6))):
        assert gen_from_json(gen_to_json(gen)) == gen
    first = draw(Row(spec({"flags": FLAGS})), "x")
    assert draw(Row(spec({"flags": FLAGS})), "x") == first != draw(Row(spec({"flags": FLAGS})), "y")


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"t": {"tuple": []}}, "generate.t.tuple", "must be an array of 1 to 64 generators"),
        ({"t": {"tuple": [{"int": [0, 1]}, 3]}}, "generate.t.tuple[1]", "must be a generator table"),
        ({"s": {"set": {"int": [0, 1]}}}, "generate.s.len", "is required for generator kind 'set'"),
        (
            {"o": {"optional": {"int": [0, 1]}, "len": [0, 1]}},
            "generate.o.len",
            "is not allowed for generator kind 'optional'",
        ),
        (
            {"c": {"choice": [{"callable": "os.path:join"}, {"callable": "elsewhere.mod:f"}]}},
            "generate.c.choice",
            "element 1: callable 'elsewhere.mod:f' is outside builtins, the standard "
            "library and the entry's package 'shop'",
        ),
        (
            {"c": {"choice": [{"callable": "int"}]}},
            "generate.c.choice",
            "element 0: callable 'int' is not of the form module:name",
        ),
    ],
)
def test_malformed_structures_are_one_line_naming_the_field(fields, field, message):
    found, errors = parse_generate(
        {"count": 3, **fields}, "bound", None, path="oracles/shop.toml", row="r", entry="shop.calc:f"
    )
    assert found is None and len(errors) == 1, [e.args for e in errors]
    assert (errors[0].path, errors[0].row, errors[0].field) == ("oracles/shop.toml", "r", field)
    assert message in str(errors[0]), str(errors[0])


def test_build_may_name_the_container_types_whatever_the_production_packages():
    row = {
        "id": "t",
        "entry": "shop.calc:f",
        "kind": "bound",
        "min": 0,
        "max": 9,
        "blob": "oracles/blobs/b.json",
        "blob_sha256": "0" * 64,
        "build": {"flags": "builtins:tuple", "tags": "builtins:frozenset"},
    }
    assert not parse_oracle(oracle_toml([row]).encode(), "oracles/shop.toml", ["shop"]).problems
    bad = dict(row, build={"flags": "builtins:eval"})
    problems = parse_oracle(oracle_toml([bad]).encode(), "oracles/shop.toml", ["shop"]).problems
    assert problems and "build.flags" in str(problems[0]), problems


CODE = {
    "shop/__init__.py": "",
    "shop/calc.py": """
    def f(flags, tags, conv=str, maybe=None):
        # Only a real tuple, a real frozenset and a real callable give the right answer.
        assert type(flags) is tuple and type(tags) is frozenset, (type(flags), type(tags))
        return conv(sum(flags[1:3]) + len(tags) + (maybe or 0))

    def fmt(amount, conv=str):
        return conv(amount) if conv is not str else "%d" % amount

    def parse(text):
        return int(text)
""",
}
ROWS = [
    {
        "id": "structures",
        "entry": "shop.calc:f",
        "kind": "agrees",
        "blob": "oracles/blobs/s.json",
        "build": {"flags": "builtins:tuple", "tags": "builtins:frozenset"},
        "reference": "oracles.reference.ref:f",
        "generate": {
            "count": 30,
            "flags": FLAGS,
            "tags": {"set": {"int": [0, 5]}, "len": [0, 4]},
            "conv": {"choice": [{"callable": "builtins:int"}, {"callable": "builtins:str"}]},
            "maybe": {"optional": {"int": [0, 3]}},
        },
    },
    {
        "id": "text_round_trip",
        "entry": "shop.calc:fmt",
        "kind": "round_trip",
        "inverse": "shop.calc:parse",
        "blob": "oracles/blobs/r.json",
    },
]
BLOBS = {
    "oracles/blobs/s.json": [
        {"flags": [True, 1, 2, False], "tags": [1, 2, 2], "conv": {"callable": "builtins:int"}},
        {"flags": [False, 3, 4, True], "tags": [], "conv": {"callable": "builtins:str"}, "maybe": 5},
    ],
    "oracles/blobs/r.json": [
        {"amount": 12, "conv": {"callable": "builtins:str"}},
        {"amount": 7, "conv": {"callable": "builtins:repr"}},
    ],
}
REFERENCE = {
    "oracles/reference/ref.py": """
def f(flags, tags, conv=None, maybe=None):
    # The reference gets the plain sample: the callable's name, the lists.
    total = sum(flags[1:3]) + len(set(tags)) + (maybe or 0)
    return total if conv == {"callable": "builtins:int"} else str(total)
"""
}


def test_tuples_sets_and_callables_reach_production_code_as_themselves(tmp_path):
    result = run_rows(tmp_path, ROWS, BLOBS, CODE, references=REFERENCE)
    assert result.judged["structures"].ok, result.judged["structures"].reasons
    # The round trip's x is its one argument that is not a callable.
    assert result.judged["text_round_trip"].ok, result.judged["text_round_trip"].reasons


def test_a_callable_outside_builtins_the_standard_library_and_the_package_is_refused(tmp_path):
    from tools.oracle_gate.spec.samples import SampleError, check_sample

    inv = parse_oracle(oracle_toml([dict(ROWS[1], blob_sha256="0" * 64)]).encode(), "oracles/shop.toml").invariants[0]
    check_sample(inv, 0, {"amount": 1, "conv": {"callable": "decimal:Decimal"}})
    with pytest.raises(SampleError, match=r"sample 3: conv: callable 'evil.mod:f' is outside builtins"):
        check_sample(inv, 3, {"amount": 1, "conv": {"callable": "evil.mod:f"}})
    with pytest.raises(SampleError, match="exactly one argument"):
        check_sample(inv, 0, {"amount": 1, "other": 2, "conv": {"callable": "builtins:str"}})


@pytest.mark.parametrize(
    "fields, field, message",
    [
        (
            {"c": {"object": {"callable": {"choice": ["elsewhere.mod:f"]}}}},
            "generate.c.object",
            "an object whose one key is callable would be read as a callable argument",
        ),
        (
            {"c": {"optional": {"choice": [{"callable": "evil.m:x"}]}}},
            "generate.c.optional.choice",
            "callable 'evil.m:x' is outside builtins",
        ),
        (
            {"c": {"list": {"choice": [{"callable": "builtins:int"}]}, "len": [1, 2]}},
            "generate.c.list.choice",
            "a callable is given only as a sample field's own value",
        ),
    ],
)
def test_a_callable_anywhere_but_a_fields_own_value_is_refused(fields, field, message):
    found, errors = parse_generate(
        {"count": 3, **fields}, "bound", None, path="oracles/shop.toml", row="r", entry="shop.calc:f"
    )
    assert found is None and [(e.field, message in str(e)) for e in errors] == [(field, True)], [str(e) for e in errors]


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            {"amount": {"int": [0, 9]}, "places": {"int": [2, 2]}},
            "has 2 field(s) that are not callables (amount, places)",
        ),
        ({"conv": {"choice": [{"callable": "builtins:str"}]}}, "has 0 field(s) that are not callables (none)"),
        (
            {"amount": {"int": [0, 9]}, "conv": {"choice": [{"callable": "builtins:str"}, 7]}},
            "may draw a callable or a plain value",
        ),
    ],
)
def test_a_generated_round_trip_draws_exactly_one_x_besides_callables(fields, message):
    found, errors = parse_generate(
        {"count": 3, **fields}, "round_trip", None, path="oracles/shop.toml", row="r", entry="shop.calc:f"
    )
    assert found is None and any(message in str(e) for e in errors), [str(e) for e in errors]
    ok, errors = parse_generate(
        {"count": 3, "amount": {"int": [0, 9]}, "conv": {"choice": [{"callable": "builtins:str"}]}},
        "round_trip",
        None,
        path="oracles/shop.toml",
        row="r",
        entry="shop.calc:f",
    )
    assert ok is not None and not errors


def test_a_round_trip_sample_without_exactly_one_x_fails_in_the_judge_not_with_a_traceback():
    from tools.oracle_gate.spec.judgement import RowData, judge_sample

    expect = {"kind": "round_trip"}
    for inputs in ([{"conv": {"callable": "builtins:str"}}], [{"a": 1, "b": 2}]):
        verdict = judge_sample(expect, 0, {"value": 1}, RowData(inputs=inputs))
        assert not verdict.ok and "a round trip needs exactly one, x" in verdict.reason, verdict
    assert judge_sample(expect, 0, {"value": 5}, RowData(inputs=[{"x": 5, "conv": {"callable": "builtins:int"}}])).ok


@pytest.mark.parametrize(
    "fields, most",
    [
        ({"count": 100_000, "s": {"set": {"int": [0, 0]}, "len": [4096, 4096]}}, "1,638,500,000"),
        ({"count": 2, "m": {"list": {"list": {"int": [0, 9]}, "len": [0, 4096]}, "len": [0, 4096]}}, "33,562,626"),
    ],
)
def test_a_row_whose_drawing_would_not_end_is_one_line(fields, most):
    found, errors = parse_generate(fields, "bound", None, path="oracles/shop.toml", row="r", entry="shop.calc:f")
    assert found is None and [e.field for e in errors] == ["generate"], [str(e) for e in errors]
    assert f"may draw {most} values" in str(errors[0]) and "more than 10,000,000" in str(errors[0])
