"""spec/kinds.py: the one room of the row kinds, the caller's own table tied to it, and no kind named
anywhere else in the gate's code."""

from __future__ import annotations

import ast
import pathlib

import tools.oracle_gate
from tools.oracle_gate.actions import caller
from tools.oracle_gate.spec import kinds, schema

ROOT = pathlib.Path(tools.oracle_gate.__file__).parent
# Where kind names may be written: the kinds themselves, and the caller's table (it imports nothing
# of the gate).
ROOMS = ("spec/kinds.py", "actions/caller.py")


def test_the_schema_knows_the_kinds_of_kinds_py_in_their_order():
    assert schema.KINDS == kinds.NAMES == tuple(kind.name for kind in kinds.ALL)
    assert len(set(kinds.NAMES)) == len(kinds.NAMES)


def test_the_caller_calls_every_kind_as_its_record_says():
    table = {name: function.__name__ for name, function in caller.CALLS.items()}
    assert table == {**{kind.name: kind.calls for kind in kinds.ALL}, "reference": "reference"}


def test_kind_of_finds_a_kind_by_name_only():
    assert kinds.kind_of("bound") is kinds.ALL[0]
    assert kinds.kind_of("reference") is None
    assert kinds.kind_of(["bound"]) is None


def test_each_kind_keys_are_the_schema_kind_specific_keys():
    specific = set(schema._KIND_SPECIFIC) | {"generate"}
    for kind in kinds.ALL:
        assert set(kind.required + kind.allowed) <= specific, kind.name
        assert not set(kind.required) & set(kind.allowed), kind.name


def kind_name_comparisons(root: pathlib.Path = ROOT, rooms: tuple[str, ...] = ROOMS) -> list[str]:
    """`path:line name` of each string constant equal to a kind's name used in a comparison (`==`,
    `!=`, `in`, `not in`, on either side, inside a tuple included) or as a dict key, in the gate's
    modules outside `rooms`."""
    names = set(kinds.NAMES)
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where in rooms:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                consts = [n for side in (node.left, *node.comparators) for n in ast.walk(side)]
            elif isinstance(node, ast.Dict):
                consts = [key for key in node.keys if key is not None]
            else:
                continue
            found += [f"{where}:{n.lineno} {n.value}" for n in consts
                      if isinstance(n, ast.Constant) and n.value in names]
    return found


def test_no_module_but_the_kinds_and_the_caller_compares_kind_names():
    assert kind_name_comparisons() == []


def test_the_count_finds_a_comparison_and_a_dict_key(tmp_path):
    (tmp_path / "mod.py").write_text('if kind == "bound" or kind in ("idempotent", "x"):\n    t = {"matches": 1}\n')
    assert kind_name_comparisons(tmp_path, ()) == ["mod.py:1 bound", "mod.py:1 idempotent", "mod.py:2 matches"]
