"""Seeds: the constants a function's own code compares its inputs with, for the generators drawn
from its annotations (docs/oracles.md, "Generators from annotations").

Uniform values rarely hit the one string a parser looks for or the one length where a loop turns,
so, as search-based test generators do (constant seeding), `seeds(function, module)` collects:
the int, float and str constants of the function's defaults and body (not its docstring, nor a
message it raises or formats in an f-string), of the module-level assignments it reads by name
(`PATTERN = re.compile(...)`, `DEFAULT = "-"`) and of the module-level functions it calls by name
(one level); and, for a string literal given to a `re`
function as its pattern, a short string made to match it (`&#(\\d+);` gives `&#1;`) by reading
the pattern with the standard library's parser, never by running it (a pattern of the code could
backtrack without end). Each int `c` also gives `c - 1` and `c + 1`.

Pure: standard library and `ast`; it never imports production code and never runs a pattern.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from re import _parser  # type: ignore[attr-defined]  # the standard library's pattern parser, Python 3.11+
from typing import Any

MAX_SEEDS = 24
"""Most strings, and most numbers, kept per function (in source order): a generator's `choice` and
`pieces` stay short enough to read in a proposed row."""
MAX_SEED_LEN = 64
"""Longest string kept, in characters (spec/generate.py MAX_PIECE_LEN)."""
MAX_PATTERN_LEN = 200
"""Longest pattern an example is made for, in characters."""
MAX_REPEAT = 4
"""Most repetitions an example gives one repeated item (`x{7}` gives `xxxx`, then fails its check)."""
INT64 = (-(2**63), 2**63 - 1)
_RE_FUNCTIONS = frozenset({"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"})
# A character each category of the regular-expression parser stands for, and ones that are not.
_CATEGORY = {
    "CATEGORY_DIGIT": "1",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
}
_CANDIDATES = "a-A0 _.x1é/"


@dataclass(frozen=True)
class Seeds:
    """A function's constants for drawing.

    Attributes:
        strings: non-empty strings of at most MAX_SEED_LEN characters, pattern examples included,
            each once, in source order; at most MAX_SEEDS.
        numbers: ints (with their neighbours) and floats, each once, in source order, within
            signed 64-bit bounds; at most MAX_SEEDS. No bools.
    """

    strings: tuple[str, ...] = ()
    numbers: tuple[int | float, ...] = ()


def seeds(function: ast.FunctionDef | ast.AsyncFunctionDef, module: ast.Module) -> Seeds:
    """The seeds of `function` (a `def` of `module`, at module level or in a class). Raises nothing."""
    assigned, functions = module_names(module)
    nodes: list[ast.AST] = [*function.args.defaults, *(d for d in function.args.kw_defaults if d is not None)]
    nodes += _body(function)
    read = {n.id for node in list(nodes) for n in ast.walk(node) if isinstance(n, ast.Name)}
    for name in sorted(read):
        if name in assigned:
            nodes.append(assigned[name])
        elif name in functions and functions[name] is not function:
            nodes += _body(functions[name])
    strings: list[str] = []
    numbers: list[int | float] = []
    patterns = _patterns(nodes)
    for node in sorted(_constants(nodes), key=lambda c: (c.lineno, c.col_offset)):
        value = node.value
        if isinstance(value, str):
            text = _example(value) if id(node) in patterns else value
            if text and len(text) <= MAX_SEED_LEN and text not in strings and _encodable(text):
                strings.append(text)
        elif isinstance(value, (int, float)) and type(value) is not bool:
            near = [value - 1, value, value + 1] if isinstance(value, int) else [value]
            numbers += [n for n in near if n not in numbers and (isinstance(n, float) or INT64[0] <= n <= INT64[1])]
    return Seeds(tuple(strings[:MAX_SEEDS]), tuple(numbers[:MAX_SEEDS]))


def _encodable(text: str) -> bool:
    """Whether `text` has no lone surrogate: a TOML file (UTF-8) cannot hold one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The statements of a function without its docstring."""
    return function.body[1:] if ast.get_docstring(function) is not None else list(function.body)


def module_names(module: ast.Module) -> tuple[dict[str, ast.expr], dict[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(name -> value of a module-level `NAME = value` or `NAME: T = value` (the last one when a
    name is bound twice), name -> module-level function). Raises nothing."""
    assigned: dict[str, ast.expr] = {}
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for statement in module.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            if isinstance(statement.targets[0], ast.Name):
                assigned[statement.targets[0].id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            assigned[statement.target.id] = statement.value
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[statement.name] = statement
    return assigned, functions


def _constants(nodes: list[ast.AST]) -> list[ast.Constant]:
    """Every constant under `nodes`, each node once, but those of a `raise` statement and of an
    f-string: a message the code writes is no input it compares with."""
    seen: dict[int, ast.Constant] = {}
    messages: set[int] = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, (ast.Raise, ast.JoinedStr)):
                messages.update(id(c) for c in ast.walk(child) if isinstance(c, ast.Constant))
            elif isinstance(child, ast.Constant) and hasattr(child, "lineno"):
                seen.setdefault(id(child), child)
    return [c for key, c in seen.items() if key not in messages]


