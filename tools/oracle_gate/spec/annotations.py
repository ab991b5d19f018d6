"""Generators from type annotations: what the gate can draw for a function's parameters, read from
its syntax tree alone (docs/oracles.md, "Generators from annotations").

`drawn(function, module, module_name)` gives, per parameter, a generator of the closed vocabulary
(spec/generate.py) and, where the value must be built in the caller, the builder
(docs/oracles.md, "Structures and callables as arguments"); or one line naming the first parameter
it cannot draw and why. Understood: `int`, `float`, `bool`, `str`, `bytes`, `None` (with a
default), `Optional[X]` and `X | None`, `list[X]` (`List`, `Sequence`), `set[X]`, `frozenset[X]`,
`tuple[X, ...]` and `tuple[X, Y]`, `dict[K, X]` (`Dict`, `Mapping`), `Literal[...]`, and, defined
in the same module, `Enum` subclasses, dataclasses and NamedTuples of plain fields. A value that
needs building (bytes, a tuple, a set, a dict, an Enum member, a dataclass) is drawn as a
parameter's own value, or as the items of a list that is one (`list[tuple[str, str]]`: built
item by item, `each:builtins:tuple`); anywhere else it would reach the code as JSON (a list, a
dict, a member's value), so such an annotation is refused there.

Pure: standard library and `ast` only; it never imports production code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate.spec.call_fields import EACH
from tools.oracle_gate.spec.seeds import Seeds, module_names, seeds

# The bounds of the generators drawn from annotations, each small on purpose: a range of a
# thousand either side of zero draws 0, 1, -1 and small values often, where arithmetic and
# off-by-one bugs show, and keeps sums and products far from any overflow the code guards against.
INT_BOUNDS = (-1000, 1000)
FLOAT_BOUNDS = (-1000.0, 1000.0)
# Beside them (a `one_of`), the narrow ranges where lengths, counts and indexes live: a loop's
# turn, a truncation and an off-by-one show there, and the wide range rarely draws them.
SMALL_INT_BOUNDS = (-2, 20)
SMALL_FLOAT_BOUNDS = (-2.0, 2.0)
# Letters of both cases, digits, a space, the separators parsers split on, and one character
# outside ASCII (encoders differ on it); 0 to 12 characters reach the empty string often.
STRING_ALPHABET = "abcxyzABCXYZ0129 .,-_/:@é"
STRING_LEN = (0, 12)
# A string is also drawn as words: the function's own strings (spec/seeds.py) and one word in
# three cases (case folding and comparison show there), joined by separators, 0 to 8 items.
STRING_WORDS = ("word", "Word", "WORD")
STRING_GLUE = " -"
PIECES_LEN = (0, 8)
# And as text outside printable ASCII, where text handling differs (as a property-based tester's
# text strategy reaches all of Unicode): line breaks and separators (CR LF, NEL, LS, PS), control
# characters (NUL, ESC, US, DEL, the C1 range's ends), invisible ones (no-break space, soft hyphen,
# zero-width space, byte order mark), a combining accent, full- and halfwidth forms, letters whose
# case mapping changes their length (ß, İ), a symbol and an emoji beyond the Basic Multilingual
# Plane; a few ASCII characters keep them in words. 0 to 8 characters.
STRING_UNICODE = (
    "aZ1 \t\n\r\x00\x1b\x1f\x7f\x80\x85\x9f\xa0\xad\u0301\u200b\u2028\u2029\ufeff\uff21\uff76ßİé€\U0001f600"
)
UNICODE_LEN = (0, 8)
# Collections: empty often, long enough to hold duplicates and an order to get wrong.
LIST_LEN = (0, 6)
DICT_LEN = (0, 4)
BYTES_LEN = (0, 16)
# Deepest annotation read (spec/generate.py MAX_DEPTH is 16; every level here adds at most two).
MAX_NESTING = 6

# Builders the caller applies to an array as a whole (spec/call_fields.py CONTAINER_BUILDS).
TUPLE, SET, FROZENSET, BYTES, DICT = (
    "builtins:tuple",
    "builtins:set",
    "builtins:frozenset",
    "builtins:bytes",
    "builtins:dict",
)
_LISTS = ("list", "List", "Sequence", "MutableSequence", "Iterable", "Collection")
_DICTS = ("dict", "Dict", "Mapping", "MutableMapping")
_SETS = {"set": SET, "Set": SET, "AbstractSet": SET, "frozenset": FROZENSET, "FrozenSet": FROZENSET}
_TUPLES = ("tuple", "Tuple")
_ENUM_BASES = ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag")


@dataclass(frozen=True)
class Drawn:
    """What the gate can draw for a function's parameters.

    Attributes:
        generate: parameter name -> generator (a table of the vocabulary of spec/generate.py, as
            `[invariant.generate]` writes it, without `count`); a parameter with a default that
            cannot be drawn is left out, so the call uses its default.
        build: parameter name -> the builder `module:name` the caller applies to the drawn value
            (`actions/caller.py` `built`): a container of `CONTAINER_BUILDS`, an Enum class or a
            dataclass or NamedTuple of the entry's module (built from a tuple of its fields).
        defaulted: the names of `generate` whose parameter has a default (drawn, so a call never
            uses that default unless they are left out).
    """

    generate: dict[str, Any]
    build: dict[str, str]
    defaulted: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Value:
    """One annotation's generator, and the builder its value needs ("" for none)."""

    spec: dict[str, Any]
    build: str = ""


