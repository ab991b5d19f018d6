"""Blob contents: strict JSON parsing and the sample shape each kind expects (docs/design.md section 2)."""

from __future__ import annotations

import itertools
import json
import math
import operator
from typing import TYPE_CHECKING, Any

from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.call_fields import callable_value_problem
from tools.oracle_gate.spec.encoding import text_problem
from tools.oracle_gate.spec.raised import RAISES, name_problem
from tools.oracle_gate.spec.values import callable_value

if TYPE_CHECKING:
    from tools.oracle_gate.spec.schema import Invariant


class SampleError(ValueError):
    """A blob is not JSON, or not the shape its invariant's kind needs."""


def _reject_constant(name: str) -> Any:
    raise SampleError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise SampleError(f"{text} overflows to infinity, which is not valid JSON")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):  # no key twice: the common case, decided by dict's own loop
        return out
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise SampleError(f"object key {key!r} appears twice")
        seen.add(key)
    return out


# The strict parser of blobs (`load_samples`, `stream.check_stream`): json's C scanner with the hooks above.
STRICT = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys)


def load_samples(data: bytes) -> Any:
    """Parses blob bytes as strict JSON: UTF-8, no NaN/Infinity (nor numbers that overflow to it),
    no duplicate object keys.

    Args:
        data: the blob's (or a reply's) raw bytes.

    Returns:
        The parsed JSON value.

    Raises:
        SampleError: with a one-line reason that reads after the blob's path; bytes that are not
            clean UTF-8 text (a byte order mark, UTF-16, Latin-1, NUL or another control character)
            are named in words by `encoding.text_problem`.
    """
    unreadable = text_problem(data, "JSON")
    if unreadable is not None:
        raise SampleError(unreadable)
    try:
        return STRICT.decode(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise not_json(exc.msg, exc.lineno, exc.colno) from None
    except (ValueError, RecursionError) as exc:
        raise not_usable(exc) from None


def not_json(msg: str, line: int, column: int) -> SampleError:
    """The refusal of a JSON syntax error: json's own `msg` at 1-based `line` and `column` (in
    characters) of the whole blob."""
    return SampleError(f"is not valid JSON: {msg} at line {line} column {column}")


def not_usable(exc: ValueError | RecursionError) -> SampleError:
    """The refusal of what the strict parser raised other than a syntax error: a hook's SampleError
    (NaN, overflow, duplicate key), another ValueError (e.g. an integer longer than Python's
    4300-digit conversion limit), or RecursionError (nesting too deep)."""
    if isinstance(exc, RecursionError):
        return SampleError("nests too deeply")
    return SampleError(f"is not usable JSON: {exc}")


def check_shape(invariant: Invariant, samples: Any) -> None:
    """Checks that parsed samples have the shape the invariant's kind needs (docs/design.md
    section 2): a non-empty array of objects, each as `check_sample` says.

    Raises:
        SampleError: naming the first sample (0-based index) that is wrong.
    """
    if type(samples) is not list or not samples:
        raise SampleError(EMPTY)
    for index, sample in enumerate(samples):
        check_sample(invariant, index, sample)


def check_samples(invariant: Invariant, samples: list[Any], first: int = 0) -> None:
    """`check_sample` of each of `samples`, the first being sample number `first` of its blob; for
    `exact_table` rows, a test in C loops passes a run of right samples at once.

    Raises:
        SampleError: naming the first wrong sample, as `check_sample` does.
    """
    if kinds.kind(invariant.kind).sample == kinds.TABLE and _tables_ok(invariant, samples):
        return
    for index, sample in enumerate(samples, first):
        check_sample(invariant, index, sample)


def _tables_ok(invariant: Invariant, samples: list[Any]) -> bool:
    """True only when `_check_table_sample` accepts every one of `samples` (False decides nothing)."""
    keys = {"args", "expected"} | ({"receiver"} if invariant.receiver else set())
    if not set(map(type, samples)) <= {dict} or not all(
        map(operator.eq, itertools.repeat(keys), map(dict.keys, samples))
    ):
        return False
    args = list(map(operator.itemgetter("args"), samples))
    if not set(map(type, args)) <= {list}:
        return False
    if invariant.args_names and not set(map(len, args)) <= {len(invariant.args_names)}:
        return False
    return not invariant.receiver or set(map(type, map(operator.itemgetter("receiver"), samples))) <= {list, dict}


# The refusal of a top-level value that is not an array, or an empty array.
EMPTY = "must be a non-empty JSON array of samples"


def check_sample(invariant: Invariant, index: int, sample: Any) -> None:
    """Checks one parsed sample, the `index`-th (0-based) of its blob, by its kind's `Kind.sample`:
    a JSON object; STATE ones (`idempotent`) hold `state` and every name of `args`; TABLE ones
    (`exact_table`) exactly `args` (an array, as long as `args_names` when the row has them) and
    `expected`, plus `receiver` when the row has one; PAIR ones (`antisymmetric`) exactly the
    `args_names`; KEYWORDS ones a `receiver` (an array or an object) when the row has one, and by
    `Kind.sample_rule` exactly one argument besides it (ONE_X, `round_trip`), an `over` field
    that is an array of at least two numbers or of at least two strings (OVER, `monotonic`), or
    exactly one argument (ONE_ARG, `identity`). A sample may name the exception its call must
    raise as `raises` where `check_raises` allows it (TABLE ones then hold `raises` instead of
    `expected`).

    Raises:
        SampleError: naming the sample by `index` and what is wrong with it.
    """
    if type(sample) is not dict:
        raise SampleError(f"sample {index} must be a JSON object")
    check_raises(invariant, index, sample)
    shape = kinds.kind(invariant.kind).sample
    if shape == kinds.STATE:
        missing = [k for k in ("state", *invariant.args) if k not in sample]
        if missing:
            raise SampleError(f"sample {index} lacks {', '.join(missing)}")
    elif shape == kinds.TABLE:
        _check_table_sample(invariant, index, sample)
    elif shape == kinds.PAIR:
        if set(sample) != set(invariant.args_names):
            raise SampleError(f"sample {index} must have exactly the keys {', '.join(invariant.args_names)}")
    else:
        _check_keyword_sample(invariant, index, sample)


def check_raises(invariant: Invariant, index: int, sample: dict[str, Any]) -> None:
    """A sample's `raises` (docs/oracles.md, "Expected exceptions"), when it has one: allowed for a
    kind that calls the entry once per sample (`Kind.takes_raises`) in a row whose reference does
    not judge its stored samples; never beside an `expected` (TABLE); a name `raised.name_problem`
    accepts for the row's entry.

    Raises:
        SampleError: `sample N: raises: why`.
    """
    if RAISES not in sample:
        return
    kind = kinds.kind(invariant.kind)
    where = f"sample {index}: {RAISES}:"
    if not kind.takes_raises:
        takers = ", ".join(k.name for k in kinds.ALL if k.takes_raises and "reference" not in k.required)
        raise SampleError(
            f"{where} kind {kind.name!r} takes no raises; the kinds that call the entry once do ({takers})"
        )
    if kind.reference_judges_stored and (invariant.reference is not None or "reference" in kind.required):
        raise SampleError(
            f"{where} the stored samples of this {kind.name} row are judged by its reference; "
            "give the row raises_agree = true to count both raising the same class as agreement"
        )
    if kind.expected_stored and "expected" in sample:
        raise SampleError(f"{where} a sample gives either expected or raises, not both")
    problem = name_problem(sample[RAISES], invariant.entry)
    if problem:
        raise SampleError(f"{where} {problem}")


def _check_callables(invariant: Invariant, index: int, values: Any) -> None:
    """Each argument given as a callable (`values.callable_value`) names one the row may pass.

    Raises:
        SampleError: naming the sample and the argument."""
    items = values.items() if type(values) is dict else enumerate(values)
    for key, value in items:
        name = callable_value(value)
        problem = callable_value_problem(name, invariant.entry) if name is not None else None
        if problem:
            raise SampleError(
                f"sample {index}: {'argument ' + str(key) if type(key) is int else key}: callable {problem}"
            )


def _check_receiver(invariant: Invariant, index: int, sample: dict[str, Any]) -> None:
    if invariant.receiver is None:
        return
    if "receiver" not in sample:
        raise SampleError(f"sample {index} lacks receiver (the arguments of {invariant.receiver})")
    if type(sample["receiver"]) not in (list, dict):
        raise SampleError(
            f"sample {index}: receiver must be a JSON array (positional arguments) or object (keyword arguments)"
        )


def _check_table_sample(invariant: Invariant, index: int, sample: dict[str, Any]) -> None:
    keys = {"args", RAISES if RAISES in sample else "expected"} | ({"receiver"} if invariant.receiver else set())
    if set(sample) != keys:
        raise SampleError(f"sample {index} must have exactly the keys {' and '.join(sorted(keys))}")
    if type(sample["args"]) is not list:
        raise SampleError(f"sample {index}: args must be a JSON array")
    if invariant.args_names and len(sample["args"]) != len(invariant.args_names):
        raise SampleError(
            f"sample {index}: args has {len(sample['args'])} value(s) for the {len(invariant.args_names)} args_names"
        )
    _check_receiver(invariant, index, sample)
    _check_callables(invariant, index, sample["args"])


def _check_keyword_sample(invariant: Invariant, index: int, sample: dict[str, Any]) -> None:
    _check_receiver(invariant, index, sample)
    arguments = {
        key: value for key, value in sample.items() if not (key == "receiver" and invariant.receiver) and key != RAISES
    }
    _check_callables(invariant, index, arguments)
    rule = kinds.kind(invariant.kind).sample_rule
    if rule == kinds.ONE_X and len([v for v in arguments.values() if callable_value(v) is None]) != 1:
        raise SampleError(
            f"sample {index} must have exactly one argument (the value x of inverse(entry(x)) == x)"
            + (" besides receiver" if invariant.receiver else "")
            + " besides callables"
        )
    if rule == kinds.ONE_ARG and len(arguments) != 1:
        raise SampleError(f"sample {index} must have exactly one argument (the value a of f(a, e) == a)")
    if rule == kinds.OVER:
        values = sample.get(invariant.over or "")
        if type(values) is not list or len(values) < 2:
            raise SampleError(f"sample {index}: {invariant.over} must be a JSON array of at least two values")
        numbers = all(type(v) in (int, float) for v in values)
        if not numbers and not all(type(v) is str for v in values):
            raise SampleError(f"sample {index}: {invariant.over} must hold only numbers or only strings")