def _patterns(nodes: list[ast.AST]) -> set[int]:
    """The ids of the string constants given as the pattern of a `re` function (`re.compile(p)`,
    `compile(p)`, `re.sub(p, ...)`, or `pattern=p`)."""
    found: set[int] = set()
    for node in nodes:
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name not in _RE_FUNCTIONS:
                continue
            given = [call.args[0]] if call.args else []
            given += [k.value for k in call.keywords if k.arg == "pattern"]
            found.update(id(g) for g in given if isinstance(g, ast.Constant) and isinstance(g.value, str))
    return found


class _NoExample(Exception):
    """A pattern item the example maker does not handle."""


def _example(pattern: str) -> str:
    """A short string made to match `pattern`, or "" when none is made. It is never checked with
    the pattern: running a pattern of the code on any string could backtrack without end (a
    lookahead the example ignores, nested repeats), and a seed that misses is only a weaker seed."""
    if len(pattern) > MAX_PATTERN_LEN:
        return ""
    try:
        return _items(_parser.parse(pattern), 0)
    except (_NoExample, re.error, RecursionError, ValueError, TypeError, OverflowError):
        return ""


def _items(parsed: Any, depth: int) -> str:
    """The example of a parsed pattern's items, in order."""
    if depth > 20:
        raise _NoExample
    out = []
    for op, value in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(value))
        elif name == "NOT_LITERAL":
            out.append("a" if value != ord("a") else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_one_of_set(value))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, item = value
            out.append(_items(item, depth + 1) * min(max(low, 1) if high else 0, MAX_REPEAT))
        elif name == "SUBPATTERN":
            out.append(_items(value[-1], depth + 1))
        elif name == "BRANCH":
            out.append(_items(value[1][0], depth + 1))
        elif name == "ASSERT":
            out.append(_items(value[1], depth + 1))
        elif name == "ATOMIC_GROUP":
            out.append(_items(value, depth + 1))
        elif name not in ("ASSERT_NOT", "AT"):
            raise _NoExample
        if sum(len(part) for part in out) > MAX_SEED_LEN:
            raise _NoExample  # nested repeats multiply: never build past what a seed may hold
    return "".join(out)


def _one_of_set(items: Any) -> str:
    """A character of a `[...]` set: its first member, or for `[^...]` a candidate outside it."""
    listed = [(str(op), value) for op, value in items]
    if listed and listed[0][0] == "NEGATE":
        for candidate in _CANDIDATES:
            if not any(_in_item(op, value, candidate) for op, value in listed[1:]):
                return candidate
        raise _NoExample
    op, value = listed[0]
    if op == "LITERAL":
        return chr(value)
    if op == "RANGE":
        return chr(value[0])
    if op == "CATEGORY" and str(value) in _CATEGORY:
        return _CATEGORY[str(value)]
    raise _NoExample


def _in_item(op: str, value: Any, char: str) -> bool:
    """Whether one member of a set matches `char`."""
    if op == "LITERAL":
        return bool(value == ord(char))
    if op == "RANGE":
        return bool(value[0] <= ord(char) <= value[1])
    if op == "CATEGORY" and str(value) in _CATEGORY_TEXT:
        return re.fullmatch(_CATEGORY_TEXT[str(value)], char) is not None
    return True


_CATEGORY_TEXT = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}
