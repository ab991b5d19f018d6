"""authoring/pairs.py: the name and signature rules of `propose --all`."""

from __future__ import annotations

import ast

import pytest

from tools.oracle_gate.authoring import pairs


def defs(source: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("def dumps(v: int) -> str: ...\ndef loads(t: str) -> int: ...\n", [("dumps", "loads")]),
        ("def format_date(d: int) -> str: ...\ndef parse_date(t: str) -> int: ...\n", [("format_date", "parse_date")]),
        ("def to_json(v: dict) -> str: ...\ndef from_json(t: str) -> dict: ...\n", [("to_json", "from_json")]),
        ("def escape(t): ...\ndef unescape(t): ...\n", [("escape", "unescape")]),
        ("def slug(t): ...\ndef un_slug(t): ...\n", [("slug", "un_slug")]),
        ("def cents_to_text(c): ...\ndef text_to_cents(t): ...\n", [("cents_to_text", "text_to_cents")]),
        ("def serialize(v, *, indent=2): ...\ndef deserialize(t, strict=True): ...\n", [("serialize", "deserialize")]),
        # signatures that do not fit: two required arguments; annotations that do not chain
        ("def encode(v, key): ...\ndef decode(t): ...\n", []),
        ("def dumps(v: int) -> bytes: ...\ndef loads(t: str) -> int: ...\n", []),
        ("def dumps(v: int) -> str: ...\ndef loads(t: str) -> float: ...\n", []),
        ("def dumps(v): ...\ndef reads(t): ...\n", []),
    ],
)
def test_round_trips_pair_functions_by_name_and_signature(source, found):
    assert [(p.entry, p.inverse) for p in pairs.round_trips(defs(source))] == found


@pytest.mark.parametrize(
    ("source", "idempotent"),
    [
        ("def normalize_name(name: str) -> str: ...", True),
        ("def dedupe(items): ...", True),
        ("def sorted_lines(lines: list[str], reverse: bool = False) -> list[str]: ...", True),
        ("def normalize(name: str) -> bool: ...", False),  # the result is not a state of the same kind
        ("def total(lines): ...", False),
        ("def clean(): ...", False),
    ],
)
def test_a_canonical_form_by_its_name(source, idempotent):
    assert pairs.is_idempotent_name(next(iter(defs(source).values()))) is idempotent


@pytest.mark.parametrize(
    ("source", "relations"),
    [
        ("def add(a: int, b: int) -> int: ...", (True, True, 0)),
        ("def add_amounts(a: float, b: float) -> float: ...", (True, False, 0.0)),  # rounding
        ("def concat(a: str, b: str) -> str: ...", (False, True, "")),
        ("def merge(a: list[int], b: list[int]) -> list[int]: ...", (True, True, [])),
        ("def multiply(a: int, b: int) -> int: ...", (True, True, 1)),
        ("def subtract(a: int, b: int) -> int: ...", (False, False, None)),
        ("def distance(a: int, b: int) -> int: ...", (True, False, None)),
        ("def pick(a: int, b: int): ...", (True, False, None)),  # result not annotated: not closed
        ("def add(a: int, b: str) -> int: ...", (False, False, None)),  # two types
        ("def add(a: int, b: int, c: int) -> int: ...", (False, False, None)),  # three arguments
        ("def add(a: int, b: int, c: int = 0) -> int: ...", (True, True, 0)),  # a default is left out
    ],
)
def test_binary_operation_relations_by_name_and_annotations(source, relations):
    assert pairs.relations(next(iter(defs(source).values()))) == relations


def test_required_leaves_out_self_defaults_and_star_arguments():
    node = defs("def f(self, a, b=1, *rest, c, d=2, **more): ...")["f"]
    assert [a.arg for a in pairs.required(node)] == ["a", "c"]
