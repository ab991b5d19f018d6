"""Generated samples: the `[invariant.generate]` vocabulary, its validation and deterministic drawing.

A row of any kind (`exact_table` only with a `reference`) may carry a `generate` table: `count`, the number of samples,
and one generator per sample field. Example (TOML):

    [invariant.generate]
    count = 40
    lines = { list = { object = { quantity = { int = [0, 1000] } } }, len = [0, 6] }
    discount_cents = { int = [0, 5000] }
    tax_rate = { choice = ["0", "0.0825", "0.2"] }

Every generator is a table with exactly one kind key plus only the modifiers that kind allows;
what each draws:

- `{ int = [lo, hi] }`: an int, `lo <= value <= hi` (signed 64-bit bounds, not bool)
- `{ float = [lo, hi] }`: a finite float in `[lo, hi]` (bounds: finite int or float, not bool)
- `{ choice = [v, ...] }`: one of the values, uniformly; values are strings, 64-bit ints, finite
  floats, bools, and arrays and tables of those
- `{ string = "alphabet", len = [a, b] }`: a string of `a..b` characters, each picked uniformly
  from the alphabet's characters (a character written twice is twice as likely)
- `{ string = "alphabet", len = [a, b], pieces = ["&#", "Word", ...] }`: a string of `a..b`
  items joined, each picked uniformly from the alphabet's characters and the pieces (so a token
  the code looks for, a keyword or an escape, appears whole)
- `{ one_of = [<generator>, ...] }`: a value of one of the generators, picked uniformly (2 to 64
  of them): a wide range beside a narrow one, or drawn text beside the code's own constants
- `{ list = <generator>, len = [a, b] }`: an array of `a..b` items
- `{ object = { name = <generator>, ... } }`: an object with exactly those keys, in that order
- `{ tuple = [<generator>, ...] }`: an array of fixed length, one item per generator, in that
  order (a tuple of mixed types, such as `(bool, int, int, bool)`)
- `{ set = <generator>, len = [a, b] }`: an array of `a..b` distinct items (distinct as JSON
  values; fewer when the generator cannot give that many): the value of a set
- `{ optional = <generator> }`: `null` one time in four, else a value of the generator

A set or tuple reaches production code as a JSON array; `build = { flags = "builtins:tuple" }` (or
`builtins:set`, `builtins:frozenset`) turns it into that type in the caller (docs/oracles.md,
"Methods and objects").

with `0 <= a <= b <= MAX_LEN`. A sample field's generator is at depth 1; the item generator of a list,
each member generator of an object, each item generator of a tuple, the generator of a set or
optional and each element of an array or table inside a choice value is one
level deeper; nothing may be deeper than MAX_DEPTH. TOML dates and times are never allowed.

For the keyword kinds (`bound`, `matches`, `agrees`, `round_trip`, `monotonic`, `composed`) the fields
are the keyword arguments of the entry (identifiers, at least one; `receiver` for a row with one); for
`idempotent` they are exactly `state` and every name in the row's `args`; for `exact_table` and
`antisymmetric` exactly the row's `args_names` (and `receiver`). `count` is the sample count, so no
sample field can be called `count`.

Drawing is deterministic: see `derive_seed` and `draw`. This module uses the standard library only and
shares its number and name rules with `schema` through `values`. The contract is "Generated samples"
in docs/design.md section 2.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.call_fields import callable_value_problem
from tools.oracle_gate.spec.raised import RAISES
from tools.oracle_gate.spec.values import ARG_PATTERN, CALLABLE_KEY, INT64_MAX, INT64_MIN, callable_value, is_number

MAX_COUNT = 100_000
"""Largest `count`: samples drawn per row."""
MAX_LEN = 4096
"""Largest length bound `b` of `len = [a, b]`, in characters (string) or items (list)."""
MAX_DEPTH = 16
"""Deepest nesting level of a generator or of a choice value (a sample field's generator is level 1)."""
GENERATOR_KINDS = ("choice", "float", "int", "list", "object", "one_of", "optional", "set", "string", "tuple")
"""The kind keys of the vocabulary; a generator table has exactly one."""
_MODIFIERS: dict[str, tuple[str, ...]] = {
    "choice": (),
    "float": (),
    "int": (),
    "list": ("len",),
    "object": (),
    "one_of": (),
    "optional": (),
    "set": ("len",),
    "string": ("len",),
    "tuple": (),
}
_OPTIONAL_MODIFIERS: dict[str, tuple[str, ...]] = {"string": ("pieces",)}
"""Modifiers a kind may take or leave out."""
MAX_TUPLE = 64
"""Most generators of one `tuple`, and of one `one_of`."""
MAX_PIECES = 64
"""Most `pieces` of one `string`."""
MAX_PIECE_LEN = 64
"""Longest piece, in characters."""
SET_TRIES = 4
"""A set draws at most SET_TRIES times its length in items before it settles for fewer distinct ones."""
NONE_ODDS = 4
"""An `optional` draws `null` one time in NONE_ODDS."""
MAX_DRAWS = 10_000_000
"""Most values one row's samples may need drawn, `count` times the most one sample needs (`draws`):
a bound on the time and memory of drawing, which nesting lengths would otherwise multiply."""
_ALL_MODIFIERS = frozenset(m for mods in (*_MODIFIERS.values(), *_OPTIONAL_MODIFIERS.values()) for m in mods)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class IntGen:
    """`{ int = [lo, hi] }`.

    Attributes:
        lo: smallest value drawn, a signed 64-bit int.
        hi: largest value drawn, `lo <= hi <= 2**63 - 1`.
    """

    lo: int
    hi: int


@dataclass(frozen=True)
class FloatGen:
    """`{ float = [lo, hi] }`.

    Attributes:
        lo: smallest value drawn, a finite float (an int bound is converted with `float()`).
        hi: largest value drawn, a finite float, `lo <= hi`.
    """

    lo: float
    hi: float


@dataclass(frozen=True)
class ChoiceGen:
    """`{ choice = [v, ...] }`.

    Attributes:
        values: the candidates, each as its compact JSON text (`json.dumps` with separators `,` and
            `:`, key order as written), so `1`, `1.0` and `true` stay distinct and the spec stays
            immutable. At least one.
    """

    values: tuple[str, ...]


@dataclass(frozen=True)
class StringGen:
    """`{ string = "alphabet", len = [min_len, max_len] }`, maybe with `pieces = [...]`.

    Attributes:
        alphabet: the characters (Unicode code points) to pick from, non-empty; repeats allowed.
        min_len: fewest items, `0 <= min_len`.
        max_len: most items, `min_len <= max_len <= MAX_LEN`.
        pieces: strings picked as whole items beside the alphabet's characters (1 to MAX_PIECES,
            each 1 to MAX_PIECE_LEN characters), or () for characters only.
    """

    alphabet: str
    min_len: int
    max_len: int
    pieces: tuple[str, ...] = ()


@dataclass(frozen=True)
class OneOfGen:
    """`{ one_of = [<generator>, ...] }`: a value of one of `options`, picked uniformly.

    Attributes:
        options: 2 to MAX_TUPLE generators.
    """

    options: tuple[Gen, ...]


@dataclass(frozen=True)
class ListGen:
    """`{ list = <generator>, len = [min_len, max_len] }`.

    Attributes:
        item: the generator of every item.
        min_len: fewest items, `0 <= min_len`.
        max_len: most items, `min_len <= max_len <= MAX_LEN`.
    """

    item: Gen
    min_len: int
    max_len: int


@dataclass(frozen=True)
class ObjectGen:
    """`{ object = { name = <generator>, ... } }`.

    Attributes:
        members: (key, generator) pairs in the order written; at least one, keys distinct.
    """

    members: tuple[tuple[str, Gen], ...]


@dataclass(frozen=True)
class TupleGen:
    """`{ tuple = [<generator>, ...] }`.

    Attributes:
        items: one generator per position, 1 to MAX_TUPLE of them.
    """

    items: tuple[Gen, ...]


@dataclass(frozen=True)
class SetGen:
    """`{ set = <generator>, len = [min_len, max_len] }`.

    Attributes:
        item: the generator of every item.
        min_len: fewest distinct items wanted, `0 <= min_len`.
        max_len: most items, `min_len <= max_len <= MAX_LEN`.
    """

    item: Gen
    min_len: int
    max_len: int


@dataclass(frozen=True)
class OptionalGen:
    """`{ optional = <generator> }`: `null` one time in NONE_ODDS, else a value of `item`."""

    item: Gen


Gen = IntGen | FloatGen | ChoiceGen | StringGen | ListGen | ObjectGen | TupleGen | SetGen | OptionalGen | OneOfGen
"""Any validated generator."""


@dataclass(frozen=True)
class GenerateSpec:
    """A validated `generate` table of one row.

    Attributes:
        count: samples drawn, 1 to MAX_COUNT.
        fields: (sample field, generator) pairs in drawing order, which is also the key order of every
            drawn sample: as written for the keyword kinds; `state` then the names of `args` in
            `args` order for `idempotent`; `args_names` (then `receiver`) for `exact_table` and
            `antisymmetric`.
        packed: for `exact_table`, the `args_names`: each drawn sample is then
            `{"args": [value, ...]}` in that order (plus `receiver`), the shape of a stored sample
            without `expected`; () for every other kind.
    """

    count: int
    fields: tuple[tuple[str, Gen], ...]
    packed: tuple[str, ...] = ()


def _what(value: object) -> str:
    """Names a TOML value for a message: the value itself for numbers, its kind otherwise."""
    if type(value) is bool:
        return "a bool"
    if type(value) in (int, float):
        return repr(value)
    if type(value) is str:
        return "a string"
    if type(value) is list:
        return f"an array of {len(value)} value{'' if len(value) == 1 else 's'}"
    if type(value) is dict:
        return "a table"
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return "a date or time"
    return type(value).__name__


def _join(field: str, key: str) -> str:
    """Appends `key` to a dotted field path, quoting it as TOML would when it is not a bare key."""
    return f"{field}.{key}" if _BARE_KEY.fullmatch(key) else f"{field}.{json.dumps(key, ensure_ascii=False)}"


def _plain_problem(value: object, depth: int) -> str | None:
    """Returns why a choice value is not a plain value at nesting level `depth`, or None."""
    if type(value) in (str, bool):
        return None
    if type(value) is int:
        return None if is_number(value) else f"{value} does not fit in a signed 64-bit integer"
    if type(value) is float:
        return None if math.isfinite(value) else f"{value!r} is not finite"
    if type(value) is list or type(value) is dict:
        items: list[object] = list(value.values()) if isinstance(value, dict) else list(value)
        if items and depth + 1 > MAX_DEPTH:
            return f"nests deeper than {MAX_DEPTH} levels"
        for item in items:
            problem = _plain_problem(item, depth + 1)
            if problem:
                return problem
        return None
    return f"{_what(value)} is not allowed (only strings, numbers, bools, arrays and tables)"


class _Checker:
    """Collects one OracleError per problem of one row's `generate` table."""

    def __init__(self, path: str, row: str, entry: str = "") -> None:
        self.path = path
        self.row = row
        self.entry = entry
        self.errors: list[OracleError] = []

    def bad(self, field: str, message: str) -> None:
        self.errors.append(OracleError(message, path=self.path, row=self.row, field=field))

    def int_pair(self, value: object, field: str, low: int, high: int, shape: str) -> tuple[int, int] | None:
        """Checks `[a, b]`, two ints with `low <= a <= b <= high`; `shape` describes it in messages."""
        if type(value) is not list or len(value) != 2:
            self.bad(field, f"must be {shape}, got {_what(value)}")
            return None
        a, b = value
        for item in (a, b):
            if type(item) is not int:
                self.bad(field, f"must be {shape}, got {_what(item)} in it")
                return None
        for item in (a, b):
            if not low <= item <= high:
                self.bad(field, f"must be {shape}, got {item}, outside {low}..{high}")
                return None
        if a > b:
            self.bad(field, f"lower bound ({a}) is greater than upper bound ({b})")
            return None
        return a, b

    def float_pair(self, value: object, field: str) -> tuple[float, float] | None:
        shape = "[lo, hi], two finite numbers with lo <= hi"
        if type(value) is not list or len(value) != 2:
            self.bad(field, f"must be {shape}, got {_what(value)}")
            return None
        a, b = value
        for item in (a, b):
            if not is_number(item):
                self.bad(field, f"must be {shape}, got {_what(item)} in it")
                return None
        if a > b:
            self.bad(field, f"lower bound ({a}) is greater than upper bound ({b})")
            return None
        return float(a), float(b)

    def generator(self, spec: object, field: str, depth: int, top: bool = False) -> Gen | None:
        """Validates one generator table at dotted path `field`, nesting level `depth`; `top`: it
        gives a sample field's own value (the field's generator, or its `optional`'s), the only
        place a callable may be given (`values.callable_value`)."""
        kinds_text = ", ".join(GENERATOR_KINDS)
        if depth > MAX_DEPTH:
            self.bad(field, f"nests deeper than {MAX_DEPTH} levels")
            return None
        if type(spec) is not dict:
            self.bad(field, f"must be a generator table with one of the keys {kinds_text}, got {_what(spec)}")
            return None
        before = len(self.errors)
        table: dict[str, object] = spec
        for key in table:
            if key not in GENERATOR_KINDS and key not in _ALL_MODIFIERS:
                self.bad(
                    _join(field, key),
                    f"unknown key {key!r}; a generator has exactly one of {kinds_text}, "
                    "and len with list, set and string (and pieces with string)",
                )
        kinds = [key for key in table if key in GENERATOR_KINDS]
        if len(kinds) > 1:
            self.bad(field, f"has {len(kinds)} generator kinds ({', '.join(kinds)}); give exactly one")
        elif not kinds:
            if len(self.errors) == before:
                self.bad(field, f"has no generator kind; give exactly one of {kinds_text}")
        else:
            kind = kinds[0]
            for modifier in sorted(_ALL_MODIFIERS):
                if modifier in table and modifier not in (*_MODIFIERS[kind], *_OPTIONAL_MODIFIERS.get(kind, ())):
                    self.bad(_join(field, modifier), f"is not allowed for generator kind {kind!r}")
                elif modifier in table and modifier in _OPTIONAL_MODIFIERS.get(kind, ()):
                    pass
                elif modifier not in table and modifier in _MODIFIERS[kind]:
                    self.bad(_join(field, modifier), f"is required for generator kind {kind!r}")
            built = self._kind(kind, table, field, depth, top)
            if len(self.errors) == before:
                return built
        return None

    def _kind(self, kind: str, table: dict[str, object], field: str, depth: int, top: bool) -> Gen | None:
        at = _join(field, kind)
        value = table[kind]
        lengths: tuple[int, int] | None = None
        if "len" in table and "len" in _MODIFIERS[kind]:
            lengths = self.int_pair(
                table["len"],
                _join(field, "len"),
                0,
                MAX_LEN,
                f"[min, max], two integers with 0 <= min <= max <= {MAX_LEN}",
            )
        if kind == "int":
            pair = self.int_pair(value, at, INT64_MIN, INT64_MAX, "[lo, hi], two signed 64-bit integers with lo <= hi")
            return IntGen(*pair) if pair else None
        if kind == "float":
            fpair = self.float_pair(value, at)
            return FloatGen(*fpair) if fpair else None
        if kind == "choice":
            return self._choice(value, at, depth, top)
        if kind == "string":
            if type(value) is not str or not value:
                self.bad(at, f"must be a non-empty string of the characters to draw from, got {_what(value)}")
                return None
            pieces = self._pieces(table.get("pieces"), _join(field, "pieces"))
            return StringGen(value, *lengths, pieces) if lengths and pieces is not None else None
        if kind == "one_of":
            return self._one_of(value, at, depth)
        if kind == "list":
            item = self.generator(value, at, depth + 1)
            return ListGen(item, *lengths) if item and lengths else None
        if kind == "set":
            item = self.generator(value, at, depth + 1)
            return SetGen(item, *lengths) if item and lengths else None
        if kind == "optional":
            item = self.generator(value, at, depth + 1, top)
            return OptionalGen(item) if item else None
        if kind == "tuple":
            return self._tuple(value, at, depth)
        if top and type(value) is dict and list(value) == [CALLABLE_KEY]:
            self.bad(
                at,
                f"an object whose one key is {CALLABLE_KEY} would be read as a callable argument; "
                "give callables as values of a choice",
            )
            return None
        return self._object(value, at, depth)

    def _tuple(self, value: object, at: str, depth: int) -> TupleGen | None:
        if type(value) is not list or not 1 <= len(value) <= MAX_TUPLE:
            self.bad(at, f"must be an array of 1 to {MAX_TUPLE} generators, one per position, got {_what(value)}")
            return None
        items = [self.generator(item, f"{at}[{index}]", depth + 1) for index, item in enumerate(value)]
        return TupleGen(tuple(i for i in items if i is not None)) if all(i is not None for i in items) else None

    def _pieces(self, value: object, at: str) -> tuple[str, ...] | None:
        """A string's `pieces` (absent: ()), or None after reporting why not."""
        if value is None:
            return ()
        shape = f"an array of 1 to {MAX_PIECES} strings of 1 to {MAX_PIECE_LEN} characters"
        if type(value) is not list or not 1 <= len(value) <= MAX_PIECES:
            self.bad(at, f"must be {shape}, got {_what(value)}")
            return None
        for index, item in enumerate(value):
            if type(item) is not str or not 1 <= len(item) <= MAX_PIECE_LEN:
                self.bad(at, f"element {index}: must be a string of 1 to {MAX_PIECE_LEN} characters, got {_what(item)}")
                return None
        return tuple(value)

    def _one_of(self, value: object, at: str, depth: int) -> OneOfGen | None:
        if type(value) is not list or not 2 <= len(value) <= MAX_TUPLE:
            self.bad(at, f"must be an array of 2 to {MAX_TUPLE} generators, got {_what(value)}")
            return None
        options = [self.generator(item, f"{at}[{index}]", depth + 1) for index, item in enumerate(value)]
        return OneOfGen(tuple(o for o in options if o is not None)) if all(o is not None for o in options) else None

    def _choice(self, value: object, at: str, depth: int, top: bool = False) -> ChoiceGen | None:
        if type(value) is not list or not value:
            self.bad(at, f"must be a non-empty array of values, got {_what(value)}")
            return None
        texts = []
        for index, item in enumerate(value):
            problem = _plain_problem(item, depth)
            name = callable_value(item)
            if name is not None and top:  # an argument given as a callable (call_fields)
                problem = callable_value_problem(name, self.entry)
                problem = problem and f"callable {problem}"
            elif name is not None:
                problem = (
                    "a callable is given only as a sample field's own value (a choice of the field, or of its optional)"
                )
            if problem:
                self.bad(at, f"element {index}: {problem}")
                return None
            texts.append(json.dumps(item, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
        return ChoiceGen(tuple(texts))

    def _object(self, value: object, at: str, depth: int) -> ObjectGen | None:
        if type(value) is not dict or not value:
            self.bad(at, f"must be a table of at least one member generator, got {_what(value)}")
            return None
        members = []
        for key, member in value.items():
            built = self.generator(member, _join(at, key), depth + 1)
            if built:
                members.append((key, built))
        return ObjectGen(tuple(members)) if len(members) == len(value) else None


def parse_generate(
    value: object,
    kind: str,
    args: Sequence[str] | None,
    *,
    path: str,
    row: str,
    positional: Sequence[str] | None = None,
    receiver: bool = False,
    over: object = None,
    entry: str = "",
) -> tuple[GenerateSpec | None, list[OracleError]]:
    """Validates the `generate` value of one row.

    Args:
        value: the parsed TOML value of the row's `generate` key.
        kind: the row's kind, one of schema.KINDS; its `Kind.sample` says which fields it
            generates (the schema refuses `generate` on an `exact_table` row without a reference
            before calling this).
        args: the row's validated `args` (`idempotent`), or None when they are invalid (then the
            field-name rule of `idempotent` is not checked; the `args` error is reported already).
        path: repository-relative path of the oracle file, for messages.
        row: the row's label (its id, or `#N`), for messages.
        positional: the row's validated `args_names` (`Kind.positional`): the fields
            must be exactly those (and `receiver` when the row has one); None when they are invalid.
        receiver: True when the row has a `receiver` (a `receiver` field is then required).
        over: the `monotonic` row's `over` name: that field's generator must be a `list` of at least
            two items.
        entry: the row's entry: a sample field's `choice` may give callables
            (`{ callable = "builtins:int" }`) from builtins, the standard library or its package.

    Returns:
        (spec, errors): the spec and no errors, or None and one OracleError (exit 5) per problem, each
        naming `path`, `row` and the field as a dotted path such as `generate.lines.list.object.quantity.int`.
    """
    check = _Checker(path, row, entry)
    if type(value) is not dict:
        check.bad("generate", f"must be a table ([invariant.generate]), got {_what(value)}")
        return None, check.errors
    table: dict[str, object] = value
    count = _checked_count(check, table)
    row_kind = kinds.kind(kind)
    order = _field_order(check, table, row_kind, args, positional, receiver)
    fields = [(name, check.generator(table[name], _join("generate", name), 1, top=True)) for name in order]
    _check_fields(check, fields, row_kind, count, over)
    if check.errors:
        return None, check.errors
    assert type(count) is int
    packed = tuple(positional) if row_kind.sample == kinds.TABLE and positional else ()
    return GenerateSpec(count, tuple((name, gen) for name, gen in fields if gen is not None), packed), []


def _checked_count(check: _Checker, table: dict[str, object]) -> object:
    """The table's `count` (None when absent), an error when it is not an integer from 1 to MAX_COUNT."""
    count = table.get("count")
    if "count" not in table:
        check.bad("generate.count", "is required (the number of samples to draw)")
    elif type(count) is not int or not 1 <= count <= MAX_COUNT:
        check.bad("generate.count", f"must be an integer from 1 to {MAX_COUNT}, got {_what(count)}")
    return count


def _field_order(
    check: _Checker,
    table: dict[str, object],
    row_kind: kinds.Kind,
    args: Sequence[str] | None,
    positional: Sequence[str] | None,
    receiver: bool,
) -> list[str]:
    """The sample fields in the order they are drawn, errors for the names the row's kind refuses."""
    names = [name for name in table if name != "count"]
    if row_kind.sample == kinds.STATE:
        return _idempotent_fields(check, table, names, args)
    if row_kind.positional:
        return _exact_fields(check, names, positional, receiver)
    _keyword_fields(check, names, receiver)
    return names


def _check_fields(
    check: _Checker, fields: list[tuple[str, Gen | None]], row_kind: kinds.Kind, count: object, over: object
) -> None:
    """Checks the fields' generators together: a `monotonic` row's `over` field, then, while there is
    no error, the number of draws and a `round_trip` row's one argument `x` (kinds.ONE_X)."""
    if type(over) is str:
        _check_over(check, dict(fields), over)
    if not check.errors and type(count) is int:
        _check_draws(check, count, [gen for _, gen in fields if gen is not None])
    if row_kind.sample_rule == kinds.ONE_X and not check.errors:
        _check_round_trip(check, [(n, g) for n, g in fields if n != "receiver" and g is not None])
    if row_kind.sample_rule == kinds.ONE_ARG and len(fields) != 1:
        check.bad("generate", f"has {len(fields)} fields; {row_kind.name} rows generate exactly one argument, a")


def draws(gen: Gen) -> int:
    """The most values one draw of `gen` takes from the random source, counting each length and
    each leaf (a set tries SET_TRIES times its length). Raises nothing."""
    if isinstance(gen, (ListGen, SetGen)):
        return 1 + gen.max_len * draws(gen.item) * (SET_TRIES if isinstance(gen, SetGen) else 1)
    if isinstance(gen, StringGen):
        return 1 + gen.max_len
    if isinstance(gen, TupleGen):
        return sum(draws(item) for item in gen.items)
    if isinstance(gen, ObjectGen):
        return sum(draws(member) for _, member in gen.members)
    if isinstance(gen, OptionalGen):
        return 1 + draws(gen.item)
    if isinstance(gen, OneOfGen):
        return 1 + max(draws(option) for option in gen.options)
    return 1


def _keyword_fields(check: _Checker, names: list[str], receiver: bool) -> None:
    """The fields of a keyword row: at least one, each a usable keyword name, `receiver` when the row has one."""
    if not names:
        check.bad("generate", "needs a generator for at least one keyword argument besides count")
    for name in names:
        if not ARG_PATTERN.fullmatch(name):
            check.bad(_join("generate", name), f"{name!r} is not a usable keyword argument name")
        elif name == RAISES:
            check.bad(
                _join("generate", name), "is a sample's expected exception, not an argument: it cannot be generated"
            )
    if receiver and "receiver" not in names:
        check.bad("generate", "has no generator for receiver; a row with a receiver generates its arguments")


def _check_draws(check: _Checker, count: int, gens: Sequence[Gen]) -> None:
    """A row's drawing is bounded: `count` times the draws of one sample at most MAX_DRAWS."""
    most = count * sum(draws(gen) for gen in gens)
    if most > MAX_DRAWS:
        check.bad(
            "generate",
            f"may draw {most:,} values ({count} samples times the most one sample needs), more "
            f"than {MAX_DRAWS:,}; lower count or the len ranges",
        )


def _callables(gen: Gen) -> str:
    """ "all" when `gen` draws only callables (a choice of callables), "some" when it may draw one
    and may draw a plain value (a mixed choice, an optional of callables), else "none"."""
    if isinstance(gen, OptionalGen):
        return "some" if _callables(gen.item) != "none" else "none"
    if isinstance(gen, ChoiceGen):
        given = [callable_value(json.loads(v)) is not None for v in gen.values]
        return "all" if all(given) else "some" if any(given) else "none"
    return "none"


def _check_round_trip(check: _Checker, fields: list[tuple[str, Gen]]) -> None:
    """A `round_trip` row's generated samples hold exactly one argument `x` that is never a callable;
    every other field draws callables only (`conv = { choice = [{ callable = "builtins:int" }] }`)."""
    kinds = {name: _callables(gen) for name, gen in fields}
    for name, found in kinds.items():
        if found == "some":
            check.bad(
                _join("generate", name),
                "may draw a callable or a plain value; a round_trip row's fields "
                "draw either callables only or the one value x",
            )
    plain = [name for name, found in kinds.items() if found == "none"]
    if not any(found == "some" for found in kinds.values()) and len(plain) != 1:
        check.bad(
            "generate",
            f"has {len(plain)} field(s) that are not callables ({', '.join(plain) or 'none'}); a "
            "round_trip row generates exactly one value x, besides callables and receiver",
        )


def _check_over(check: _Checker, fields: dict[str, Gen | None], over: str) -> None:
    """A `monotonic` row's `over` field must be generated as a list of at least two items."""
    if over not in fields:
        check.bad("generate", f"has no generator for {over!r}, the row's over")
    elif fields[over] is not None and not (isinstance(fields[over], ListGen) and fields[over].min_len >= 2):  # type: ignore[union-attr]
        check.bad(
            _join("generate", over),
            "must be a list generator of at least two items (len = [2, ...]): "
            "the values the entry is called with, in order",
        )


def _idempotent_fields(
    check: _Checker, table: dict[str, object], names: list[str], args: Sequence[str] | None
) -> list[str]:
    """The field order of an idempotent row (`state`, then `args`), reporting missing and extra fields."""
    if args is None:
        return names
    wanted = ["state", *args]
    if "count" in args:
        check.bad("generate", "cannot generate the argument 'count': count is the number of samples")
    missing = [name for name in wanted if name not in table]
    if missing:
        check.bad(
            "generate",
            f"has no generator for {', '.join(missing)}; an idempotent row generates state and every name in args",
        )
    for name in names:
        if name not in wanted:
            check.bad(
                _join("generate", name),
                "is neither state nor a name in args; an idempotent row generates exactly those",
            )
    return [name for name in wanted if name in names]


def _exact_fields(check: _Checker, names: list[str], positional: Sequence[str] | None, receiver: bool) -> list[str]:
    """The field order of a positional row (`args_names`, then `receiver`), reporting missing and extra fields."""
    if positional is None:
        return names
    wanted = [*positional, *(["receiver"] if receiver else [])]
    missing = [name for name in wanted if name not in names]
    if missing:
        check.bad(
            "generate",
            f"has no generator for {', '.join(missing)}; the row generates exactly its "
            "args_names" + (" and receiver" if receiver else ""),
        )
    for name in names:
        if name not in wanted:
            check.bad(_join("generate", name), "is not a name in args_names" + (" nor receiver" if receiver else ""))
    return [name for name in wanted if name in names]


def derive_seed(row_id: str, seed: int | None, salt: str) -> bytes:
    """The seed of a row's sample generator; a contract: the same inputs replay the same samples.

    The seed is `sha256(f"{row_id}\\0{seed}\\0{salt}".encode("utf-8", "surrogatepass")).digest()`,
    32 bytes, with `seed` written in decimal (`0` when the row has none) and `\\0` the NUL character;
    `draw` seeds `random.Random` with these bytes.

    Args:
        row_id: the row's id.
        seed: the row's `seed`, or None when absent (taken as 0).
        salt: any string chosen by the caller of `draw`; a run is replayable with the same salt.

    Returns:
        The 32-byte digest.
    """
    text = f"{row_id}\0{seed if seed is not None else 0}\0{salt}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _draw_one(gen: Gen, rng: random.Random) -> Any:
    if isinstance(gen, IntGen):
        return rng.randint(gen.lo, gen.hi)
    if isinstance(gen, FloatGen):
        u = rng.random()
        span = gen.hi - gen.lo
        # Interpolate without overflow when hi - lo exceeds the largest float; clamp rounding.
        x = gen.lo + span * u if math.isfinite(span) else gen.lo * (1.0 - u) + gen.hi * u
        return min(max(x, gen.lo), gen.hi)
    if isinstance(gen, ChoiceGen):
        return json.loads(rng.choice(gen.values))
    if isinstance(gen, StringGen):
        n = rng.randint(gen.min_len, gen.max_len)
        if gen.pieces:
            items = (*gen.alphabet, *gen.pieces)
            return "".join(rng.choice(items) for _ in range(n))
        return "".join(rng.choice(gen.alphabet) for _ in range(n))
    if isinstance(gen, OneOfGen):
        return _draw_one(gen.options[rng.randrange(len(gen.options))], rng)
    if isinstance(gen, ListGen):
        n = rng.randint(gen.min_len, gen.max_len)
        return [_draw_one(gen.item, rng) for _ in range(n)]
    if isinstance(gen, TupleGen):
        return [_draw_one(item, rng) for item in gen.items]
    if isinstance(gen, SetGen):
        return _draw_set(gen, rng)
    if isinstance(gen, OptionalGen):
        return None if rng.randrange(NONE_ODDS) == 0 else _draw_one(gen.item, rng)
    return {key: _draw_one(member, rng) for key, member in gen.members}


def _draw_set(gen: SetGen, rng: random.Random) -> list[Any]:
    """`n` (drawn from the length bounds) distinct items, in the order first drawn: at most
    SET_TRIES * n draws, so a generator with fewer distinct values gives fewer items."""
    n = rng.randint(gen.min_len, gen.max_len)
    seen: dict[str, Any] = {}
    for _ in range(SET_TRIES * n):
        if len(seen) == n:
            break
        item = _draw_one(gen.item, rng)
        seen.setdefault(json.dumps(item, sort_keys=True, separators=(",", ":")), item)
    return list(seen.values())


class Drawable(Protocol):
    """What `draw` reads of a row: `schema.Invariant` has it (and this module need not import
    `schema`, which imports this module). Read-only, as a frozen dataclass's fields are."""

    @property
    def id(self) -> str: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def generate(self) -> GenerateSpec | None: ...


def draw(invariant: Drawable, salt: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Draws the samples of a row's `generate` table.

    Deterministic: `random.Random(derive_seed(invariant.id, invariant.seed, salt))` is the only source
    of randomness, consumed sample by sample, field by field in `GenerateSpec.fields` order (members
    of an object in their order; a string's or list's length before its items). The same row and salt
    give identical samples on every run and platform; another salt gives other samples.

    Args:
        invariant: a validated row (`schema.Invariant`).
        salt: any string; record it to replay the run.
        limit: draw only the first `limit` samples (the same as the first `limit` of a full draw),
            or all `count` when None.

    Returns:
        `count` (or at most `limit`) samples in the shape of that kind's blob samples (`bound`: `{field: value}`;
        `idempotent`: `{"state": S, arg: value, ...}`), holding only int, float, str, bool, list
        and dict values; `[]` when the row has no `generate`.
    """
    spec = invariant.generate
    if spec is None:
        return []
    rng = random.Random(derive_seed(invariant.id, invariant.seed, salt))
    count = spec.count if limit is None else max(0, min(limit, spec.count))
    samples = [{name: _draw_one(gen, rng) for name, gen in spec.fields} for _ in range(count)]
    if spec.packed:
        return [
            {"args": [s[name] for name in spec.packed], **({"receiver": s["receiver"]} if "receiver" in s else {})}
            for s in samples
        ]
    return samples


def gen_to_json(gen: Gen) -> dict[str, Any]:
    """A validated generator as a plain JSON value, for the expectations view (`gen_from_json`
    reads it back): `{"int": [lo, hi]}`, `{"float": [lo, hi]}`, `{"choice": [JSON text, ...]}`,
    `{"string": alphabet, "len": [a, b]}` (plus `"pieces": [...]` when it has pieces),
    `{"one_of": [<generator>, ...]}`, `{"list": <generator>, "len": [a, b]}`,
    `{"set": <generator>, "len": [a, b]}`, `{"tuple": [<generator>, ...]}`, `{"optional": <generator>}`,
    `{"object": [[key, <generator>], ...]}`. Raises nothing."""
    if isinstance(gen, IntGen):
        return {"int": [gen.lo, gen.hi]}
    if isinstance(gen, FloatGen):
        return {"float": [gen.lo, gen.hi]}
    if isinstance(gen, ChoiceGen):
        return {"choice": list(gen.values)}
    if isinstance(gen, StringGen):
        pieces = {"pieces": list(gen.pieces)} if gen.pieces else {}
        return {"string": gen.alphabet, "len": [gen.min_len, gen.max_len], **pieces}
    if isinstance(gen, OneOfGen):
        return {"one_of": [gen_to_json(option) for option in gen.options]}
    if isinstance(gen, ListGen):
        return {"list": gen_to_json(gen.item), "len": [gen.min_len, gen.max_len]}
    if isinstance(gen, SetGen):
        return {"set": gen_to_json(gen.item), "len": [gen.min_len, gen.max_len]}
    if isinstance(gen, TupleGen):
        return {"tuple": [gen_to_json(item) for item in gen.items]}
    if isinstance(gen, OptionalGen):
        return {"optional": gen_to_json(gen.item)}
    return {"object": [[key, gen_to_json(member)] for key, member in gen.members]}


def gen_from_json(value: Any, depth: int = 1) -> Gen:
    """The generator `gen_to_json` wrote (the expectations view is written by gate code, so this
    checks shapes, not the ranges `parse_generate` enforces).

    Raises:
        ValueError: for a value `gen_to_json` does not write, or nesting deeper than MAX_DEPTH.
    """
    if type(value) is not dict or depth > MAX_DEPTH:
        raise ValueError("not a generator")
    pair = value.get("len")
    low, high = pair if type(pair) is list and len(pair) == 2 and all(type(n) is int for n in pair) else (0, -1)
    if set(value) == {"int"} and _pair_of(value["int"], int):
        return IntGen(*value["int"])
    if set(value) == {"float"} and _pair_of(value["float"], float):
        return FloatGen(*value["float"])
    if set(value) == {"choice"} and type(value["choice"]) is list and all(type(v) is str for v in value["choice"]):
        return ChoiceGen(tuple(value["choice"]))
    if set(value) == {"string", "len"} and type(value["string"]) is str and low <= high:
        return StringGen(value["string"], low, high)
    pieces = value.get("pieces")
    pieces_ok = type(pieces) is list and bool(pieces) and all(type(p) is str for p in pieces)
    if set(value) == {"string", "len", "pieces"} and type(value["string"]) is str and low <= high and pieces_ok:
        return StringGen(value["string"], low, high, tuple(pieces or ()))
    if set(value) == {"one_of"} and type(value["one_of"]) is list and len(value["one_of"]) >= 2:
        return OneOfGen(tuple(gen_from_json(option, depth + 1) for option in value["one_of"]))
    if set(value) == {"list", "len"} and low <= high:
        return ListGen(gen_from_json(value["list"], depth + 1), low, high)
    if set(value) == {"set", "len"} and low <= high:
        return SetGen(gen_from_json(value["set"], depth + 1), low, high)
    if set(value) == {"tuple"} and type(value["tuple"]) is list and value["tuple"]:
        return TupleGen(tuple(gen_from_json(item, depth + 1) for item in value["tuple"]))
    if set(value) == {"optional"}:
        return OptionalGen(gen_from_json(value["optional"], depth + 1))
    if set(value) == {"object"} and type(value["object"]) is list:
        return ObjectGen(tuple(_member(item, depth + 1) for item in value["object"]))
    raise ValueError("not a generator")


def _pair_of(value: Any, kind: type) -> bool:
    return type(value) is list and len(value) == 2 and all(type(v) is kind for v in value)


def _member(item: Any, depth: int) -> tuple[str, Gen]:
    if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
        raise ValueError("not an object member")
    return item[0], gen_from_json(item[1], depth)


def spec_to_json(spec: GenerateSpec) -> dict[str, Any]:
    """A `GenerateSpec` as a plain JSON value: `{"count": n, "fields": [[name, <generator>], ...]}`
    (`gen_to_json`), which `spec_from_json` reads back. Raises nothing."""
    out: dict[str, Any] = {"count": spec.count, "fields": [[name, gen_to_json(gen)] for name, gen in spec.fields]}
    if spec.packed:
        out["packed"] = list(spec.packed)
    return out


def spec_from_json(value: Any) -> GenerateSpec:
    """The `GenerateSpec` that `spec_to_json` wrote; drawing from it gives the same samples.

    Raises:
        ValueError: for a value `spec_to_json` does not write.
    """
    if type(value) is not dict or set(value) - {"packed"} != {"count", "fields"} or type(value["count"]) is not int:
        raise ValueError("not a generate spec")
    packed = value.get("packed", [])
    if type(value["fields"]) is not list or type(packed) is not list or not all(type(p) is str for p in packed):
        raise ValueError("not a generate spec")
    return GenerateSpec(value["count"], tuple(_member(item, 1) for item in value["fields"]), tuple(packed))
