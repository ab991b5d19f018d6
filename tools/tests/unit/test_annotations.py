"""Unit tests of spec/annotations.py: generators from annotations, valid for the gate's own generator
validation, and values the caller's `built` really constructs."""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import sys

import pytest

from tools.oracle_gate.actions import caller
from tools.oracle_gate.spec import annotations
from tools.oracle_gate.spec.annotations import Drawn, drawn
from tools.oracle_gate.spec.call_fields import CONTAINER_BUILDS
from tools.oracle_gate.spec.generate import GenerateSpec, draw, parse_generate

SOURCE = """
import dataclasses
import enum
from typing import List, Literal, NamedTuple, Optional


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Line:
    quantity: int
    unit: str
    note: Optional[str] = None


class Point(NamedTuple):
    x: float
    y: float


class Cart:
    def __init__(self, lines):
        self.lines = lines


def everything(
    a: int, b: float, c: bool, d: str, e: bytes, f: Optional[int], g: list[str], h: tuple[int, ...],
    i: tuple[int, str], j: dict[str, int], k: Literal["x", -1, None], l: Color, m: Line, n: Point,
    o: "List[list[bool]]", p: frozenset[int], q: Level, *, r: int | None = None, s: Cart = None,
) -> dict:
    return dict(locals())
"""
# What each parameter of `everything` must be, as the function receives it (None allowed where noted).
TYPES = {
    "a": int,
    "b": float,
    "c": bool,
    "d": str,
    "e": bytes,
    "f": (int, type(None)),
    "g": list,
    "h": tuple,
    "i": tuple,
    "j": dict,
    "k": (str, int, type(None)),
    "l": "Color",
    "m": "Line",
    "n": "Point",
    "o": list,
    "p": frozenset,
    "q": "Level",
    "r": (int, type(None)),
}


@pytest.fixture
def shop(tmp_path, monkeypatch):
    """The module `shopdemo.things` of SOURCE, importable, and its syntax tree."""
    package = tmp_path / "shopdemo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "things.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("shopdemo.things"), ast.parse(SOURCE)
    for name in ("shopdemo.things", "shopdemo"):
        sys.modules.pop(name, None)


def function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    seed: int | None
    generate: GenerateSpec | None


def validated(found: Drawn, count: int = 50) -> GenerateSpec:
    spec, problems = parse_generate(
        {"count": count, **found.generate}, "bound", None, path="oracles/x.toml", row="r", entry="shopdemo.things:f"
    )
    assert problems == [] and spec is not None
    return spec


def test_every_understood_annotation_draws_a_valid_generator_and_the_caller_builds_its_value(shop):
    module, tree = shop
    found = drawn(function(tree, "everything"), tree, "shopdemo.things")
    assert isinstance(found, Drawn)
    assert set(found.generate) == set(TYPES)  # s (a class it cannot build, with a default) left out
    assert found.build == {
        "e": "builtins:bytes",
        "h": "builtins:tuple",
        "i": "builtins:tuple",
        "j": "builtins:dict",
        "l": "shopdemo.things:Color",
        "m": "shopdemo.things:Line",
        "n": "shopdemo.things:Point",
        "p": "builtins:frozenset",
        "q": "shopdemo.things:Level",
    }
    seen: dict[str, set[object]] = {name: set() for name in TYPES}
    for sample in draw(Row("r", 1, validated(found)), "salt"):
        kwargs = {
            name: caller.built(caller.resolve(found.build[name]), value) if name in found.build else value
            for name, value in sample.items()
        }
        for name, value in module.everything(**kwargs).items():
            if name in TYPES:
                wanted = TYPES[name]
                wanted = getattr(module, wanted) if isinstance(wanted, str) else wanted
                assert isinstance(value, wanted), (name, value)
                seen[name].add(repr(value))
    assert all(len(values) > 1 for values in seen.values()), seen
    assert {type(x) for x in module.everything(**kwargs)["i"]} == {int, str}


def test_the_builders_of_containers_are_the_ones_rows_may_name():
    assert {annotations.TUPLE, annotations.SET, annotations.FROZENSET, annotations.BYTES, annotations.DICT} == set(
        CONTAINER_BUILDS
    )


