"""The number and name rules that oracle rows and their generators share (docs/design.md section 2).

A number is a 64-bit integer (TOML's integer range, TOML v1.0.0 "Integer") or a finite float;
`bool` is not a number. A name (an argument, a sample field, each part of an entry's module path)
is a Python identifier in ASCII. A sample's argument may name a callable (`callable_value`).
"""

from __future__ import annotations

import math
import re

# TOML v1.0.0, "Integer": "Arbitrary 64-bit signed integers ... should be accepted and handled
# losslessly"; a value outside cannot be written in an oracle file.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# An ASCII Python identifier (the Python reference, "Identifiers and keywords", ASCII range).
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
ARG_PATTERN = re.compile(IDENT)


def is_number(value: object) -> bool:
    """True for a 64-bit int (TOML's integer range) or a finite float; bool is not a number here
    (docs/design.md section 2)."""
    if type(value) is int:
        return INT64_MIN <= value <= INT64_MAX
    return type(value) is float and math.isfinite(value)


# A callable passed as an argument: a sample's `{"callable": "module:name"}` (docs/oracles.md,
# "Structures and callables as arguments"); call_fields.callable_value_problem says which it may name.
CALLABLE_KEY = "callable"


def callable_value(value: object) -> str | None:
    """The name a sample's argument value gives as a callable (`{"callable": "module:name"}`, an
    object with that one key and a string), or None for any other value."""
    if type(value) is dict and len(value) == 1 and type(value.get(CALLABLE_KEY)) is str:
        return value[CALLABLE_KEY]  # type: ignore[no-any-return]
    return None