class _Refused(Exception):
    """An annotation the gate cannot draw; the message says why."""


def drawn(function: ast.FunctionDef | ast.AsyncFunctionDef, module: ast.Module, module_name: str) -> Drawn | str:
    """The generators (and builders) for every parameter of `function`, or why not.

    Args:
        function: the `def` (a module-level function, or a method of a module-level class).
        module: the syntax tree of its module: the classes its annotations name are looked up there.
        module_name: the module's dotted name, which a builder of one of its classes names.

    Returns:
        Drawn, or one line naming the first parameter that cannot be drawn and its annotation, e.g.
        "parameter `cart`: annotation `Cart` is a class the gate cannot build". Refused: a method's
        `self` or `cls`, a positional-only parameter, a parameter without annotation, an
        annotation outside the list of the module docstring. A parameter with a default is left
        out instead of refused; `*args` and `**kwargs` are left empty. Raises nothing.
    """
    # `*args` and `**kwargs` stay empty: the gate passes named arguments, which they never need.
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = len(positional) - len(args.defaults)
    params = [
        (a, args.defaults[i - defaults] if i >= defaults else None, i < len(args.posonlyargs))
        for i, a in enumerate(positional)
    ]
    params += [(a, d, False) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if params and params[0][0].arg in ("self", "cls") and not _static(function):
        return f"parameter `{params[0][0].arg}`: the gate cannot build the object a method is called on"
    generate: dict[str, Any] = {}
    build: dict[str, str] = {}
    defaulted: list[str] = []
    seeded = seeds(function, module)
    for arg, default, only_positional in params:
        value = _parameter(arg, only_positional, module, module_name, seeded)
        if isinstance(value, str):
            if default is not None:
                continue
            return value
        generate[arg.arg] = _or_default(value.spec, default, module)
        if value.build:
            build[arg.arg] = value.build
        if default is not None:
            defaulted.append(arg.arg)
    return Drawn(generate, build, tuple(defaulted))


def projection(function: ast.FunctionDef | ast.AsyncFunctionDef, module: ast.Module) -> str | dict[str, Any] | None:
    """The `project` a row of `function` needs for its results to be plain JSON, read from its
    return annotation: `"list"` for a tuple, bytes or bytearray (every tuple inside becomes a list
    too); `{"attrs": [field, ...]}` for a NamedTuple or a dataclass of the module, so that a field
    renamed or reordered is a changed result; None for anything else (a plain result, an optional
    one, or one the gate cannot tell). Raises nothing."""
    node = function.returns
    if node is None:
        return None
    try:
        node = _parsed(node)
    except _Refused:
        return None
    name, _ = _split(node)
    if name in (*_TUPLES, "bytes", "bytearray"):
        return "list"
    found = _class(node, module)
    if found is None or {_name(base) for base in found.bases} & set(_ENUM_BASES):
        return None
    fields = [
        s.target.id
        for s in found.body
        if isinstance(s, ast.AnnAssign)
        and isinstance(s.target, ast.Name)
        and _split(s.annotation)[0] not in ("ClassVar", "InitVar")
    ]
    return {"attrs": fields} if fields else None


def _or_default(spec: dict[str, Any], default: ast.expr | None, module: ast.Module) -> dict[str, Any]:
    """`spec`, or for a parameter whose default is a literal (or a module-level name bound to one)
    `{ one_of = [{ choice = [default] }, spec] }`: half the samples keep the default, so the
    others vary one or two arguments of a call as callers write it instead of all at once."""
    if default is None:
        return spec
    if isinstance(default, ast.Name):
        bound = module_names(module)[0].get(default.id)
        if bound is None:
            return spec
        default = bound
    try:
        value = ast.literal_eval(default)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return spec
    plain = _json_plain(value)
    if plain is _NOT_PLAIN or plain is None:
        return spec
    return {"one_of": [{"choice": [plain]}, spec]}


_NOT_PLAIN = object()


def _json_plain(value: Any) -> Any:
    """`value` as a TOML-writable value (tuples as lists), or _NOT_PLAIN (None, bytes, a set, a
    dict with a non-string key, a number outside 64 bits)."""
    if type(value) in (str, bool) or type(value) is float and value == value and abs(value) != float("inf"):
        return value
    if type(value) is int:
        return value if -(2**63) <= value < 2**63 else _NOT_PLAIN
    if type(value) in (list, tuple):
        items = [_json_plain(v) for v in value]
        return _NOT_PLAIN if any(i is _NOT_PLAIN for i in items) else items
    if type(value) is dict and all(type(k) is str for k in value):
        members = {k: _json_plain(v) for k, v in value.items()}
        return _NOT_PLAIN if any(m is _NOT_PLAIN for m in members.values()) else members
    return _NOT_PLAIN


def _static(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def _parameter(
    arg: ast.arg, only_positional: bool, module: ast.Module, module_name: str, seeded: Seeds
) -> _Value | str:
    """One parameter's generator, or the line saying why it has none."""
    if only_positional:
        return f"parameter `{arg.arg}`: positional-only; the gate passes named arguments"
    if arg.annotation is None:
        return f"parameter `{arg.arg}`: no annotation"
    try:
        return _top(arg.annotation, module, module_name, seeded)
    except _Refused as exc:
        return f"parameter `{arg.arg}`: annotation `{_text(arg.annotation)}` {exc}"


def _text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ast.unparse(node)


def _name(node: ast.expr) -> str:
    """The last name of `X`, `typing.X`, `t.X`; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _parsed(node: ast.expr) -> ast.expr:
    """A string annotation (`"Cart"`) as the expression it holds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except SyntaxError:
            raise _Refused("is a string that does not parse as an expression") from None
    return node


def _split(node: ast.expr) -> tuple[str, list[ast.expr]]:
    """(the name of a generic, its arguments) for `X[A, B]`, or (the name, []) for `X`."""
    if isinstance(node, ast.Subscript):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return _name(node.value), list(items)
    return _name(node), []


def _optional_of(node: ast.expr) -> ast.expr | None:
    """X for `Optional[X]`, `X | None`, `None | X` and `Union[X, None]`; None for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [node.left, node.right]
    else:
        name, sides = _split(node)
        if name == "Optional" and len(sides) == 1:
            return sides[0]
        if name != "Union":
            return None
    rest = [side for side in sides if not _is_none(side)]
    return rest[0] if len(rest) == 1 and len(sides) == 2 else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None or _name(node) == "NoneType"


def _top(node: ast.expr, module: ast.Module, module_name: str, seeded: Seeds) -> _Value:
    """A parameter's own annotation: anything `_plain` draws, and the values that need a builder.

    Raises:
        _Refused: saying why the annotation cannot be drawn.
    """
    node = _parsed(node)
    inner = _optional_of(node)
    if inner is not None:
        value = _top(inner, module, module_name, seeded)
        if value.build:
            raise _Refused("is an optional value that must be built, and the caller would build null too")
        return _Value({"optional": value.spec})
    name, items = _split(node)
    if name == "bytes" and not items:
        return _Value({"list": {"int": [0, 255]}, "len": list(BYTES_LEN)}, BYTES)
    if name in _TUPLES:
        return _Value(_tuple(items, module, 1, seeded), TUPLE)
    if name in _SETS and len(items) == 1:
        return _Value({"set": _plain(items[0], module, 2, seeded), "len": list(LIST_LEN)}, _SETS[name])
    if name in _DICTS and len(items) == 2:
        pair = {"tuple": [_plain(items[0], module, 3, seeded), _plain(items[1], module, 3, seeded)]}
        return _Value({"list": pair, "len": list(DICT_LEN)}, DICT)
    if name in _LISTS and len(items) == 1:
        try:
            return _Value(_plain(node, module, 1, seeded))
        except _Refused:
            item = _top(items[0], module, module_name, seeded)
            if not item.build:
                raise
            return _Value({"list": item.spec, "len": list(LIST_LEN)}, EACH + item.build)
    found = _class(node, module)
    if found is not None:
        return _Value(_class_spec(found, module, seeded), f"{module_name}:{found.name}")
    return _Value(_plain(node, module, 1, seeded))


def _tuple(items: list[ast.expr], module: ast.Module, depth: int, seeded: Seeds) -> dict[str, Any]:
    if len(items) == 2 and isinstance(items[1], ast.Constant) and items[1].value is Ellipsis:
        return {"list": _plain(items[0], module, depth + 1, seeded), "len": list(LIST_LEN)}
    if not items or len(items) == 1 and isinstance(items[0], ast.Tuple) and not items[0].elts:
        raise _Refused("is an empty tuple")
    return {"tuple": [_plain(item, module, depth + 1, seeded) for item in items]}


def _plain(node: ast.expr, module: ast.Module, depth: int, seeded: Seeds) -> dict[str, Any]:
    """A generator of values that reach the code as they are drawn (no builder).

    Raises:
        _Refused: for anything else, or nesting deeper than MAX_NESTING.
    """
    if depth > MAX_NESTING:
        raise _Refused(f"nests deeper than {MAX_NESTING} levels")
    node = _parsed(node)
    inner = _optional_of(node)
    if inner is not None:
        return {"optional": _plain(inner, module, depth + 1, seeded)}
    name, items = _split(node)
    if name in ("int", "float", "bool", "str") and not items:
        return _simple(name, seeded)
    if name in _LISTS and len(items) == 1:
        return {"list": _plain(items[0], module, depth + 1, seeded), "len": list(LIST_LEN)}
    if name == "Literal" and items:
        return _literal(items)
    if name in ("bytes", *_TUPLES, *_SETS, *_DICTS) or _class(node, module) is not None:
        raise _Refused(
            "inside a structure: it would reach the code as JSON, not built; "
            "the gate builds a parameter's own value only"
        )
    if _is_none(node):
        raise _Refused("is always None: give the parameter a default, and the gate leaves it out")
    if isinstance(node, ast.Name) and any(isinstance(s, ast.ClassDef) and s.name == node.id for s in module.body):
        raise _Refused("is a class the gate cannot build (an Enum, a dataclass or a NamedTuple of plain fields can be)")
    raise _Refused(
        "is not one the gate draws from (int, float, bool, str, bytes, Optional, list, tuple, set, dict, "
        "Literal, Enum, dataclass, NamedTuple)"
    )


def _simple(name: str, seeded: Seeds) -> dict[str, Any]:
    """The generator of `int`, `float`, `bool` or `str`: the wide range, and beside it (a `one_of`)
    the narrow one where lengths and indexes live and the function's own constants (spec/seeds.py);
    a string also as words and the function's strings joined by separators, and as text outside
    printable ASCII."""
    if name == "bool":
        return {"choice": [True, False]}
    numbers = [n for n in seeded.numbers if name == "float" or isinstance(n, int)]
    if name == "int":
        options: list[dict[str, Any]] = [{"int": list(INT_BOUNDS)}, {"int": list(SMALL_INT_BOUNDS)}]
    elif name == "float":
        options = [{"float": list(FLOAT_BOUNDS)}, {"float": list(SMALL_FLOAT_BOUNDS)}]
        numbers = [float(n) for n in numbers]
    else:
        pieces = list(dict.fromkeys([*seeded.strings, *STRING_WORDS]))
        return {
            "one_of": [
                {"string": STRING_ALPHABET, "len": list(STRING_LEN)},
                {"string": STRING_GLUE, "len": list(PIECES_LEN), "pieces": pieces},
                {"choice": pieces},
                {"string": STRING_UNICODE, "len": list(UNICODE_LEN)},
            ]
        }
    if numbers:
        options.append({"choice": list(dict.fromkeys(numbers))})
    return {"one_of": options}


def _literal(items: list[ast.expr]) -> dict[str, Any]:
    """`Literal[...]`: a choice of its values, `null` by an optional."""
    values = []
    for item in items:
        try:
            value = ast.literal_eval(item)
        except ValueError:
            raise _Refused("holds a value that is not a literal constant") from None
        if value is not None and type(value) not in (str, int, float, bool):
            raise _Refused("holds a value that is not a string, number or bool")
        values.append(value)
    plain = [v for v in values if v is not None]
    if not plain:
        raise _Refused("is always None: give the parameter a default, and the gate leaves it out")
    choice = {"choice": plain}
    return {"optional": choice} if len(plain) < len(values) else choice


def _class(node: ast.expr, module: ast.Module) -> ast.ClassDef | None:
    """The module-level class `node` names when it is an Enum, a dataclass or a NamedTuple."""
    if not isinstance(node, ast.Name):
        return None
    for statement in module.body:
        if isinstance(statement, ast.ClassDef) and statement.name == node.id:
            kinds = {_name(base) for base in statement.bases}
            decorated = {_name(d.func if isinstance(d, ast.Call) else d) for d in statement.decorator_list}
            if kinds & {*_ENUM_BASES, "NamedTuple"} or "dataclass" in decorated:
                return statement
    return None


def _class_spec(found: ast.ClassDef, module: ast.Module, seeded: Seeds) -> dict[str, Any]:
    """An Enum: a choice of its members' values (the class builds the member from its value). A
    dataclass or NamedTuple: a tuple of its fields' generators, built positionally.

    Raises:
        _Refused: for a member whose value is not a literal constant, a field that is not plain or
            not given to the constructor, a class without members.
    """
    if {_name(base) for base in found.bases} & set(_ENUM_BASES):
        values = []
        for statement in found.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    try:
                        values.append(ast.literal_eval(statement.value))
                    except ValueError:
                        raise _Refused(f"is an Enum whose member {target.id} has no literal value") from None
        if not values or not all(type(v) in (str, int, float, bool) for v in values):
            raise _Refused("is an Enum without members of string, number or bool values")
        return {"choice": values}
    fields = []
    for statement in found.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            if _split(statement.annotation)[0] in ("ClassVar", "InitVar"):
                continue
            call = statement.value
            if (
                isinstance(call, ast.Call)
                and _name(call.func) == "field"
                and any(k.arg == "init" for k in call.keywords)
            ):
                raise _Refused(f"has a field {statement.target.id} the constructor does not take")
            fields.append(_plain(statement.annotation, module, 2, seeded))
    return {"tuple": fields} if fields else {"choice": [[]]}
