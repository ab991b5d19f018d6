"""The fields of a row that say how the caller reaches real code and what is judged of its result
(docs/design.md section 2, "Methods, objects and relations"): `receiver`, `build`, `args_names`,
`project`, and the fields of the kinds that judge by a pattern, a reference implementation or a
relation between calls: `pattern`, `reference`, `inverse`, `over`, `direction`, `entries`.

Validation only; `schema.py` calls `check_call_fields` for each row and keeps what it accepts on
the Invariant. The caller (actions/caller.py) runs receivers, built arguments and projections; the
reference action runs references; the judge applies patterns and relations.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence

from tools.oracle_gate.spec.kinds import PAIR, Kind
from tools.oracle_gate.spec.values import ARG_PATTERN, IDENT

# `package.module:name`, `package.module:Class.name`: what `entry`, `receiver`, `build`, `inverse`
# and `entries` name (one level below a module-level class at most).
CALLABLE_PATTERN = re.compile(rf"({IDENT}(?:\.{IDENT})+):({IDENT}(?:\.{IDENT})?)")
# A reference implementation lives in a package under the protected `oracles/reference/` folder.
REFERENCE_PATTERN = re.compile(rf"(oracles\.reference(?:\.{IDENT})+):({IDENT})")
# `project` values (docs/oracles.md, "Projections").
PROJECTIONS = ("bool", "float", "int", "len", "list", "str")
DIRECTIONS = ("non_decreasing", "non_increasing")
MAX_PATTERN_CHARS = 1000
MAX_ENTRIES = 16
# Sample fields that carry meaning of their own and cannot be argument names.
RESERVED_FIELDS = ("args", "expected", "raises", "receiver")

# `build` values that take a JSON array whole and are not production code: docs/oracles.md (the
# caller's `_CONTAINERS`, actions/caller.py). `builtins:bytes` takes an array of ints from 0 to 255,
# `builtins:dict` an array of [key, value] pairs.
CONTAINER_BUILDS = ("builtins:tuple", "builtins:set", "builtins:frozenset", "builtins:bytes", "builtins:dict")
# `each:<builder>` builds every item of a JSON array with `<builder>` and passes the list
# (`build = { pairs = "each:builtins:tuple" }` gives a list of tuples); at most MAX_EACH deep.
EACH = "each:"
MAX_EACH = 4
# A callable passed as an argument (`values.callable_value`) is in `builtins`, the standard library
# or the row's package.
CALLABLE_VALUE_PATTERN = re.compile(rf"({IDENT}(?:\.{IDENT})*):({IDENT}(?:\.{IDENT})?)")


def callable_value_problem(name: str, entry: str) -> str | None:
    """Why `name`, given as a callable argument of a row whose entry is `entry`, is refused, or None:
    it must be `module:name` (`module:Class.name`) in `builtins`, a module of the standard library
    (`sys.stdlib_module_names`, Python 3.10+) or the entry's own top-level package."""
    match = CALLABLE_VALUE_PATTERN.fullmatch(name)
    if not match:
        return f"{name!r} is not of the form module:name"
    top = match.group(1).split(".", 1)[0]
    own = entry.partition(":")[0].split(".", 1)[0]
    if top != "builtins" and top not in sys.stdlib_module_names and top != own:
        return f"{name!r} is outside builtins, the standard library and the entry's package {own!r}"
    return None


# Records one problem of the row being validated: (field, message).
Bad = Callable[[str, str], None]


def check_callable(value: object, field: str, allowed_packages: Sequence[str] | None, bad: Bad) -> bool:
    """Checks one callable name of a row (`entry`, `receiver`, a `build` value, `inverse`, an item
    of `entries`): a string `package.module:name` or `package.module:Class.name` whose top-level
    package is one of `allowed_packages` (None: not checked). Returns True when it is acceptable."""
    if type(value) is not str:
        bad(field, f"must be a string, got {type(value).__name__}")
        return False
    match = CALLABLE_PATTERN.fullmatch(value)
    if not match:
        bad(field, f"{value!r} is not of the form package.module:function or package.module:Class.method")
        return False
    top = match.group(1).split(".", 1)[0]
    if allowed_packages is not None and top not in allowed_packages:
        allowed = ", ".join(allowed_packages) or "(none)"
        bad(field, f"module {match.group(1)!r} is outside the production packages policy allows ({allowed})")
        return False
    return True


def is_method(name: str) -> bool:
    """True for a callable name whose part after the colon is `Class.method`."""
    return "." in name.partition(":")[2]


def check_receiver(row: dict[str, object], kind: Kind | None, allowed_packages: Sequence[str] | None, bad: Bad) -> None:
    """`receiver` builds the object a method entry is called on; the entry must be `Class.method`.
    `kind` is the row's Kind, None for an unknown kind."""
    if "receiver" not in row:
        return
    if kind is not None and "receiver" in kind.refuses:
        bad("receiver", f"is not allowed for kind {kind.name!r}" + kind.receiver_hint)
        return
    if check_callable(row["receiver"], "receiver", allowed_packages, bad):
        entries = kind is not None and kind.entries and type(row.get("entries")) is list
        entry = row.get("entries", [None])[0] if entries else row.get("entry")  # type: ignore[index]
        if type(entry) is str and not is_method(entry):
            bad("receiver", f"needs a method entry (package.module:Class.method), and {entry!r} is not one")


