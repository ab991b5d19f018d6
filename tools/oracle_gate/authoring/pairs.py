"""The name and signature rules of `propose --all` (docs/oracles.md, "Proposing rows"): which
functions of a module form a round trip, which one is idempotent, which binary operation is
commutative, associative or has an identity element, read from names and annotations alone.

Pure: `ast` only. A rule suggests a claim for a reviewer; the run of the row decides whether it holds.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tools.oracle_gate.git.functions import FunctionNode

# (encoder, decoder) verbs: `entry(x)` by the first, then the second, gives x back. Each pairs whole
# names (`dumps`, `loads`) and names that begin or end with the verb and a `_` (`format_date`,
# `parse_date`; `date_to_text`, ... below).
ROUND_TRIP_VERBS = (
    ("format", "parse"),
    ("dumps", "loads"),
    ("dump", "load"),
    ("encode", "decode"),
    ("serialize", "deserialize"),
    ("serialise", "deserialise"),
    ("pack", "unpack"),
    ("compress", "decompress"),
    ("encrypt", "decrypt"),
    ("escape", "unescape"),
    ("quote", "unquote"),
    ("wrap", "unwrap"),
    ("to", "from"),
)
# Words of a function that maps a value to a canonical form, which a second call leaves alone.
IDEMPOTENT_WORDS = (
    "normalize",
    "normalise",
    "canonical",
    "dedupe",
    "dedup",
    "deduplicate",
    "sort",
    "unique",
    "strip",
    "clean",
    "compact",
    "simplify",
    "slugify",
)
# Words of binary operations that are not commutative (the order of the arguments matters), and of
# those that are not associative either.
NOT_COMMUTATIVE = (
    "sub",
    "minus",
    "diff",
    "div",
    "pow",
    "concat",
    "join",
    "append",
    "prepend",
    "cmp",
    "compare",
    "apply",
    "replace",
    "update",
    "before",
    "after",
    "format",
    "split",
)
NOT_ASSOCIATIVE = (
    "sub",
    "minus",
    "diff",
    "div",
    "pow",
    "cmp",
    "compare",
    "avg",
    "mean",
    "average",
    "distance",
    "ratio",
)
# Identity elements by the operation's words and the parameters' annotation: 0 for adding numbers,
# "" and [] for joining strings and lists, 1 for multiplying; True for `and`, False for `or`.
_ADDITIVE = ("add", "plus", "sum", "concat", "join", "merge", "union", "combine", "append", "extend")
_MULTIPLICATIVE = ("mul", "times", "product", "multiply")
IDENTITY_ELEMENTS: dict[tuple[str, str], object] = {
    **{(word, "int"): 0 for word in _ADDITIVE},
    **{(word, "float"): 0.0 for word in _ADDITIVE},
    **{(word, "str"): "" for word in _ADDITIVE},
    **{(word, "list"): [] for word in _ADDITIVE},
    **{(word, "int"): 1 for word in _MULTIPLICATIVE},
    **{(word, "float"): 1.0 for word in _MULTIPLICATIVE},
    ("gcd", "int"): 0,
    ("lcm", "int"): 1,
    ("and", "bool"): True,
    ("all", "bool"): True,
    ("or", "bool"): False,
    ("any", "bool"): False,
}


@dataclass(frozen=True)
class Pair:
    """Two functions of one module that undo each other.

    Attributes:
        entry: the encoder's name: a row calls it on x.
        inverse: the decoder's name: it is called on the encoder's result.
    """

    entry: str
    inverse: str


def words(name: str) -> list[str]:
    """The `_`-separated words of a name, lower-cased, without empty ones."""
    return [w for w in name.lower().split("_") if w]


def _mentions(name: str, vocabulary: tuple[str, ...]) -> bool:
    """True when a word of `name` begins with a word of `vocabulary` (`normalize_name`, `sorted`)."""
    return any(word.startswith(v) for word in words(name) for v in vocabulary)


def counterparts(name: str) -> list[tuple[str, bool]]:
    """The names that would undo `name`, each with True when `name` is the encoder: by
    ROUND_TRIP_VERBS (whole, leading or trailing), `X`/`un_X`/`unX`, and `a_to_b`/`b_to_a`."""
    found: list[tuple[str, bool]] = []
    for encoder, decoder in ROUND_TRIP_VERBS:
        for mine, other, encodes in ((encoder, decoder, True), (decoder, encoder, False)):
            if name == mine:
                found.append((other, encodes))
            elif name.startswith(mine + "_"):
                found.append((other + name[len(mine) :], encodes))
            elif name.endswith("_" + mine):
                found.append((name[: -len(mine)] + other, encodes))
    if name.startswith("un_") or name.startswith("un") and name[2:] and name[2:] != name:
        found.append((name[3:] if name.startswith("un_") else name[2:], False))
    found += [("un_" + name, True), ("un" + name, True)]
    left, sep, right = name.partition("_to_")
    if sep and left and right:
        found.append((f"{right}_to_{left}", left < right))
    return found


def round_trips(functions: dict[str, FunctionNode]) -> list[Pair]:
    """The pairs among `functions` (name -> def, the public functions of one module) that undo
    each other by name (`counterparts`) and signature: the encoder takes one argument without a
    default, the decoder at least one, and where both are annotated the encoder's result is the
    decoder's argument and the decoder's result the encoder's. Each pair once, in name order."""
    pairs: dict[str, Pair] = {}
    for name in sorted(functions):
        for other, encodes in counterparts(name):
            if other not in functions or other == name:
                continue
            pair = Pair(name, other) if encodes else Pair(other, name)
            if pair.entry not in pairs and _fits(functions[pair.entry], functions[pair.inverse]):
                pairs[pair.entry] = pair
    return list(pairs.values())


