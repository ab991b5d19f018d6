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
    """Checks that parsed samples have the shape the invariant's kind needs.

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
            if set(sample) != {"args", "expected"}:
                raise SampleError(f"sample {index} must have exactly the keys args and expected")
            if type(sample["args"]) is not list:
                raise SampleError(f"sample {index}: args must be a JSON array")
