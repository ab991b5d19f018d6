"""TOML text of an oracle row: one `[[invariant]]` table written from plain values, for the files
the gate writes (the probe's oracle files, runs/probe.py). Pure: standard library only.

The values are those `tomllib` gives back: str, int, float, bool, lists and tables of them; a table
is written inline (`{ key = value }`) and `generate` as the `[invariant.generate]` sub-table. Strings
are written as TOML basic strings: JSON's escapes are TOML's (TOML 1.0, "Basic strings"), except
that TOML has no `\\/`, which `json.dumps` never writes, and refuses a raw U+007F, which it
writes escaped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

# A key TOML takes bare (TOML 1.0, "Keys": A-Za-z0-9_-); any other key is written quoted.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def key_text(key: str) -> str:
    """`key` bare when TOML allows it, else as a quoted basic string. Raises nothing."""
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def value_text(value: Any) -> str:
    """One TOML value: a basic string, an integer, a float, a boolean, an array or an inline table.

    Raises:
        ValueError: for None, NaN, an infinity or any other type (TOML has no such value).
    """
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        if not math.isfinite(value):
            raise ValueError(f"TOML cannot hold the float {value!r} here")
        return repr(value)
    if type(value) is str:
        # TOML refuses a raw U+007F in a basic string, which json.dumps leaves as it is.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if type(value) is list:
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if type(value) is dict:
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{key_text(str(k))} = {value_text(v)}" for k, v in value.items()) + " }"
    raise ValueError(f"TOML has no value of type {type(value).__name__}")


def row_table(row: Mapping[str, Any]) -> str:
    """The `[[invariant]]` table of `row` (key -> value in order), its `generate` table, when it has
    one, written after the row's own keys as `[invariant.generate]`; ends with a newline.

    Raises:
        ValueError: as `value_text`, for a value TOML cannot hold.
    """
    lines = ["[[invariant]]"]
    for key, value in row.items():
        if key != "generate":
            lines.append(f"{key_text(key)} = {value_text(value)}")
    generate = row.get("generate")
    if isinstance(generate, Mapping):
        lines.append("")
        lines.append("[invariant.generate]")
        lines.extend(f"{key_text(str(k))} = {value_text(v)}" for k, v in generate.items())
    return "\n".join(lines) + "\n"
