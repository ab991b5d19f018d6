"""The row kinds (docs/design.md section 2): one `Kind` record per kind, saying everything that
differs from one kind to another, so the schema, samples, views, generators, judging and reports
look a row's kind up (`kind_of(row.kind).calls`) instead of naming it.

A new kind is one record here, its line in the caller's own table (actions/caller.py `CALLS`, which
imports nothing of the gate: tools/tests/unit/test_kinds.py ties the two), and its docs.
Pure: standard library and `verdicts`, `values` only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate.spec import verdicts
from tools.oracle_gate.spec.values import callable_value
from tools.oracle_gate.spec.verdicts import Verdict

# The shapes of a blob sample (`Kind.sample`): an object of keyword arguments; `{"state": S,
# <args>...}`; `{"args": [...], "expected": V}`; an object of exactly the `args_names` (`Kind.arity`
# of them).
KEYWORDS, STATE, TABLE, PAIR = "keywords", "state", "table", "pair"
# What a keyword sample must hold besides (`Kind.sample_rule`): exactly one argument x that is not
# a callable; an `over` field that is an array of at least two numbers or two strings; exactly one
# argument, a, and nothing else.
ONE_X, OVER, ONE_ARG = "one x", "over", "one arg"
# The caller's ways of calling the entry on one sample (`Kind.calls`, the names of the functions of
# actions/caller.py `CALLS`): once with keyword arguments (then the rest of `entries`); the same
# then `inverse`; repeatedly on the state; once with positional arguments; once per value of `over`;
# f(a, b), f(b, a), f(a, a); f(a, b), f(b, a); f(f(a, b), c), f(a, f(b, c)); f(a, e), f(e, a) with e
# the row's `element`.
ONCE, INVERTED, STATES, POSITIONAL, OVER_VALUES, SWAPPED_AND_SAME, SWAPPED, GROUPED, WITH_ELEMENT = (
    "once",
    "inverted",
    "states",
    "positional",
    "over_values",
    "swapped_and_same",
    "swapped",
    "grouped",
    "with_element",
)
# A sample field the judge does not have (`Kind.judge`'s inputs or expected value).
MISSING: Any = object()
# The expected value of a failing sample as `Kind.shows` templates write it: `{expected}`, the
# sample's expected value as compact JSON; `{min}`, `{max}`, `{pattern}` the row's, as compact
# JSON; `{direction}` the row's, with hyphens (spec/judgement.py fills them).
BOUND_SHOWN = "a number in [{min}, {max}]"
EXPECTED_SHOWN = "{expected}"

# judge(value, expectations row, the sample's caller inputs or MISSING, its expected value or MISSING).
Judge = Callable[[Any, Mapping[str, Any], Any, Any], Verdict]
# Records one problem of the row being validated: (field, message).
Bad = Callable[[str, str], None]
# The kind of a behaviour-kept row: the judged commit's entry returns (or raises) what the base
# tip's returns (or raises) on every sample. "Back-to-back testing" is the field's name for running
# two versions of a program on the same inputs and comparing their outputs (ISO/IEC/IEEE 29119-1).
BACK_TO_BACK = "back_to_back"
# The bounds of a `composed` row in the probe, which judges nothing (`Kind.probe`): the largest
# finite float, so that every numeric result lies within them.
PROBE_BOUND = 1.7976931348623157e308
# The pair kinds' refusal of a receiver, and what to do instead.
_PAIR_RECEIVER = "; name the method as the entry and build both arguments with `build`"


@dataclass(frozen=True)
class Proposal:
    """What `propose` suggests for a row of a kind (authoring/propose.py).

    Attributes:
        fields: the kind's own keys as TOML comment lines, placeholders to fill in.
        id_suffix: the end of a suggested id (`<function>_<id_suffix>`).
    """

    fields: tuple[str, ...]
    id_suffix: str


@dataclass(frozen=True)
class Kind:
    """One row kind.

    Attributes:
        name: the `kind` value of a row.
        required, allowed: the kind's own keys (schema `_KIND_SPECIFIC`) it requires, and those it
            also allows.
        sample: the shape of a blob sample: KEYWORDS, STATE, TABLE or PAIR.
        arity: how many `args_names` a PAIR kind's row names (and its samples hold).
        sample_rule: what a KEYWORDS sample must hold besides: "" (nothing), ONE_X, OVER or ONE_ARG.
        calls: how the caller calls the entry on one sample (ONCE ... WITH_ELEMENT), the name of a
            function of actions/caller.py `CALLS`.
        refuses: the call fields (`receiver`, `build`, `project`) it does not allow.
        receiver_hint: what to do instead of a refused `receiver`, after the refusal ("" for none).
        entries: True when it names its callables in `entries` and has no `entry`.
        expected_stored: True when a blob sample stores its expected value (`expected`).
        judge: the verdict on one sample's value (`Judge`).
        shows: the expected value of a failing sample, from its expectations row: a template
            (`BOUND_SHOWN`, `EXPECTED_SHOWN`, words).
        weakened_by: the spec-change marks of its own that weaken its claim (suite/spec_changes.py).
        proposal: what `propose` suggests for it, or None when it never suggests it.
        check: its rule on the row's keys beyond which it requires and allows, or None.
        base_judged: True when no judge of a run decides it: `check`'s behaviour phase compares the
            judged commit's results with the base tip's (check/behaviour.py); a run's judge records
            every sample, a raise included, as observed.
        probe: the kind and extra keys its rows take in the probe's oracle files (runs/probe.py,
            suite/probe_files.py), where no reference runs and nothing generates; None: its own.
    """

    name: str
    required: tuple[str, ...]
    judge: Judge
    shows: Callable[[Mapping[str, Any]], str]
    allowed: tuple[str, ...] = ()
    sample: str = KEYWORDS
    arity: int = 2
    sample_rule: str = ""
    calls: str = ONCE
    refuses: tuple[str, ...] = ()
    receiver_hint: str = ""
    entries: bool = False
    expected_stored: bool = False
    weakened_by: tuple[str, ...] = ()
    proposal: Proposal | None = None
    check: Callable[[Mapping[str, object], Bad], None] | None = None
    base_judged: bool = False
    probe: tuple[str, Mapping[str, Any]] | None = None

    @property
    def positional(self) -> bool:
        """True when the entry takes the sample's arguments positionally, named by `args_names`."""
        return self.sample in (TABLE, PAIR)

    @property
    def takes_raises(self) -> bool:
        """True when a stored sample may name the exception its call must raise (`raises`,
        spec/raised.py): the kinds that call the entry once per sample (ONCE, POSITIONAL), in a
        row whose reference does not judge its stored samples; not a kind the base tip judges."""
        return self.calls in (ONCE, POSITIONAL) and not self.base_judged

    @property
    def reads_inputs(self) -> bool:
        """True when the judge needs each sample's caller inputs (x, the values of `over`)."""
        return self.sample_rule != ""

    @property
    def reference_judges_stored(self) -> bool:
        """True when a `reference` (which the kind allows) gives the expected value of its stored
        samples too, not only of its generated ones."""
        return "reference" in self.required + self.allowed and not self.expected_stored