def check_args_names(row: dict[str, object], kind: Kind | None, bad: Bad) -> tuple[str, ...] | None:
    """`args_names` names the positional arguments (`Kind.positional`; a PAIR kind's exactly
    `Kind.arity`);
    returns them when valid."""
    if "args_names" not in row:
        return None
    names = row["args_names"]
    if type(names) is not list or not names or not all(type(n) is str for n in names):
        bad("args_names", "must be a non-empty array of strings")
        return None
    for name in names:
        if not ARG_PATTERN.fullmatch(name) or name in RESERVED_FIELDS or name == "count":
            bad("args_names", f"{name!r} is not a usable argument name")
            return None
    if len(set(names)) != len(names):
        bad("args_names", "names an argument twice")
        return None
    if kind is not None and kind.sample == PAIR and len(names) != kind.arity:
        count = {2: "two", 3: "three"}.get(kind.arity, str(kind.arity))
        bad("args_names", f"must name exactly {count} arguments for kind {kind.name!r}, got {len(names)}")
        return None
    return tuple(names)


def check_build(
    row: dict[str, object],
    kind: Kind | None,
    args_names: tuple[str, ...] | None,
    allowed_packages: Sequence[str] | None,
    bad: Bad,
) -> None:
    """`build = { name = "pkg.mod:Class.parse" }`: the argument `name` is built from its JSON value."""
    if "build" not in row:
        return
    table = row["build"]
    if kind is not None and "build" in kind.refuses:
        bad("build", f"is not allowed for kind {kind.name!r}")
        return
    if type(table) is not dict or not table:
        bad("build", 'must be a non-empty table of argument name = "package.module:callable"')
        return
    for name, value in table.items():
        where = f"build.{name}"
        if not ARG_PATTERN.fullmatch(name) or name in RESERVED_FIELDS:
            bad(where, f"{name!r} is not a usable argument name")
        elif kind is not None and kind.positional and (args_names is None or name not in args_names):
            bad(
                where,
                f"names {name!r}, which is not in args_names; kind {kind.name!r} builds positional arguments "
                "named by args_names",
            )
        inner, depth = value, 0
        while type(inner) is str and inner.startswith(EACH):
            inner, depth = inner[len(EACH) :], depth + 1
        if depth > MAX_EACH:
            bad(where, f"nests {depth} `each:` builders; at most {MAX_EACH}")
        elif inner not in CONTAINER_BUILDS:
            check_callable(inner, where, allowed_packages, bad)


def check_project(row: dict[str, object], kind: Kind | None, bad: Bad) -> None:
    """`project` turns a result that is not plain JSON into plain JSON (`PROJECTIONS`, `attrs`, `call`)."""
    if "project" not in row:
        return
    value = row["project"]
    if kind is not None and "project" in kind.refuses:
        bad("project", f"is not allowed for kind {kind.name!r}")
    elif type(value) is str:
        if value not in PROJECTIONS:
            bad(
                "project",
                f"unknown projection {value!r}; projections are {', '.join(PROJECTIONS)}, "
                '{ attrs = [...] } and { call = "method" }',
            )
    elif type(value) is dict and set(value) == {"attrs"}:
        attrs = value["attrs"]
        if (
            type(attrs) is not list
            or not attrs
            or not all(type(a) is str and ARG_PATTERN.fullmatch(a) for a in attrs)
            or len(set(attrs)) != len(attrs)
        ):
            bad("project.attrs", "must be a non-empty array of distinct attribute names")
    elif type(value) is dict and set(value) == {"call"}:
        if type(value["call"]) is not str or not ARG_PATTERN.fullmatch(value["call"]):
            bad("project.call", "must be the name of a method that takes no arguments")
    else:
        bad("project", f'must be one of {", ".join(PROJECTIONS)}, {{ attrs = [...] }} or {{ call = "method" }}')


def check_pattern(row: dict[str, object], bad: Bad) -> None:
    """`pattern` (kind `matches`): a Python regular expression the whole string result must match."""
    if "pattern" not in row:
        return
    pattern = row["pattern"]
    if type(pattern) is not str or not pattern or len(pattern) > MAX_PATTERN_CHARS:
        bad("pattern", f"must be a non-empty string of at most {MAX_PATTERN_CHARS} characters")
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        bad("pattern", f"is not a Python regular expression: {exc}")


def check_reference(row: dict[str, object], bad: Bad) -> None:
    """`reference`: a function of a package under `oracles/reference/` (human-owned, protected)."""
    if "reference" in row:
        value = row["reference"]
        if type(value) is not str or not REFERENCE_PATTERN.fullmatch(value):
            bad(
                "reference",
                f"{value!r} is not a function of a package under oracles/reference/ "
                "(oracles.reference.module:function)",
            )


def check_relation(row: dict[str, object], allowed_packages: Sequence[str] | None, bad: Bad) -> None:
    """The fields of the relation kinds: `inverse`, `over` and `direction`, `entries` (a kind's
    own rule on them is its `Kind.check`)."""
    if "inverse" in row:
        check_callable(row["inverse"], "inverse", allowed_packages, bad)
    if "over" in row and (
        type(row["over"]) is not str or not ARG_PATTERN.fullmatch(row["over"]) or row["over"] in RESERVED_FIELDS
    ):
        bad("over", "must be the name of a keyword argument")
    if "direction" in row and row["direction"] not in DIRECTIONS:
        bad("direction", f"must be one of {', '.join(DIRECTIONS)}, got {row['direction']!r}")
    if "entries" in row:
        entries = row["entries"]
        if type(entries) is not list or not 2 <= len(entries) <= MAX_ENTRIES:
            bad("entries", f"must be an array of 2 to {MAX_ENTRIES} callables")
            return
        for index, item in enumerate(entries):
            check_callable(item, f"entries[{index}]", allowed_packages, bad)
