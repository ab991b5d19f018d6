"""The coverage record: which production functions a row's calls entered, as the caller reports it
(docs/design.md section 12).

The caller (`actions/caller.py`) adds `"ran": [NAME, ...]` to a row's reply: the `module:qualname`
of every function of the production packages that was entered while it called the row's entry on
the row's samples, sorted, at most MAX_RAN_FUNCTIONS. The judge keeps it beside the verdict and
writes it as the testcase property RAN_PROPERTY (the names separated by spaces); `check` reads it
back (`runs/results.py`).

The record comes from the change's own process, so it is untrusted: production code can write any
names there. It is never part of a verdict or of a digest; `check` uses it only to add a note or a
failure (docs/threat-model.md). Everything here is pure, raises nothing, and turns a record it does
not accept into None ("no record"), never into an error of the row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# The JUnit property of the judge's testcases that holds a row's record.
RAN_PROPERTY = "ran_functions"
# At most this many names per row (the caller keeps the first ones, sorted), each at most
# MAX_NAME_CHARS characters.
MAX_RAN_FUNCTIONS = 10000
MAX_NAME_CHARS = 512


def valid_name(value: Any) -> bool:
    """True when `value` is a str of at most MAX_NAME_CHARS characters of the form
    `package.module:Qual.name`, as a function's module `__name__` and its code's `co_qualname` give
    it: every part of the module and of the qualified name an identifier (`str.isidentifier`),
    except the `<locals>` between the parts of a nested function's qualified name. `value` may be
    anything (it comes from an untrusted reply). Raises nothing."""
    if type(value) is not str or len(value) > MAX_NAME_CHARS or value.count(":") != 1:
        return False
    module, _, qualname = value.partition(":")
    return (
        all(part.isidentifier() for part in module.split("."))
        and all(part.isidentifier() for part in qualname.split(".") if part != "<locals>")
        and not qualname.startswith("<locals>")
        and not qualname.endswith("<locals>")
    )


def ran_record(value: Any) -> tuple[str, ...] | None:
    """The names of a reply's `ran` value, sorted and without duplicates, or None when it is not a
    record the gate accepts: a list of at most MAX_RAN_FUNCTIONS names, each `valid_name`.

    Args:
        value: the parsed JSON value of the reply's `ran` key (any value: the reply is untrusted).

    Returns:
        A tuple of names (empty when the record says nothing ran), or None. Raises nothing.
    """
    if type(value) is not list or len(value) > MAX_RAN_FUNCTIONS:
        return None
    if not all(valid_name(item) for item in value):
        return None
    return tuple(sorted(set(value)))


def ran_text(names: Iterable[str]) -> str:
    """The property value of a record (names, as `ran_record` gives them): its names separated by
    single spaces ("" for none). Raises nothing."""
    return " ".join(names)


def parse_ran_text(text: str | None) -> tuple[str, ...] | None:
    """The record a property value written by `ran_text` holds, or None: when `text` is None (the
    testcase has no such property) or is not one `ran_text` writes of an accepted record (any
    other whitespace, an invalid name, too many names). Raises nothing."""
    if text is None:
        return None
    names = text.split(" ") if text else []
    if any(not name for name in names):
        return None
    return ran_record(names)
