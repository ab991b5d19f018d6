"""Unit tests of spec/raised.py: the names a `raises` may give, the strict reading of a raised
result, the verdict on a sample that must raise, and the outcome a recording writes."""

from __future__ import annotations

import pytest

from tools.oracle_gate.spec.raised import class_key, judge_raises, name_problem, outcome, raised_classes, shown_name

ENTRY = "shop.calc:parse"
VALUE_ERROR = ["builtins:ValueError", "builtins:Exception", "builtins:BaseException", "builtins:object"]
# A class of the entry's package that subclasses ValueError, as the caller reports it.
PARSE_ERROR = ["shop.errors:ParseError", *VALUE_ERROR]


@pytest.mark.parametrize(
    "name",
    ["ValueError", "KeyboardInterrupt", "decimal:InvalidOperation", "json.decoder:JSONDecodeError", "shop.errors:E"],
)
def test_accepted_names(name):
    assert name_problem(name, ENTRY) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (3, "must be a string naming an exception class, got int"),
        (None, "must be a string naming an exception class, got NoneType"),
        (
            "ValueErorr",
            "'ValueErorr' is not an exception class of the builtins; write a builtin exception as its bare "
            "name (ValueError), another as module:Class (pkg.mod:ParseError)",
        ),
        (
            "len",
            "'len' is not an exception class of the builtins; write a builtin exception as its bare "
            "name (ValueError), another as module:Class (pkg.mod:ParseError)",
        ),
        (
            "shop.errors.ParseError",
            "'shop.errors.ParseError' is not a class name; write a builtin exception as its bare "
            "name (ValueError), another as module:Class (pkg.mod:ParseError)",
        ),
        ("builtins:ValueError", "write 'builtins:ValueError' as its bare name 'ValueError'"),
        (
            "other.mod:Error",
            "'other.mod:Error' is outside the builtins, the standard library and the entry's package 'shop'",
        ),
    ],
)
def test_refused_names(name, problem):
    assert name_problem(name, ENTRY) == problem


def test_names_and_keys_are_each_others_inverse():
    assert class_key("ValueError") == "builtins:ValueError"
    assert class_key("shop.errors:ParseError") == "shop.errors:ParseError"
    assert shown_name("builtins:ValueError") == "ValueError"
    assert shown_name("shop.errors:ParseError") == "shop.errors:ParseError"


@pytest.mark.parametrize(
    "observed",
    [
        {"raised": "ValueError: x"},
        {"raised": "ValueError: x", "classes": []},
        {"raised": "ValueError: x", "classes": "builtins:ValueError"},
        {"raised": 3, "classes": VALUE_ERROR},
        {"raised": "ValueError: x", "classes": ["ValueError"]},
        {"raised": "ValueError: x", "classes": ["builtins:Value Error"]},
        {"raised": "ValueError: x", "classes": ["builtins:" + "E" * 300]},
        {"raised": "ValueError: x", "classes": ["builtins:E"] * 65},
        {"raised": "ValueError: x", "classes": VALUE_ERROR, "extra": 1},
        ["raised"],
    ],
)
def test_a_malformed_raised_result_is_refused(observed):
    assert raised_classes(observed) is None
    assert judge_raises(observed, "ValueError").ok is False


def test_a_local_class_is_a_class_name():
    assert raised_classes({"raised": "E: x", "classes": ["shop.calc:f.<locals>.E", *VALUE_ERROR]}) is not None


@pytest.mark.parametrize(
    ("observed", "name", "reason"),
    [
        ({"raised": "ValueError: bad", "classes": VALUE_ERROR}, "ValueError", ""),
        ({"raised": "ParseError: bad", "classes": PARSE_ERROR}, "ValueError", ""),
        ({"raised": "ParseError: bad", "classes": PARSE_ERROR}, "shop.errors:ParseError", ""),
        ({"raised": "ParseError: bad", "classes": PARSE_ERROR}, "builtins:ValueError", ""),
        (
            {"raised": "ValueError: bad", "classes": VALUE_ERROR},
            "shop.errors:ParseError",
            "raised ValueError: bad, not shop.errors:ParseError or a subclass",
        ),
        (
            {"raised": "KeyError: 'k'", "classes": ["builtins:KeyError", "builtins:LookupError", *VALUE_ERROR[1:]]},
            "ValueError",
            "raised KeyError: 'k', not ValueError or a subclass",
        ),
        ({"value": {"b": 1, "a": [2]}}, "ValueError", 'returned {"a":[2],"b":1} instead of raising ValueError'),
        (
            {"value": None},
            "json.decoder:JSONDecodeError",
            "returned null instead of raising json.decoder:JSONDecodeError",
        ),
        (
            {"unplain": "result is nan, not a finite number"},
            "ValueError",
            "returned a value that is not plain JSON instead of raising ValueError",
        ),
        (
            {"raised": "ValueError: bad"},
            "ValueError",
            "malformed observation: expected one of value, raised with its classes, unplain",
        ),
    ],
)
def test_the_verdict_on_a_sample_that_must_raise(observed, name, reason):
    verdict = judge_raises(observed, name)
    assert (verdict.ok, verdict.reason) == (not reason, reason)


def test_the_outcome_of_a_result_is_what_a_recording_writes():
    assert outcome({"value": [1, "a"]}) == ("value", [1, "a"])
    assert outcome({"raised": "ValueError: x", "classes": VALUE_ERROR}) == ("raises", "ValueError")
    assert outcome({"raised": "ParseError: x", "classes": PARSE_ERROR}) == ("raises", "shop.errors:ParseError")
    with pytest.raises(ValueError, match="^the result is not plain JSON: result is nan$"):
        outcome({"unplain": "result is nan"})
    with pytest.raises(ValueError, match="^a malformed result"):
        outcome({"raised": "ValueError: x"})
