"""Blob contents: strict JSON parsing and the sample shape each kind expects (docs/design.md section 2)."""

from __future__ import annotations

import json
import math
from typing import Any

from tools.oracle_gate.spec.encoding import text_problem
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
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise SampleError(f"object key {key!r} appears twice")
        out[key] = value
    return out


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
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise SampleError(f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # e.g. an integer longer than Python's 4300-digit conversion limit
        raise SampleError(f"is not usable JSON: {exc}") from None
    except RecursionError:
        raise SampleError("nests too deeply") from None


def check_shape(invariant: Invariant, samples: Any) -> None:
    """Checks that parsed samples have the shape the invariant's kind needs (docs/design.md
    section 2): a non-empty array of objects; `idempotent` ones hold `state` and every name of
    `args`; `exact_table` ones exactly `args` (an array, as long as `args_names` when the row has
    them) and `expected`, plus `receiver` when the row has one; `antisymmetric` ones exactly the two
    `args_names`; the keyword kinds' ones a `receiver` (an array or an object) when the row has one,
    `round_trip` ones exactly one argument besides it, and `monotonic` ones an `over` field that is
    an array of at least two numbers or of at least two strings.

    Raises:
        SampleError: naming the first sample (0-based index) that is wrong.
    """
    if type(samples) is not list or not samples:
        raise SampleError("must be a non-empty JSON array of samples")
    for index, sample in enumerate(samples):
        if type(sample) is not dict:
            raise SampleError(f"sample {index} must be a JSON object")
        if invariant.kind == "idempotent":
            missing = [k for k in ("state", *invariant.args) if k not in sample]
            if missing:
                raise SampleError(f"sample {index} lacks {', '.join(missing)}")
        elif invariant.kind == "exact_table":
            _check_table_sample(invariant, index, sample)
        elif invariant.kind == "antisymmetric":
            if set(sample) != set(invariant.args_names):
                raise SampleError(f"sample {index} must have exactly the keys {', '.join(invariant.args_names)}")
        else:
            _check_keyword_sample(invariant, index, sample)


def _check_receiver(invariant: Invariant, index: int, sample: dict[str, Any]) -> None:
    if invariant.receiver is None:
        return
    if "receiver" not in sample:
        raise SampleError(f"sample {index} lacks receiver (the arguments of {invariant.receiver})")
    if type(sample["receiver"]) not in (list, dict):
        raise SampleError(f"sample {index}: receiver must be a JSON array (positional arguments) or object "
                          "(keyword arguments)")


def _check_table_sample(invariant: Invariant, index: int, sample: dict[str, Any]) -> None:
    keys = {"args", "expected"} | ({"receiver"} if invariant.receiver else set())
    if set(sample) != keys:
        raise SampleError(f"sample {index} must have exactly the keys {' and '.join(sorted(keys))}")
    if type(sample["args"]) is not list:
        raise SampleError(f"sample {index}: args must be a JSON array")
    if invariant.args_names and len(sample["args"]) != len(invariant.args_names):
        raise SampleError(f"sample {index}: args has {len(sample['args'])} value(s) for the "
                          f"{len(invariant.args_names)} args_names")
    _check_receiver(invariant, index, sample)


def _check_keyword_sample(invariant: Invariant, index: int, sample: dict[str, Any]) -> None:
    _check_receiver(invariant, index, sample)
    arguments = [key for key in sample if not (key == "receiver" and invariant.receiver)]
    if invariant.kind == "round_trip" and len(arguments) != 1:
        raise SampleError(f"sample {index} must have exactly one argument (the value x of inverse(entry(x)) == x)"
                          + (" besides receiver" if invariant.receiver else ""))
    if invariant.kind == "monotonic":
        values = sample.get(invariant.over)
        if type(values) is not list or len(values) < 2:
            raise SampleError(f"sample {index}: {invariant.over} must be a JSON array of at least two values")
        numbers = all(type(v) in (int, float) for v in values)
        if not numbers and not all(type(v) is str for v in values):
            raise SampleError(f"sample {index}: {invariant.over} must hold only numbers or only strings")