def test_the_bounds_are_the_named_constants():
    tree = ast.parse("def f(n: int, x: float, s: str, xs: list[int], b: bytes, m: dict[str, int]): pass\n")
    found = drawn(function(tree, "f"), tree, "m")
    assert isinstance(found, Drawn)
    assert found.generate["n"] == {
        "one_of": [{"int": list(annotations.INT_BOUNDS)}, {"int": list(annotations.SMALL_INT_BOUNDS)}]
    }
    assert found.generate["x"] == {
        "one_of": [{"float": list(annotations.FLOAT_BOUNDS)}, {"float": list(annotations.SMALL_FLOAT_BOUNDS)}]
    }
    words = list(annotations.STRING_WORDS)
    assert found.generate["s"] == {
        "one_of": [
            {"string": annotations.STRING_ALPHABET, "len": list(annotations.STRING_LEN)},
            {"string": annotations.STRING_GLUE, "len": list(annotations.PIECES_LEN), "pieces": words},
            {"choice": words},
            {"string": annotations.STRING_UNICODE, "len": list(annotations.UNICODE_LEN)},
        ]
    }
    assert found.generate["xs"]["len"] == list(annotations.LIST_LEN)
    assert found.generate["b"]["len"] == list(annotations.BYTES_LEN)
    assert found.generate["m"]["len"] == list(annotations.DICT_LEN)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            "class Cart:\n    pass\ndef f(cart: Cart): pass\n",
            "parameter `cart`: annotation `Cart` is a class the gate cannot build",
        ),
        ("def f(self, a: int): pass\n", "parameter `self`: the gate cannot build the object a method is called on"),
        ("def f(a, b: int): pass\n", "parameter `a`: no annotation"),
        ("def f(a: int, /): pass\n", "parameter `a`: positional-only; the gate passes named arguments"),
        ("def f(a: int | str): pass\n", "parameter `a`: annotation `int | str` is not one the gate draws from"),
        ("def f(a: None): pass\n", "parameter `a`: annotation `None` is always None"),
        (
            "def f(a: dict[str, tuple[int, int]]): pass\n",
            "parameter `a`: annotation `dict[str, tuple[int, int]]` inside a structure",
        ),
        (
            "def f(a: Optional[bytes]): pass\n",
            "parameter `a`: annotation `Optional[bytes]` is an optional value that must be built",
        ),
        (
            "class E(Enum):\n    A = auto()\ndef f(a: E): pass\n",
            "parameter `a`: annotation `E` is an Enum whose member A has no literal value",
        ),
        (
            "@dataclass\nclass D:\n    a: list[D]\ndef f(a: D): pass\n",
            "parameter `a`: annotation `D` inside a structure",
        ),
        ("def f(a: 'not valid('): pass\n", "parameter `a`: annotation `not valid(` is a string that does not parse"),
        ("def f(a: mod.Thing): pass\n", "parameter `a`: annotation `mod.Thing` is not one the gate draws from"),
    ],
)
def test_what_cannot_be_drawn_is_one_line_naming_the_parameter(source, reason):
    tree = ast.parse(source)
    found = drawn(function(tree, "f"), tree, "m")
    assert isinstance(found, str) and found.startswith(reason), found


INT = {"one_of": [{"int": [-1000, 1000]}, {"int": [-2, 20]}]}


def test_a_staticmethod_and_defaults():
    tree = ast.parse(
        "class C:\n    @staticmethod\n    def f(a: int, b=3, c: 'Cart' = None, *, d: bool = False): pass\n"
    )
    found = drawn(function(tree, "f"), tree, "m")
    seeded = {"one_of": [*INT["one_of"], {"choice": [2, 3, 4]}]}  # b's default is a constant of f
    assert found == Drawn({"a": seeded, "d": {"one_of": [{"choice": [False]}, {"choice": [True, False]}]}}, {}, ("d",))


def test_an_enum_and_a_namedtuple_are_drawn_from_their_values_and_fields():
    tree = ast.parse(
        "from enum import Enum\nfrom typing import NamedTuple\n"
        "class Size(Enum):\n    S = 1\n    L = 3\n    _ignore_ = 0\n"
        "class P(typing.NamedTuple):\n    x: int\n    label: ClassVar[str]\n    tag: Literal['a', 'b']\n"
        "def f(s: Size, p: P): pass\n"
    )
    found = drawn(function(tree, "f"), tree, "shop.sizes")
    assert found == Drawn(
        {"s": {"choice": [1, 3]}, "p": {"tuple": [INT, {"choice": ["a", "b"]}]}},
        {"s": "shop.sizes:Size", "p": "shop.sizes:P"},
    )


def test_the_real_enum_and_containers_build_as_the_caller_builds_them():
    class Mode(enum.Enum):
        A = "a"

    assert caller.built(Mode, "a") is Mode.A
    assert caller.built(bytes, [0, 255]) == b"\x00\xff"
    assert caller.built(dict, [["a", 1], ["b", 2]]) == {"a": 1, "b": 2}
    assert caller.built(tuple, [1, 2]) == (1, 2)


