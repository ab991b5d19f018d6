"""Results that lie are failed samples: the judge compares plain JSON values it parsed itself; and a
failed row shows its failing samples (index from 0, inputs, result, expected value) without
changing its observation digest."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tools.oracle_gate.actions.judge import to_junit
from tools.oracle_gate.runs.results import read_result
from tools.oracle_gate.spec.judgement import MAX_SHOWN, MAX_SHOWN_CHARS, FailingSample, FailingSamples, judge_row
from tools.testing.rowrun import BOUND, BOUND_BLOB, IDEM, IDEM_BLOB, TABLE, TABLE_BLOB, calc, run_rows

LIARS = {
    "eq_always_true": """
        class Yes:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            __hash__ = object.__hash__
        def add(a, b): return Yes()
    """,
    "int_subclass": """
        class Int(int):
            def __eq__(self, other): return True
            __hash__ = int.__hash__
        def add(a, b): return Int(0)
    """,
    "index_and_float": """
        class Num:
            def __index__(self): return 3
            def __float__(self): return 3.0
            def __int__(self): return 3
        def add(a, b): return Num()
    """,
    "str_subclass": """
        class S(str):
            pass
        def add(a, b): return S(str(a + b))
    """,
    "list_subclass": """
        class L(list):
            pass
        def add(a, b): return L([a + b])
    """,
    "dict_subclass": """
        class D(dict):
            pass
        def add(a, b): return D(x=a + b)
    """,
    "bool_for_int": """
        def add(a, b): return True
    """,
    "float_for_int": """
        def add(a, b): return float(a + b)
    """,
}


@pytest.mark.parametrize("liar", sorted(LIARS))
def test_a_lying_result_fails_exact_table(tmp_path, liar):
    result = run_rows(tmp_path, TABLE, TABLE_BLOB, calc(LIARS[liar]))
    judged = result.judged["add_table"]
    assert not judged.ok
    assert len(judged.reasons) == 2, judged.reasons


def test_an_honest_entry_passes_every_kind(tmp_path):
    body = """
        def add(a, b): return a + b
        def total(a, b): return a + b
        def norm(state, k): return {"n": state["n"], "k": k}
    """
    result = run_rows(tmp_path, TABLE + BOUND + IDEM, {**TABLE_BLOB, **BOUND_BLOB, **IDEM_BLOB}, calc(body))
    assert {i: j.ok for i, j in result.judged.items()} == {
        "add_table": True,
        "sum_in_range": True,
        "norm_is_idempotent": True,
    }


@pytest.mark.parametrize(
    "body",
    [
        "class N:\n    def __le__(self, o): return True\n    def __ge__(self, o): return True\n"
        "def total(a, b): return N()\n",
        "class N(int):\n    pass\ndef total(a, b): return N(5)\n",
        "def total(a, b): return float('nan')\n",
        "def total(a, b): return True\n",
        "def total(a, b): return 10 ** 5000\n",
    ],
)
def test_a_lying_result_fails_bound(tmp_path, body):
    result = run_rows(tmp_path, BOUND, BOUND_BLOB, calc(body))
    assert not result.judged["sum_in_range"].ok, result.judged["sum_in_range"]


def test_a_state_mutated_after_it_is_returned_is_judged_as_returned(tmp_path):
    # Returns one shared dict and changes it on every call: each call's result is encoded when
    # it returns, so the judge sees the states differ.
    body = """
        SHARED = {"n": 0}
        def norm(state, k):
            SHARED["n"] += 1
            return SHARED
    """
    result = run_rows(tmp_path, IDEM, IDEM_BLOB, calc(body))
    judged = result.judged["norm_is_idempotent"]
    assert not judged.ok
    assert judged.reasons == ["sample 0 (0-based): state after call 2 differs from the state after call 1"]


def test_an_input_mutated_in_place_does_not_leak_into_the_next_call(tmp_path):
    body = """
        def norm(state, k):
            state["n"] += 1  # mutates its argument, returns it
            return state
    """
    result = run_rows(tmp_path, IDEM, IDEM_BLOB, calc(body))
    assert not result.judged["norm_is_idempotent"].ok


def test_a_reason_with_characters_xml_does_not_allow_still_makes_readable_junit():
    # Production code's exception messages reach the reasons: control characters, ESC, a lone
    # surrogate. Written raw they would make test.xml unreadable (the gate would exit 1, not 4).
    from tools.oracle_gate.spec.judgement import Judgement

    reason = "sample 0: raised ValueError: a\x00b\x1b[0Kc\x0b\ud800 ##[add-mask]x"
    root = ET.fromstring(to_junit([Judgement("x", False, [reason], "d")], "salt", "suite"))
    failure = root.find("./testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == "sample 0: raised ValueError: a\\x00b\\x1b[0Kc\\x0b\\ud800 ##[add-mask]x"
    assert failure.text == failure.get("message")


# Failing samples a person can act on: index (from 0), inputs, result and expected value.


def table_row(expected, inputs=None):
    row = {
        "id": "add_table",
        "kind": "exact_table",
        "blob_samples": len(expected),
        "generated": 0,
        "expected": list(expected),
    }
    if inputs is not None:
        row["inputs"] = list(inputs)
    return row


def replied(ident, results):
    return {"id": ident, "reply": json.dumps({"id": ident, "results": results})}


def test_a_failing_sample_shows_its_0_based_index_inputs_result_and_expected_value():
    expect = table_row([3, -1], inputs=[[1, 2], [1, -2]])
    judged = judge_row(expect, replied("add_table", [{"value": 3}, {"value": 0}]), "")
    assert judged.reasons == ["sample 1 (0-based): result 0 != expected -1"]
    assert judged.failing == FailingSamples(
        (FailingSample(1, False, "", "[1,-2]", "0", "-1", "result 0 != expected -1"),), 1
    )
    assert judged.failure_lines() == [
        "sample 1 (0-based): result 0 != expected -1",
        "  inputs [1,-2] -> result 0; expected -1",
    ]


def test_more_than_ten_failing_samples_show_ten_and_how_many_more():
    expect = table_row(list(range(13)), inputs=[[i] for i in range(13)])
    judged = judge_row(expect, replied("add_table", [{"value": -1}] * 13), "")
    assert len(judged.reasons) == 13 and judged.failing.count == 13
    assert [s.index for s in judged.failing.shown] == list(range(MAX_SHOWN)) and MAX_SHOWN == 10
    lines = judged.failure_lines()
    assert len(lines) == 2 * 10 + 1 and lines[-1] == "and 3 more failing sample(s)"
    assert "sample 10 (0-based)" not in "\n".join(lines)


def test_the_expected_value_of_a_passing_sample_never_appears():
    # Distinctive expected values: the passing samples' must be nowhere in what the judge writes.
    expected = [7771, 7772, 7773, 7774]
    expect = table_row(expected, inputs=[[1], [2], [3], [4]])
    judged = judge_row(expect, replied("add_table", [{"value": 7771}, {"value": 0}, {"value": 7773}, {"value": 0}]), "")
    written = "\n".join([*judged.reasons, *judged.failure_lines(), judged.failing.to_text()])
    written += to_junit([judged], "", "suite").decode()
    assert "7772" in written and "7774" in written
    assert "7771" not in written and "7773" not in written


def test_a_bound_an_idempotent_row_and_a_raise_say_what_was_expected():
    bound = {"id": "b", "kind": "bound", "blob_samples": 1, "generated": 0, "min": 0, "max": 10, "inputs": [{"a": 1}]}
    shown = judge_row(bound, replied("b", [{"value": 11}]), "").failing.shown[0]
    assert (shown.result, shown.expected, shown.message) == (
        "11",
        "a number in [0, 10]",
        "result 11 is outside [0, 10]",
    )
    idem = {
        "id": "i",
        "kind": "idempotent",
        "blob_samples": 1,
        "generated": 0,
        "repeat": 3,
        "args": ["k"],
        "inputs": [{"state": {"n": 1}, "kwargs": {"k": "x"}}],
    }
    shown = judge_row(idem, replied("i", [{"value": [{"n": 1}, {"n": 1}, {"n": 2}]}]), "").failing.shown[0]
    assert (shown.inputs, shown.result, shown.expected) == (
        '{"kwargs":{"k":"x"},"state":{"n":1}}',
        '{"n":2}',
        '{"n":1}',
    )
    assert shown.message == "state after call 3 differs from the state after call 1"
    shown = judge_row(
        table_row(["x"]), replied("add_table", [{"raised": "ValueError: no", "classes": ["builtins:ValueError"]}]), ""
    ).failing.shown[0]
    assert (shown.inputs, shown.result, shown.expected) == ("", "raised ValueError: no", '"x"')
    assert shown.lines()[1] == '  inputs (not recorded) -> result raised ValueError: no; expected "x"'


def test_long_inputs_and_results_are_cut_with_an_ellipsis():
    big = "y" * 1000
    judged = judge_row(table_row(["z"], inputs=[[big]]), replied("add_table", [{"value": big}]), "")
    shown = judged.failing.shown[0]
    assert len(shown.inputs) == len(shown.result) == MAX_SHOWN_CHARS
    assert shown.inputs.endswith("\u2026") and shown.inputs.startswith('["yyy') and shown.result.startswith('"yyy')
    assert len(shown.message) <= 500


def test_generated_failing_samples_show_the_inputs_the_caller_got_and_a_replay_line(tmp_path):
    rows = [dict(BOUND[0], generate={"count": 25, "a": {"int": [-50, 50]}, "b": {"int": [0, 3]}})]
    result = run_rows(tmp_path, rows, BOUND_BLOB, calc("def total(a, b):\n    return a + b\n"), salt="s4lt")
    judged = result.judged["sum_in_range"]
    drawn = json.loads((tmp_path / "views" / "generated.json").read_text())["rows"]["sum_in_range"]
    assert judged.failing.count == sum(1 for s in drawn if not 0 <= s["a"] + s["b"] <= 10)
    assert judged.failing.salt == "s4lt"
    for shown in judged.failing.shown:
        assert shown.generated and shown.salt == "s4lt"
        assert shown.inputs == json.dumps(drawn[shown.index], sort_keys=True, separators=(",", ":"))
        assert shown.result == str(drawn[shown.index]["a"] + drawn[shown.index]["b"])
        assert shown.label() == f"generated sample {shown.index} (salt s4lt, 0-based)"
    assert judged.failure_lines()[-1] == "replay: check --salt s4lt (a plain bazel test: --define=oracle_salt=s4lt)"


def test_a_salt_check_would_refuse_gets_no_replay_command():
    failing = FailingSamples(
        (FailingSample(0, True, "x; rm -rf /", "{}", "1", "a number in [0, 0]", "m"),), 1, "x; rm -rf /"
    )
    assert failing.lines()[-1] == "replay: the run's salt is not one `check --salt` takes, so it cannot be replayed"
    empty = FailingSamples((FailingSample(0, True, "", "{}", "1", "a number in [0, 0]", "m"),), 1)
    assert empty.lines()[-1].startswith("replay: the salt is empty: a plain bazel test without --define=oracle_salt")


def test_the_observation_digest_is_unchanged_by_the_failure_report():
    # Pinned before failing samples were added: the digest covers the results (or the row's
    # error), never a message, so `compare` and `check --clean` compare what they compared before.
    expect = table_row([3, -1, "x"], inputs=[[1], [2], [3]])
    judged = judge_row(expect, replied("add_table", [{"value": 3}, {"value": 0}, {"raised": "ValueError: no"}]), "")
    assert judged.digest == "310e6e86e149f8cbda637b7d9e35f9a9197afba507b661ab5ba683329ea0ab45"
    assert judged.sample_digests == ["d428e15b36ff064e", "23d7b286bd429460", "051215929fc5bc89"]
    unshown = judge_row(
        dict(expect, inputs=[]), replied("add_table", [{"value": 3}, {"value": 0}, {"raised": "ValueError: no"}]), ""
    )
    assert unshown.digest == judged.digest and unshown.failing != judged.failing
    error = judge_row(expect, {"id": "add_table", "error": "timed out after 1 s"}, "")
    assert error.digest == "4a72f219596f6107b4c31bf5108be39b4abb9d17962aec6e3b42abba65925296"


ODD = "a\x00b\x1b[0K\ud800 ]]> <&\"' \u202e ##[add-mask] \n::error::x"


def test_failing_samples_travel_through_test_xml_with_odd_characters_escaped():
    expect = table_row([ODD, 1], inputs=[[ODD], [2]])
    judged = judge_row(
        expect,
        replied("add_table", [{"raised": "ValueError: " + ODD, "classes": ["builtins:ValueError"]}, {"value": ODD}]),
        "s1",
    )
    data = to_junit([judged], "s1", "suite")
    root = ET.fromstring(data)  # well-formed whatever production code raised or returned
    case = root.find("./testsuite/testcase")
    assert case is not None and case.find("failure") is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["failing_samples"] == judged.failing.to_text() and props["failing_samples"].isascii()
    back = read_result(data, "test.xml").observed["add_table"]
    assert back.failing == judged.failing and back.message.startswith("sample 0 (0-based): raised ValueError: a")
    assert back.failing.shown[0].inputs == json.dumps([ODD], ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"count": 1, "salt": "", "shown": [1]}',
        '{"count": 0, "salt": "", "shown": [], "x": 1}',
        '{"count": -1, "salt": "", "shown": []}',
        '{"count": 1, "salt": "", "shown": [{"index": -1, "generated": false, "salt": "", "inputs": "", "result": "", '
        '"expected": "", "message": ""}]}',
        json.dumps({"count": 11, "salt": "", "shown": [FailingSample(i).to_json() for i in range(11)]}),
        json.dumps({"count": 0, "salt": "", "shown": [FailingSample(0).to_json()]}),
    ],
)
def test_failing_samples_that_the_judge_does_not_write_are_ignored(text):
    assert FailingSamples.from_text(text) == FailingSamples()


def test_failing_samples_read_from_a_file_are_cut_to_the_limits():
    long = FailingSample(0, False, "", "i" * 5000, "r" * 5000, "e" * 5000, "m" * 5000).to_json()
    back = FailingSamples.from_text(json.dumps({"count": 1, "salt": "", "shown": [long]}))
    assert [len(t) for t in (back.shown[0].inputs, back.shown[0].result, back.shown[0].message)] == [200, 200, 500]


def test_the_judges_log_and_test_xml_show_the_failing_samples(tmp_path, capsys):
    from tools.oracle_gate.actions.judge import main

    expect = dict(
        table_row([3, 4], inputs=[[1, 2], [2, 2]]),
        entry="shop.calc:add",
        source="oracles/shop.toml",
        blob="oracles/blobs/t.json",
        seed=0,
    )
    (tmp_path / "e.json").write_text(json.dumps({"schema": 1, "rows": [expect]}))
    (tmp_path / "o.json").write_text(
        json.dumps({"schema": 1, "salt": "", "rows": [replied("add_table", [{"value": 3}, {"value": 0}])]})
    )
    xml_out = tmp_path / "test.xml"
    code = main(
        [
            "--expectations",
            str(tmp_path / "e.json"),
            "--observations",
            str(tmp_path / "o.json"),
            "--log",
            str(tmp_path / "missing.log"),
        ],
        {"XML_OUTPUT_FILE": str(xml_out)},
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "    sample 1 (0-based): result 0 != expected 4\n      inputs [2,2] -> result 0; expected 4\n" in out
    assert "expected 3" not in out
    found = read_result(xml_out.read_bytes(), "test.xml").observed["add_table"]
    assert found.outcome == "failed" and found.failing.count == 1 and found.failing.shown[0].inputs == "[2,2]"


# The coverage record (`ran`, docs/design.md section 12): kept beside the verdict, never judged.


def replied_with(ident, results, ran):
    return {"id": ident, "reply": json.dumps({"id": ident, "results": results, "ran": ran})}


def test_a_record_is_kept_and_changes_neither_the_verdict_nor_the_digest():
    expect = table_row([3, -1])
    plain = judge_row(expect, replied("add_table", [{"value": 3}, {"value": 0}]), "")
    recorded = judge_row(
        expect,
        replied_with(
            "add_table", [{"value": 3}, {"value": 0}], ["shop.calc:add", "shop.calc:Cart.total", "shop.calc:add"]
        ),
        "",
    )
    assert recorded.ran == ("shop.calc:Cart.total", "shop.calc:add") and plain.ran is None
    # A record that claims everything ran makes no failing row pass.
    assert (
        (recorded.ok, recorded.reasons, recorded.digest, recorded.sample_digests)
        == (plain.ok, plain.reasons, plain.digest, plain.sample_digests)
        == (False, ["sample 1 (0-based): result 0 != expected -1"], plain.digest, plain.sample_digests)
    )


@pytest.mark.parametrize(
    "ran",
    [
        "shop.calc:add",
        [1],
        ["shop.calc add"],
        ["shop:<lambda>"],
        ["shop:f.<locals>"],
        ["x" * 600 + ":f"],
        ["shop.calc:f"] * 10001,
        [None],
    ],
)
def test_a_record_the_gate_does_not_accept_is_no_record_and_the_row_is_judged_as_before(ran):
    expect = table_row([3])
    judged = judge_row(expect, replied_with("add_table", [{"value": 3}], ran), "")
    assert judged.ok and judged.ran is None
    assert judged.digest == judge_row(expect, replied("add_table", [{"value": 3}]), "").digest


def test_a_reply_with_other_extra_keys_is_still_malformed():
    reply = {"id": "add_table", "reply": json.dumps({"id": "add_table", "results": [{"value": 3}], "verdict": "ok"})}
    assert judge_row(table_row([3]), reply, "").reasons == ["malformed reply: expected exactly id and results"]


def test_the_record_is_a_property_of_the_testcase_only_when_there_is_one():
    expect = table_row([3])
    recorded = judge_row(expect, replied_with("add_table", [{"value": 3}], ["shop.calc:add", "shop.tax:rate"]), "")
    empty = judge_row(expect, replied_with("add_table", [{"value": 3}], []), "")
    none = judge_row(expect, replied("add_table", [{"value": 3}]), "")
    for judged, value in ((recorded, "shop.calc:add shop.tax:rate"), (empty, ""), (none, None)):
        case = ET.fromstring(to_junit([judged], "", "suite")).find(".//testcase")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props.get("ran_functions") == value
        assert read_result(to_junit([judged], "", "suite"), "t.xml").observed["add_table"].ran == judged.ran


VALUE_ERROR = ["builtins:ValueError", "builtins:Exception", "builtins:BaseException", "builtins:object"]
PARSE_ERROR = ["shop.calc:ParseError", *VALUE_ERROR]


def test_a_stored_raises_is_judged_by_the_raised_classes_the_reply_names():
    expect = dict(
        table_row([3, None, None, None, None]), raises=[None, "ValueError", "ValueError", "KeyError", "ValueError"]
    )
    results = [
        {"value": 3},
        {"raised": "ValueError: no", "classes": VALUE_ERROR},  # the class
        {"raised": "ParseError: no", "classes": PARSE_ERROR},  # a subclass
        {"raised": "ValueError: no", "classes": VALUE_ERROR},  # another class
        {"value": 0},  # no raise
    ]
    judged = judge_row(expect, replied("add_table", results), "")
    assert judged.reasons == [
        "sample 3 (0-based): raised ValueError: no, not KeyError or a subclass",
        "sample 4 (0-based): returned 0 instead of raising ValueError",
    ]
    assert [(s.result, s.expected) for s in judged.failing.shown] == [
        ("raised ValueError: no", "raises KeyError (or a subclass)"),
        ("0", "raises ValueError (or a subclass)"),
    ]


@pytest.mark.parametrize(
    "observed",
    [
        {"raised": "ValueError: no"},
        {"raised": "ValueError: no", "classes": ["ValueError"]},
        {"raised": "ValueError: no", "classes": VALUE_ERROR, "value": 1},
    ],
)
def test_a_malformed_raised_result_fails_its_sample_whether_or_not_it_must_raise(observed):
    must = judge_row(dict(table_row([None]), raises=["ValueError"]), replied("add_table", [observed]), "")
    assert must.reasons == [
        "sample 0 (0-based): malformed observation: expected one of value, raised with its classes, unplain"
    ]
    plain = judge_row(table_row([1]), replied("add_table", [observed]), "")
    assert plain.reasons == ["sample 0 (0-based): malformed observation: a raised result needs its message and classes"]
    assert plain.failing.shown[0].result == "a malformed observation"


def test_a_reference_raise_with_raises_agree_is_the_class_the_entry_must_raise():
    expect = {"id": "a", "kind": "agrees", "blob_samples": 1, "generated": 1, "reference": True, "raises_agree": True}
    results = [{"value": 2}, {"raised": "ParseError: x", "classes": PARSE_ERROR}]
    judged = judge_row(expect, replied("a", results), "s", [2, None], [{"t": "x"}], [None, "builtins:ValueError"])
    assert judged.ok, judged.reasons
    judged = judge_row(
        expect, replied("a", [{"value": 2}, {"value": 1}]), "s", [2, None], [{"t": "x"}], [None, "builtins:ValueError"]
    )
    assert judged.reasons == ["generated sample 0 (salt s, 0-based): returned 1 instead of raising ValueError"]
    short = judge_row(expect, replied("a", results), "s", [2, None], [{"t": "x"}], ["builtins:ValueError"])
    assert short.reasons == [
        "no reference values for this row: the reference action's raised classes are missing or short"
    ]
