"""Reads a string constant out of a .bzl file, so a test or a benchmark starts a gate action with
the very text Bazel starts it with, not a copy of it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

_LITERAL = r"""(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""


def starlark_string(path: Path, name: str) -> str:
    """The value of the Starlark string constant `name` in the .bzl file `path`: its literals,
    joined (a `NAME = ("..." + "...")` or `NAME = "..."` assignment at the start of a line).

    Raises:
        SystemExit: when `path` assigns no such constant.
    """
    match = re.search(rf"^{re.escape(name)} = \(?((?:\s*\+?\s*{_LITERAL})+)", path.read_text(), re.M)
    if not match:
        raise SystemExit(f"{path}: no string constant {name}")
    return "".join(ast.literal_eval(lit) for lit in re.findall(_LITERAL, match.group(1)))