def required(node: FunctionNode) -> list[ast.arg]:
    """The parameters a call must give (no default), `self` and `cls` left out; `*args` and
    `**kwargs` are never required."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    needed = positional[: len(positional) - len(args.defaults)]
    needed += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    return [a for a in needed if a.arg not in ("self", "cls")]


def _same(a: ast.expr | None, b: ast.expr | None) -> bool:
    """True when both annotations are absent, one is, or both are written alike."""
    return a is None or b is None or ast.dump(a) == ast.dump(b)


def _fits(encoder: FunctionNode, decoder: FunctionNode) -> bool:
    taken, given = required(encoder), [*decoder.args.posonlyargs, *decoder.args.args]
    if len(taken) != 1 or not given or len(required(decoder)) > 1:
        return False
    return _same(encoder.returns, given[0].annotation) and _same(decoder.returns, taken[0].annotation)


def is_idempotent_name(node: FunctionNode) -> bool:
    """True for a function named like IDEMPOTENT_WORDS whose first parameter's annotation (when it
    and the result are annotated) is its result's."""
    params = required(node)
    return bool(params) and _mentions(node.name, IDEMPOTENT_WORDS) and _same(params[0].annotation, node.returns)


def binary_operands(node: FunctionNode) -> tuple[ast.arg, ast.arg] | None:
    """The two parameters of a binary operation on one type: exactly two without a default, both
    annotated alike; None for any other function."""
    params = required(node)
    if len(params) != 2 or params[0].annotation is None:
        return None
    a, b = params
    return (a, b) if b.annotation is not None and ast.dump(a.annotation) == ast.dump(b.annotation) else None  # type: ignore[arg-type]


def relations(node: FunctionNode) -> tuple[bool, bool, object]:
    """(commutative, associative, identity element or None) that a binary operation on one type
    (`binary_operands`) suggests by its name and annotations: commutative unless its name says the
    order matters (NOT_COMMUTATIVE); associative when its result is annotated like its operands,
    its name does not say otherwise (NOT_ASSOCIATIVE) and they are not floats (rounding makes
    `(a + b) + c` and `a + (b + c)` differ); an identity element from IDENTITY_ELEMENTS."""
    operands = binary_operands(node)
    if operands is None:
        return False, False, None
    annotation = ast.unparse(operands[0].annotation) if operands[0].annotation is not None else ""
    closed = node.returns is not None and _same(node.returns, operands[0].annotation)
    commutative = not _mentions(node.name, NOT_COMMUTATIVE)
    associative = closed and annotation != "float" and not _mentions(node.name, NOT_ASSOCIATIVE)
    kind = "list" if annotation.startswith(("list[", "List[")) or annotation == "list" else annotation
    element = next((IDENTITY_ELEMENTS[(w, kind)] for w in words(node.name) if (w, kind) in IDENTITY_ELEMENTS), None)
    return commutative, associative, element if closed else None