def test_a_list_of_values_that_need_building_is_built_item_by_item(shop):
    module, _ = shop
    tree = ast.parse(
        "from typing import NamedTuple\nclass Point(NamedTuple):\n    x: float\n    y: float\n"
        "def f(pairs: list[tuple[str, int]], points: list[Point], grid: list[list[bytes]], n: list[int]): pass\n"
    )
    found = drawn(function(tree, "f"), tree, "shopdemo.things")
    assert isinstance(found, Drawn)
    assert found.build == {
        "pairs": "each:builtins:tuple",
        "points": "each:shopdemo.things:Point",
        "grid": "each:each:builtins:bytes",
    }
    samples = draw(Row("r", 1, validated(found)), "salt")
    kinds = set()
    for sample in samples:
        pairs = caller.built(caller.builder(found.build["pairs"]), sample["pairs"])
        points = caller.built(caller.builder(found.build["points"]), sample["points"])
        grid = caller.built(caller.builder(found.build["grid"]), sample["grid"])
        assert type(pairs) is list and all(type(p) is tuple and len(p) == 2 for p in pairs)
        assert all(type(p) is module.Point for p in points)
        assert all(type(row) is list and all(type(b) is bytes for b in row) for row in grid)
        kinds.update(type(v).__name__ for p in pairs for v in p)
    assert kinds == {"str", "int"}
    with pytest.raises(TypeError):
        caller.built(caller.builder("each:builtins:tuple"), {"not": "an array"})


SEEDED = '''import re
ENTITY = re.compile(r"&#(\\d+);")
SEP = "-"
def helper(t):
    return t.strip("~")
def f(text: str, width: int = 7, sep: str = SEP, flag: bool = True, rate: float = 0.5):
    """Docstrings are not constants."""
    return helper(ENTITY.sub("", text))[:width] + sep
'''


def test_the_functions_constants_seed_its_generators():
    tree = ast.parse(SEEDED)
    found = drawn(function(tree, "f"), tree, "m")
    assert isinstance(found, Drawn)
    text = found.generate["text"]["one_of"]
    assert text[2] == {"choice": ["&#1;", "-", "~", *annotations.STRING_WORDS]}
    assert text[1]["pieces"] == text[2]["choice"]
    width = found.generate["width"]["one_of"]
    assert width[0] == {"choice": [7]}
    assert width[1]["one_of"][2] == {"choice": [6, 7, 8]}
    assert found.generate["sep"]["one_of"][0] == {"choice": ["-"]}
    assert found.generate["flag"] == {"one_of": [{"choice": [True]}, {"choice": [True, False]}]}
    assert found.generate["rate"]["one_of"][1]["one_of"][2] == {"choice": [6.0, 7.0, 8.0, 0.5]}
    assert found.defaulted == ("width", "sep", "flag", "rate")


def test_a_default_that_is_not_a_plain_literal_is_not_kept():
    tree = ast.parse("def f(a: int = len('ab'), b: str | None = None, c: tuple[int, ...] = ()): pass\n")
    found = drawn(function(tree, "f"), tree, "m")
    assert isinstance(found, Drawn)
    assert found.generate["a"] == INT
    assert set(found.generate["b"]) == {"optional"}
    assert found.generate["c"] == {"one_of": [{"choice": [[]]}, {"list": INT, "len": list(annotations.LIST_LEN)}]}


def test_every_generator_it_gives_is_valid():
    tree = ast.parse(SEEDED + "def g(xs: list[str] = ['a'], o: dict[str, float] | None = None, n: int = -3): pass\n")
    for name in ("f", "g"):
        found = drawn(function(tree, name), tree, "m")
        assert isinstance(found, Drawn)
        spec, errors = parse_generate({"count": 50, **found.generate}, "bound", None, path="o.toml", row="r")
        assert errors == [] and spec is not None


def test_star_args_and_keyword_args_are_left_empty():
    tree = ast.parse("def f(a: int, *rest: int, b: str = 'x', **more: int): pass\n")
    found = drawn(function(tree, "f"), tree, "m")
    assert isinstance(found, Drawn) and list(found.generate) == ["a", "b"] and found.defaulted == ("b",)


PROJECTED = """from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, Optional, Tuple, ClassVar
class Pair(NamedTuple):
    a: int
    b: int
@dataclass
class Box:
    w: int
    h: int = 2
    kind: ClassVar[str] = "box"
class Mode(Enum):
    A = 1
def t() -> tuple[int, str]: pass
def tt() -> "Tuple[int, ...]": pass
def b() -> bytes: pass
def p() -> Pair: pass
def x() -> Box: pass
def m() -> Mode: pass
def s() -> str: pass
def o() -> Optional[tuple[int, int]]: pass
def n(): pass
"""


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("t", "list"),
        ("tt", "list"),
        ("b", "list"),
        ("p", {"attrs": ["a", "b"]}),
        ("x", {"attrs": ["w", "h"]}),
        ("m", None),
        ("s", None),
        ("o", None),
        ("n", None),
    ],
)
def test_the_projection_a_return_annotation_needs(name, wanted):
    tree = ast.parse(PROJECTED)
    assert annotations.projection(function(tree, name), tree) == wanted
