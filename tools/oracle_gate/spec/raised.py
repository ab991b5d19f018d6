"""Expected exceptions (docs/oracles.md, "Expected exceptions"): the names a stored sample's
`raises` may give, the raised results the caller reports, and the verdict on a sample that must
raise.

A name is the bare name of an exception class of the builtins (`ValueError`) or `module:qualname`
of a class in the standard library or the entry's own package (`decimal:InvalidOperation`,
`shop.parse:ParseError`, `shop.parse:Parser.Error`). The caller reports every raised result as
`{"raised": "Type: message", "classes": [C, ...]}`, C the `module:qualname` of each class of the
raised class's method resolution order, the raised class first (actions/caller.py); a sample
that must raise NAME passes when NAME's `class_key` is one of them, so a subclass passes too. The
judge loads no production class: it compares names. Pure: standard library and `verdicts` only.
"""

from __future__ import annotations

import builtins
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from tools.oracle_gate.spec.values import IDENT
from tools.oracle_gate.spec.verdicts import Verdict

# The sample field that names the class a call must raise.
RAISES = "raises"
# `module:qualname` of a class as the caller reports it and a `raises` name outside the builtins
# gives it: a dotted module of identifiers, a dotted qualified name of identifiers, with
# `<locals>` inside it (a class defined in a function).
CLASS_NAME = re.compile(rf"{IDENT}(?:\.{IDENT})*:{IDENT}(?:\.(?:{IDENT}|<locals>))*")
# The longest class name a reply may carry, and the most classes of one raised result (the caller
# keeps the first this many of the method resolution order).
MAX_CLASS_CHARS = 300
MAX_CLASSES = 64
# Characters of a returned value a verdict quotes.
MAX_SHOWN_CHARS = 200
_BARE = re.compile(IDENT)
# What a `raises` of a sample that names no class is told to write.
_SYNTAX = "write a builtin exception as its bare name (ValueError), another as module:Class (pkg.mod:ParseError)"


def name_problem(name: object, entry: str) -> str | None:
    """Why `name`, a stored sample's `raises` in a row whose (first) entry is `entry`, is refused,
    or None: it must be a string that is the bare name of an exception class of the builtins, or
    `module:qualname` (`CLASS_NAME`) with the module in the standard library
    (`sys.stdlib_module_names`) or the entry's own top-level package. `builtins:X` is refused: the
    builtins' classes are written bare. Raises nothing."""
    if type(name) is not str:
        return f"must be a string naming an exception class, got {type(name).__name__}"
    if _BARE.fullmatch(name):
        found = getattr(builtins, name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return None
        return f"{name!r} is not an exception class of the builtins; {_SYNTAX}"
    if not CLASS_NAME.fullmatch(name) or len(name) > MAX_CLASS_CHARS:
        return f"{name[:MAX_CLASS_CHARS]!r} is not a class name; {_SYNTAX}"
    module = name.partition(":")[0]
    top, own = module.split(".", 1)[0], entry.partition(":")[0].split(".", 1)[0]
    if top == "builtins":
        return f"write {name!r} as its bare name {name.partition(':')[2]!r}"
    if top not in sys.stdlib_module_names and top != own:
        return f"{name!r} is outside the builtins, the standard library and the entry's package {own!r}"
    return None


def class_key(name: str) -> str:
    """The `module:qualname` a valid `raises` name stands for: `builtins:ValueError` for
    `ValueError`, the name itself otherwise."""
    return name if ":" in name else f"builtins:{name}"


def shown_name(key: str) -> str:
    """The `raises` name of a reported class `module:qualname`: the bare name for a class of the
    builtins, the key itself otherwise (the inverse of `class_key`)."""
    module, _, qualname = key.partition(":")
    return qualname if module == "builtins" else key


def raised_classes(observed: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """(message, classes) of a raised result `{"raised": TEXT, "classes": [C, ...]}` read strictly
    (exactly those keys, TEXT a string, 1 to MAX_CLASSES classes, each a `CLASS_NAME` of at most
    MAX_CLASS_CHARS characters); None for any other value. Raises nothing."""
    if type(observed) is not dict or set(observed) != {"raised", "classes"}:
        return None
    text, classes = observed["raised"], observed["classes"]
    if type(text) is not str or type(classes) is not list or not 1 <= len(classes) <= MAX_CLASSES:
        return None
    for item in classes:
        if type(item) is not str or len(item) > MAX_CLASS_CHARS or not CLASS_NAME.fullmatch(item):
            return None
    return text, list(classes)


def outcome(result: Any) -> tuple[str, Any]:
    """One caller result as a stored sample would say it: `("value", V)` for `{"value": V}`,
    `("raises", NAME)` for a raised result (NAME the `shown_name` of the raised class, the first of
    its classes), so that a recording can write `"expected": V` or `"raises": NAME`.

    Raises:
        ValueError: for a result that is neither (not plain JSON, malformed), naming why.
    """
    if type(result) is dict and set(result) == {"value"}:
        return "value", result["value"]
    raised = raised_classes(result)
    if raised is not None:
        return "raises", shown_name(raised[1][0])
    if type(result) is dict and set(result) == {"unplain"}:
        raise ValueError(f"the result is not plain JSON: {result['unplain']}")
    raise ValueError("a malformed result: expected value, or raised with its classes")


def judge_raises(observed: Any, name: str) -> Verdict:
    """The verdict on a sample that must raise the class `name` (a `raises` name or a reported
    `module:qualname`) or a subclass: ok when `class_key(name)` is one of the raised result's
    classes; otherwise the reason names what happened (`returned 3 instead of raising ValueError`,
    `raised KeyError: 'x', not ValueError or a subclass`). Raises nothing."""
    raised = raised_classes(observed)
    wanted = shown_name(class_key(name))
    if raised is not None:
        if class_key(name) in raised[1]:
            return Verdict(True)
        return Verdict(False, f"raised {raised[0]}, not {wanted} or a subclass")
    if type(observed) is dict and set(observed) == {"value"}:
        try:
            returned = json.dumps(observed["value"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            returned = "a value"
        return Verdict(False, f"returned {returned[:MAX_SHOWN_CHARS]} instead of raising {wanted}")
    if type(observed) is dict and set(observed) == {"unplain"}:
        return Verdict(False, f"returned a value that is not plain JSON instead of raising {wanted}")
    return Verdict(False, "malformed observation: expected one of value, raised with its classes, unplain")
