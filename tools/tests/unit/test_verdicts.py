"""Kind semantics: plain JSON-typed values only, strict comparison, no trust in __eq__/__le__."""

from __future__ import annotations

import pytest

from tools.oracle_gate.spec.verdicts import judge_bound, judge_exact, judge_idempotent, plain_problem, strict_equal


class AlwaysYes:
    """A production value that claims to equal, and lie within, anything."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __le__(self, other):
        return True

    __ge__ = __lt__ = __gt__ = __le__
    __hash__ = object.__hash__


class SneakyInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class SneakyDict(dict):
    def __eq__(self, other):
        return True

    __hash__ = None


@pytest.mark.parametrize("liar", [AlwaysYes(), SneakyInt(5)], ids=["object", "int-subclass"])
def test_bound_refuses_a_value_that_claims_everything(liar):
    verdict = judge_bound(liar, 0, 10)
    assert not verdict.ok
    assert "must be an int or float" in verdict.reason


@pytest.mark.parametrize("liar", [AlwaysYes(), SneakyInt(3), SneakyDict(a=1), [AlwaysYes()], {"k": AlwaysYes()}])
def test_exact_refuses_a_value_that_claims_everything(liar):
    assert not judge_exact(liar, 3).ok
    assert not judge_exact(liar, {"a": 1}).ok


@pytest.mark.parametrize("liar", [AlwaysYes(), SneakyDict(n=1), {"n": AlwaysYes()}])
def test_idempotent_refuses_a_state_that_claims_everything(liar):
    assert not judge_idempotent([liar, liar, liar]).ok


def test_bound():
    assert judge_bound(5, 0, 10).ok
    assert judge_bound(0.5, 0, 1).ok
    assert judge_bound(11, 0, 10).reason == "result 11 is outside [0, 10]"
    assert not judge_bound(True, 0, 10).ok
    assert not judge_bound(float("nan"), 0, 10).ok
    assert not judge_bound("5", 0, 10).ok


def test_strict_equality_compares_leaf_types():
    assert not strict_equal(1, 1.0)
    assert not strict_equal(1, True)
    assert not strict_equal([1], [1.0])
    assert not strict_equal({"a": 0}, {"a": False})
    assert strict_equal({"a": [1, "x", None]}, {"a": [1, "x", None]})


def test_idempotent():
    assert judge_idempotent([{"n": 1}, {"n": 1}]).ok
    assert judge_idempotent([{"n": 1}, {"n": 2}]).reason == "state after call 2 differs from the state after call 1"
    assert not judge_idempotent([{"n": 1}]).ok


def test_exact_table():
    assert judge_exact(2, 2).ok
    assert judge_exact(2.0, 2).reason == "result 2.0 != expected 2"


def test_plain_problem_names_the_offender():
    assert plain_problem({"a": [1, {2: 3}]}) == "result['a'][1] has a non-string key of type int"
    assert plain_problem((1, 2)) == "result is a builtins.tuple, not a plain JSON-typed value"
    deep: list = []
    node = deep
    for _ in range(200):
        node.append([])
        node = node[0]
    assert "nests deeper than" in plain_problem(deep)