def _shown(text: str) -> Callable[[Mapping[str, Any]], str]:
    """A `Kind.shows` that is always `text`."""
    return lambda expect: text


def _bound(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    return verdicts.judge_bound(value, expect["min"], expect["max"])


def _states(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    if type(value) is not list or len(value) != expect["repeat"]:
        return Verdict(False, f"malformed observation: expected {expect['repeat']} states")
    return verdicts.judge_idempotent(value)


def _exact(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    if expected is MISSING:
        return Verdict(False, "the judge has no expected value for this sample")
    return verdicts.judge_exact(value, expected)


def _matches(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    return verdicts.judge_matches(value, expect["pattern"])


def _no_inputs() -> Verdict:
    return Verdict(False, "the judge does not know this sample's inputs")


def _round_trip(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    if inputs is MISSING:
        return _no_inputs()
    receiver = expect.get("receiver")
    plain = [v for k, v in inputs.items() if not (k == "receiver" and receiver) and callable_value(v) is None]
    if len(plain) != 1:
        return Verdict(
            False, f"the sample has {len(plain)} argument(s) that are not callables; a round trip needs exactly one, x"
        )
    return verdicts.judge_round_trip(value, plain[0])


def _monotonic(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    if inputs is MISSING:
        return _no_inputs()
    return verdicts.judge_monotonic(value, len(inputs[expect["over"]]), expect["direction"])


def _antisymmetric(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    return verdicts.judge_antisymmetric(value)


def judge_commutative(results: Any) -> Verdict:
    """`commutative`: results `[f(a, b), f(b, a)]`, plain JSON values, strictly equal (the type of
    every leaf compared too)."""
    if type(results) is not list or len(results) != 2:
        return Verdict(False, "malformed observation: expected the results of f(a, b) and f(b, a)")
    problem = verdicts.plain_problem(results, "results")
    if problem:
        return Verdict(False, problem)
    ab, ba = results
    if not verdicts.strict_equal(ab, ba):
        return Verdict(False, f"f(a, b) is {ab!r} and f(b, a) is {ba!r}: not equal")
    return Verdict(True)


def _observed(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    return Verdict(True)


def _commutative(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    return judge_commutative(value)


def judge_associative(results: Any) -> Verdict:
    """`associative`: results `[f(f(a, b), c), f(a, f(b, c))]`, plain JSON values, strictly equal
    (the type of every leaf compared too)."""
    if type(results) is not list or len(results) != 2:
        return Verdict(False, "malformed observation: expected the results of f(f(a, b), c) and f(a, f(b, c))")
    problem = verdicts.plain_problem(results, "results")
    if problem:
        return Verdict(False, problem)
    left, right = results
    if not verdicts.strict_equal(left, right):
        return Verdict(False, f"f(f(a, b), c) is {left!r} and f(a, f(b, c)) is {right!r}: not equal")
    return Verdict(True)


def _associative(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    return judge_associative(value)


def judge_identity(results: Any, a: Any) -> Verdict:
    """`identity`: results `[f(a, e), f(e, a)]` (e the row's `element`), each a plain JSON value
    strictly equal to the sample's argument `a` (the type of every leaf compared too)."""
    if type(results) is not list or len(results) != 2:
        return Verdict(False, "malformed observation: expected the results of f(a, e) and f(e, a)")
    problem = verdicts.plain_problem(results, "results")
    if problem:
        return Verdict(False, problem)
    for call, result in zip(("f(a, e)", "f(e, a)"), results, strict=True):
        if not verdicts.strict_equal(result, a):
            return Verdict(False, f"{call} is {result!r}, not a ({a!r})")
    return Verdict(True)


def _identity(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    if inputs is MISSING:
        return _no_inputs()
    if type(inputs) is not dict or len(inputs) != 1:
        return Verdict(False, "the sample must hold exactly one argument, a")
    return judge_identity(value, next(iter(inputs.values())))


def _element(row: Mapping[str, object], bad: Bad) -> None:
    """An `identity` row's `element` is a plain value: a string, number, bool, or an array or
    table of those (no date, no NaN or infinity)."""
    problem = verdicts.plain_problem(row.get("element"), "element")
    if problem:
        bad("element", f"must be a plain value (string, number, bool, array or table of those): {problem}")


def _composed(value: Any, expect: Mapping[str, Any], inputs: Any, expected: Any) -> Verdict:
    judge = _bound if "min" in expect else _exact
    return judge(value, expect, inputs, expected)


def _one_judge(row: Mapping[str, object], bad: Bad) -> None:
    """A `composed` row is judged by `min` and `max`, or by a `reference`: exactly one of them."""
    judged = ("min" in row and "max" in row) + ("reference" in row)
    if judged != 1 or (("min" in row) != ("max" in row)):
        bad("kind", "a composed row is judged by either min and max or a reference: give exactly one of them")


ALL = (
    Kind(
        "bound",
        ("min", "max"),
        _bound,
        _shown(BOUND_SHOWN),
        weakened_by=("bound widened",),
        proposal=Proposal(
            ("# min = 0  # the smallest result the claim allows", "# max = 0  # the largest"), "in_range"
        ),
    ),
    Kind(
        "idempotent",
        ("args", "repeat"),
        _states,
        _shown("the state after call 1, from every call"),
        sample=STATE,
        calls=STATES,
        refuses=("receiver", "build", "project"),
        proposal=Proposal(
            ('# args = ["..."]  # the sample fields passed as keyword arguments besides the state', "# repeat = 2"),
            "is_idempotent",
        ),
    ),
    Kind(
        "exact_table",
        (),
        _exact,
        _shown(EXPECTED_SHOWN),
        allowed=("reference", "args_names"),
        sample=TABLE,
        calls=POSITIONAL,
        expected_stored=True,
        weakened_by=("expected value changed",),
        proposal=Proposal((), "table"),
    ),
    Kind("matches", ("pattern",), _matches, _shown("a str matching {pattern}")),
    Kind("agrees", ("reference", "generate"), _exact, _shown(EXPECTED_SHOWN), probe=(BACK_TO_BACK, {})),
    Kind(
        "round_trip",
        ("inverse",),
        _round_trip,
        _shown("x, the sample's argument"),
        sample_rule=ONE_X,
        calls=INVERTED,
        proposal=Proposal((), "round_trip"),
    ),
    Kind(
        "monotonic",
        ("over", "direction"),
        _monotonic,
        _shown("results {direction} in the over values"),
        sample_rule=OVER,
        calls=OVER_VALUES,
    ),
    Kind(
        "antisymmetric",
        ("args_names",),
        _antisymmetric,
        _shown("f(a, b) == -f(b, a) and f(a, a) == 0"),
        sample=PAIR,
        calls=SWAPPED_AND_SAME,
        refuses=("receiver",),
        receiver_hint=_PAIR_RECEIVER,
    ),
    Kind(
        "composed",
        ("entries",),
        _composed,
        lambda expect: BOUND_SHOWN if "min" in expect else EXPECTED_SHOWN,
        allowed=("min", "max", "reference"),
        entries=True,
        weakened_by=("bound widened",),
        check=_one_judge,
        probe=("composed", {"min": -PROBE_BOUND, "max": PROBE_BOUND}),
    ),
    Kind(
        "commutative",
        ("args_names",),
        _commutative,
        _shown("f(a, b) == f(b, a)"),
        sample=PAIR,
        calls=SWAPPED,
        refuses=("receiver",),
        receiver_hint=_PAIR_RECEIVER,
        proposal=Proposal((), "commutative"),
    ),
    Kind(
        "associative",
        ("args_names",),
        _associative,
        _shown("f(f(a, b), c) == f(a, f(b, c))"),
        sample=PAIR,
        arity=3,
        calls=GROUPED,
        refuses=("receiver",),
        receiver_hint=_PAIR_RECEIVER,
        proposal=Proposal((), "associative"),
    ),
    Kind(
        "identity",
        ("element",),
        _identity,
        _shown("f(a, e) == a and f(e, a) == a, e the row's element"),
        sample_rule=ONE_ARG,
        calls=WITH_ELEMENT,
        refuses=("receiver",),
        receiver_hint="; name the method as the entry and build the argument with `build`",
        check=_element,
        proposal=Proposal((), "identity"),
    ),
    Kind(
        BACK_TO_BACK,
        (),
        _observed,
        _shown("what the base tip's entry returns or raises on the same sample"),
        base_judged=True,
    ),
)
NAMES = tuple(kind.name for kind in ALL)
_BY_NAME = {kind.name: kind for kind in ALL}


def kind_of(name: object) -> Kind | None:
    """The Kind named `name` (a row's `kind`, any value), or None when no kind has that name."""
    return _BY_NAME.get(name) if type(name) is str else None


def calling(calls: str) -> Kind:
    """The first Kind whose caller function is `calls` (ONCE ... WITH_ELEMENT): how `propose` finds
    the kind of a relation it suggests without naming it.

    Raises:
        StopIteration: when no kind calls the entry that way.
    """
    return next(k for k in ALL if k.calls == calls)


def kind(name: str) -> Kind:
    """The Kind named `name`, a kind of a validated row or view.

    Raises:
        KeyError: when no kind has that name.
    """
    return _BY_NAME[name]
