"""What "pass" means for each kind (docs/design.md sections 2 and 8). Protected code: the judge
(actions/judge.py) calls these.

The production value is never trusted to compare itself: it must first be a plain JSON-typed value
(int, float, str, bool, None, list, dict with str keys; exact types, no subclasses), and equality is
then structural with the type of every leaf compared too, so `1`, `1.0` and `True` all differ.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

_SCALARS = (int, float, str, bool, type(None))
MAX_DEPTH = 100


@dataclass(frozen=True)
class Verdict:
    """The judgement on one sample: `ok`, and `reason` when not ok."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def plain_problem(value: Any, where: str = "result", depth: int = 0) -> str | None:
    """Returns why `value` is not a plain JSON-typed value, or None when it is.

    Floats must be finite. Dict keys must be exactly str. Nesting deeper than MAX_DEPTH is refused.
    """
    kind = type(value)
    if depth > MAX_DEPTH:
        return f"{where} nests deeper than {MAX_DEPTH} levels"
    if kind in _SCALARS:
        if kind is float and not math.isfinite(value):
            return f"{where} is {value!r}, not a finite number"
        return None
    if kind is list:
        for i, item in enumerate(value):
            problem = plain_problem(item, f"{where}[{i}]", depth + 1)
            if problem:
                return problem
        return None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{where} has a non-string key of type {type(key).__name__}"
            problem = plain_problem(item, f"{where}[{key!r}]", depth + 1)
            if problem:
                return problem
        return None
    return f"{where} is a {kind.__module__}.{kind.__qualname__}, not a plain JSON-typed value"


def strict_equal(a: Any, b: Any) -> bool:
    """Structural equality of two plain values where the type of every leaf must match too.

    Only call on values `plain_problem` accepted; the values' own `__eq__` is used for leaves of
    exact built-in scalar types only.
    """
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def judge_bound(result: Any, low: int | float, high: int | float) -> Verdict:
    """`bound`: the result is an int or finite float (not bool) with low <= result <= high."""
    if type(result) not in (int, float):
        return Verdict(False, f"result must be an int or float, got {type(result).__qualname__}")
    problem = plain_problem(result)
    if problem:
        return Verdict(False, problem)
    if not low <= result <= high:
        return Verdict(False, f"result {result!r} is outside [{low!r}, {high!r}]")
    return Verdict(True)


def judge_idempotent(states: list[Any]) -> Verdict:
    """`idempotent`: `states` are the results of the 1st..nth call; every one must equal the 1st.

    Args:
        states: results in call order; at least two.
    """
    if len(states) < 2:
        return Verdict(False, "idempotence needs at least two calls")
    for i, state in enumerate(states):
        problem = plain_problem(state, f"state after call {i + 1}")
        if problem:
            return Verdict(False, problem)
    for i, state in enumerate(states[1:], start=2):
        if not strict_equal(states[0], state):
            return Verdict(False, f"state after call {i} differs from the state after call 1")
    return Verdict(True)


def judge_exact(result: Any, expected: Any) -> Verdict:
    """`exact_table`: the result equals `expected` strictly (types of every leaf included)."""
    problem = plain_problem(result)
    if problem:
        return Verdict(False, problem)
    if not strict_equal(result, expected):
        return Verdict(False, f"result {result!r} != expected {expected!r}")
    return Verdict(True)


def judge_matches(result: Any, pattern: str) -> Verdict:
    """`matches`: the result is a str (exactly) and `re.fullmatch(pattern, result)` holds. The
    pattern is compiled here, in the judge, never by the caller."""
    if type(result) is not str:
        return Verdict(False, f"result must be a str, got {type(result).__qualname__}")
    try:
        found = re.fullmatch(pattern, result)
    except re.error as exc:
        return Verdict(False, f"the row's pattern does not compile: {exc}")
    if found is None:
        return Verdict(False, f"result {result!r} does not match the pattern {pattern!r}")
    return Verdict(True)


def judge_round_trip(result: Any, x: Any) -> Verdict:
    """`round_trip`: `inverse(entry(x))`, the result, equals x strictly."""
    problem = plain_problem(result)
    if problem:
        return Verdict(False, problem)
    if not strict_equal(result, x):
        return Verdict(False, f"inverse(entry(x)) is {result!r}, not x = {x!r}")
    return Verdict(True)


def _orderable(values: list[Any]) -> str | None:
    """Why `values` cannot be ordered: they must all be numbers (int or finite float, not bool) or all str."""
    if all(type(v) in (int, float) for v in values):
        return plain_problem(values, "results")
    if all(type(v) is str for v in values):
        return None
    return "results must all be numbers (int or float) or all strings, got " + ", ".join(
        sorted({type(v).__qualname__ for v in values})
    )


def judge_monotonic(results: Any, count: int, direction: str) -> Verdict:
    """`monotonic`: `count` results, one per value of `over` in ascending order, each no smaller
    (`non_decreasing`) or no larger (`non_increasing`) than the one before."""
    if type(results) is not list or len(results) != count:
        return Verdict(False, f"malformed observation: expected {count} results, one per value of over")
    problem = _orderable(results)
    if problem:
        return Verdict(False, problem)
    for i in range(1, count):
        before, after = results[i - 1], results[i]
        if (after < before) if direction == "non_decreasing" else (after > before):
            return Verdict(
                False,
                f"result {after!r} for over value {i} (0-based, ascending) comes after {before!r}: "
                f"not {direction.replace('_', '-')}",
            )
    return Verdict(True)


def judge_antisymmetric(results: Any) -> Verdict:
    """`antisymmetric`: results `[f(a, b), f(b, a), f(a, a)]`, numbers (int or finite float, not
    bool) with `f(a, b) == -f(b, a)`, both of one type, and `f(a, a) == 0`."""
    if type(results) is not list or len(results) != 3:
        return Verdict(False, "malformed observation: expected the results of f(a, b), f(b, a) and f(a, a)")
    if any(type(r) not in (int, float) for r in results):
        return Verdict(
            False, "results must be numbers (int or float), got " + ", ".join(type(r).__qualname__ for r in results)
        )
    problem = plain_problem(results, "results")
    if problem:
        return Verdict(False, problem)
    ab, ba, aa = results
    if type(ab) is not type(ba) or ab != -ba:
        return Verdict(False, f"f(a, b) is {ab!r} and f(b, a) is {ba!r}: not opposite")
    if aa != 0:
        return Verdict(False, f"f(a, a) is {aa!r}, not 0")
    return Verdict(True)
