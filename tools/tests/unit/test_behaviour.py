"""behaviour.py: what counts as the same result on both sides, and how a difference is shown."""

from __future__ import annotations

import json

from tools.oracle_gate.check.behaviour import SHOWN, compare, outcome
from tools.oracle_gate.suite.probe_files import ProbeRow

RAISED = {"raised": "ValueError: at 0x7f01", "classes": ["builtins:ValueError", "builtins:Exception"]}


def reply(results):
    return {"id": "r", "reply": json.dumps({"id": "r", "results": results})}


def test_a_result_is_its_value_its_exception_class_or_why_it_is_not_plain():
    assert outcome({"value": [1, "a"]}) == '[1,"a"]'
    assert outcome({"value": 1}) != outcome({"value": 1.0})
    assert outcome(RAISED) == "raises ValueError"
    assert outcome(dict(RAISED, raised="ValueError: at 0x7f99")) == "raises ValueError"
    assert outcome({"raised": "E", "classes": ["shop.calc:Bad"]}) == "raises shop.calc:Bad"
    assert outcome({"unplain": "a set"}).startswith("not plain JSON")


def test_the_same_results_compare_equal_and_differences_are_counted_and_shown():
    row = ProbeRow({"id": "r"}, [{"a": i} for i in range(5)])
    same = compare(
        "r", "oracles/a.toml", row, reply([{"value": i} for i in range(5)]), reply([{"value": i} for i in range(5)])
    )
    assert (same.total, same.differing, same.failure) == (5, 0, "")
    ours = [{"value": 0}, RAISED, {"value": 9}, {"value": 9}, {"value": 9}]
    theirs = [{"value": 0}, {"value": 1}, {"value": 2}, {"value": 3}, {"value": 4}]
    diff = compare("r", "oracles/a.toml", row, reply(ours), reply(theirs))
    assert diff.differing == 4 and len(diff.shown) == SHOWN
    assert diff.shown[0] == '{"a":1} -> raises ValueError, base tip 1'


def test_a_side_that_failed_as_a_whole_is_named():
    row = ProbeRow({"id": "r"}, [{"a": 1}])
    assert compare("r", "s", row, {"id": "r", "error": "time limit"}, reply([{"value": 1}])).failure == (
        "the judged commit: time limit"
    )
    assert compare("r", "s", row, reply([{"value": 1}]), None).failure == "the base tip: no caller action ran it"
    assert "one result per sample" in compare("r", "s", row, reply([]), reply([{"value": 1}])).failure


def test_results_not_plain_on_both_sides_are_not_compared():
    row = ProbeRow({"id": "r"}, [{"a": 1}, {"a": 2}])
    unplain = {"unplain": "a set"}
    mixed = compare("r", "s", row, reply([unplain, {"value": 3}]), reply([unplain, {"value": 3}]))
    assert (mixed.differing, mixed.failure) == (0, "")
    alone = compare("r", "s", row, reply([unplain, unplain]), reply([unplain, unplain]))
    assert alone.failure == "no result is plain JSON on either side; give it a `project`"
    one_side = compare("r", "s", row, reply([unplain, {"value": 3}]), reply([{"value": 1}, {"value": 3}]))
    assert one_side.differing == 1


def test_a_forged_nan_or_a_reply_nested_past_the_parser_is_that_sides_failure():
    row = ProbeRow({"id": "r"}, [{"a": 1}])
    forged = {"id": "r", "reply": '{"id": "r", "results": [{"value": NaN}]}'}
    assert compare("r", "s", row, forged, reply([{"value": 1}])).failure == (
        "the judged commit: the caller's reply is not JSON"
    )
    deep = {"id": "r", "reply": '{"id":"r","results":' + "[" * 200_000}
    assert compare("r", "s", row, deep, reply([{"value": 1}])).failure.startswith("the judged commit:")
