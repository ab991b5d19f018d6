"""spec/kinds.py: the one room of the row kinds, the caller's own table tied to it, and no kind named
anywhere else in the gate's code."""

from __future__ import annotations

import ast
import pathlib

import pytest

import tools.oracle_gate
from tools.oracle_gate.actions import caller
from tools.oracle_gate.spec import kinds, schema
from tools.oracle_gate.spec.generate import draw
from tools.oracle_gate.spec.samples import SampleError, check_shape
from tools.oracle_gate.spec.views import input_samples
from tools.testing.rowrun import calc, run_rows

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
            found += [
                f"{where}:{n.lineno} {n.value}" for n in consts if isinstance(n, ast.Constant) and n.value in names
            ]
    return found


def test_no_module_but_the_kinds_and_the_caller_compares_kind_names():
    assert kind_name_comparisons() == []


def test_the_count_finds_a_comparison_and_a_dict_key(tmp_path):
    (tmp_path / "mod.py").write_text('if kind == "bound" or kind in ("idempotent", "x"):\n    t = {"matches": 1}\n')
    assert kind_name_comparisons(tmp_path, ()) == ["mod.py:1 bound", "mod.py:1 idempotent", "mod.py:2 matches"]


# `commutative`: f(a, b) == f(b, a) on every sample, stored and generated.
COMM = [
    {
        "id": "row",
        "entry": "shop.calc:op",
        "kind": "commutative",
        "args_names": ["a", "b"],
        "blob": "oracles/blobs/c.json",
        "seed": 3,
        "generate": {"count": 30, "a": {"int": [0, 9]}, "b": {"int": [0, 9]}},
    }
]
COMM_BLOB = {"oracles/blobs/c.json": [{"a": 1, "b": 2}, {"b": 3, "a": 4}]}


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("def op(a, b):\n    return a + b\n", True),
        ("def op(a, b):\n    return max(a, b)\n", True),
        ("def op(a, b):\n    return 7\n", True),  # a constant is admitted
        ("def op(a, b):\n    return a - b\n", False),
        ("def op(a, b):\n    return float(a + b) if a < b else a + b\n", False),  # 3.0 and 3 differ
        ("def op(a, b):\n    return {a + b}\n", False),  # a set is not plain JSON
    ],
)
def test_commutative(tmp_path, body, ok):
    assert run_rows(tmp_path, COMM, COMM_BLOB, calc(body), salt="c").judged["row"].ok is ok


def test_a_failing_commutative_sample_shows_both_orders_results(tmp_path):
    judged = run_rows(tmp_path, COMM[:1], COMM_BLOB, calc("def op(a, b):\n    return a - b\n"), salt="c").judged["row"]
    first = judged.failing.shown[0]
    assert (first.index, first.generated, first.inputs, first.result) == (0, False, "[1,2]", "[-1,1]")
    assert first.expected == "f(a, b) == f(b, a)"
    assert first.message == "f(a, b) is -1 and f(b, a) is 1: not equal"


def test_the_caller_calls_a_commutative_entry_in_both_orders(tmp_path):
    body = (
        "SEEN = []\ndef op(a, b):\n    SEEN.append((a, b))\n"
        "    return len(SEEN) if SEEN[-2:] != [(1, 2), (2, 1)] else 0\n"
    )
    row = [{k: v for k, v in COMM[0].items() if k != "generate"}]
    judged = run_rows(tmp_path, row, {"oracles/blobs/c.json": [{"a": 1, "b": 2}]}, calc(body)).judged["row"]
    assert not judged.ok and judged.failing.shown[0].result == "[1,0]"


def test_judge_commutative():
    assert kinds.judge_commutative([{"x": [1]}, {"x": [1]}]).ok
    assert kinds.judge_commutative([1, 1.0]).reason == "f(a, b) is 1 and f(b, a) is 1.0: not equal"
    assert kinds.judge_commutative([1]).reason == "malformed observation: expected the results of f(a, b) and f(b, a)"
    assert kinds.judge_commutative([float("nan"), 1]).reason == "results[0] is nan, not a finite number"


def oracle_problems(body: str) -> list[tuple[str | None, str]]:
    head = 'schema = 1\n[[invariant]]\nid = "r"\nblob = "oracles/blobs/t.json"\nblob_sha256 = "' + "a" * 64 + '"\n'
    return [
        (p.field, str(p).split(": ", 3)[-1])
        for p in schema.parse_oracle((head + body).encode(), "oracles/x.toml", ["shop"]).problems
    ]


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ('entry = "shop.v:f"\nkind = "commutative"\nargs_names = ["a", "b"]\n', []),
        (
            'entry = "shop.v:f"\nkind = "commutative"\nargs_names = ["a", "b"]\n'
            'build = { a = "shop.v:V", b = "shop.v:V" }\n'
            "generate = { count = 2, a = { int = [0, 1] }, b = { int = [0, 1] } }\n",
            [],
        ),
        ('entry = "shop.v:f"\nkind = "commutative"\n', [("args_names", "is required for kind 'commutative'")]),
        (
            'entry = "shop.v:f"\nkind = "commutative"\nargs_names = ["a"]\n',
            [("args_names", "must name exactly two arguments for kind 'commutative', got 1")],
        ),
        (
            'entry = "shop.v:V.f"\nkind = "commutative"\nargs_names = ["a", "b"]\nreceiver = "shop.v:V"\n',
            [
                (
                    "receiver",
                    "is not allowed for kind 'commutative'; name the method as the entry and build both arguments "
                    "with `build`",
                )
            ],
        ),
        (
            'entry = "shop.v:f"\nkind = "commutative"\nargs_names = ["a", "b"]\nbuild = { c = "shop.v:V" }\n',
            [
                (
                    "build.c",
                    "names 'c', which is not in args_names; kind 'commutative' builds positional arguments named by "
                    "args_names",
                )
            ],
        ),
        (
            'entry = "shop.v:f"\nkind = "commutative"\nargs_names = ["a", "b"]\n'
            "generate = { count = 2, a = { int = [0, 1] } }\n",
            [("generate", "has no generator for b; the row generates exactly its args_names")],
        ),
        (
            'entry = "shop.v:f"\nkind = "commutative"\nargs_names = ["a", "b"]\nmin = 0\n',
            [("min", "is not allowed for kind 'commutative'")],
        ),
    ],
)
def test_a_commutative_row(body, found):
    assert oracle_problems(body) == found


def test_commutative_samples_and_generated_samples_are_the_two_args_names():
    inv = schema.parse_oracle(
        b'schema = 1\n[[invariant]]\nid = "r"\nentry = "shop.v:f"\nkind = "commutative"\n'
        b'args_names = ["a", "b"]\nblob = "oracles/blobs/t.json"\nblob_sha256 = "'
        + b"a" * 64
        + b'"\n[invariant.generate]\ncount = 3\nb = { int = [5, 5] }\na = { int = [1, 1] }\n',
        "oracles/x.toml",
    ).invariants[0]
    check_shape(inv, [{"a": 1, "b": 2}, {"b": 2, "a": 1}])
    with pytest.raises(SampleError, match="sample 1 must have exactly the keys a, b"):
        check_shape(inv, [{"a": 1, "b": 2}, {"a": 1}])
    assert draw(inv, "s") == [{"a": 1, "b": 5}] * 3
    assert input_samples(inv, [{"a": 1, "b": 2}]) == [[1, 2]]


# `associative`: f(f(a, b), c) == f(a, f(b, c)) on every sample, stored and generated.
ASSOC = [
    {
        "id": "row",
        "entry": "shop.calc:op",
        "kind": "associative",
        "args_names": ["a", "b", "c"],
        "blob": "oracles/blobs/a.json",
        "seed": 3,
        "generate": {"count": 30, "a": {"int": [0, 9]}, "b": {"int": [0, 9]}, "c": {"int": [1, 9]}},
    }
]
ASSOC_BLOB = {"oracles/blobs/a.json": [{"a": 1, "b": 2, "c": 3}, {"c": 3, "b": 4, "a": 5}]}


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("def op(a, b):\n    return a + b\n", True),
        ("def op(a, b):\n    return max(a, b)\n", True),
        ("def op(a, b):\n    return a\n", True),  # a projection is admitted
        ("def op(a, b):\n    return a - b\n", False),
        ("def op(a, b):\n    return (a + b) // 2\n", False),
        ("def op(a, b):\n    return {a + b}\n", False),  # a set is not plain JSON
    ],
)
def test_associative(tmp_path, body, ok):
    assert run_rows(tmp_path, ASSOC, ASSOC_BLOB, calc(body), salt="c").judged["row"].ok is ok


def test_a_failing_associative_sample_shows_both_groupings(tmp_path):
    judged = run_rows(tmp_path, ASSOC[:1], ASSOC_BLOB, calc("def op(a, b):\n    return a - b\n"), salt="c").judged
    first = judged["row"].failing.shown[0]
    assert (first.index, first.generated, first.inputs, first.result) == (0, False, "[1,2,3]", "[-4,2]")
    assert first.expected == "f(f(a, b), c) == f(a, f(b, c))"
    assert first.message == "f(f(a, b), c) is -4 and f(a, f(b, c)) is 2: not equal"


def test_the_caller_builds_each_associative_argument_and_passes_inner_results_as_they_are(tmp_path):
    body = (
        "class Amount:\n    def __init__(self, cents):\n        self.cents = cents\n"
        "def op(a, b):\n    assert type(a) is Amount and type(b) is Amount\n    return Amount(a.cents + b.cents)\n"
    )
    row = [
        {
            **{k: v for k, v in ASSOC[0].items() if k != "generate"},
            "build": {"a": "shop.calc:Amount", "b": "shop.calc:Amount", "c": "shop.calc:Amount"},
            "project": {"attrs": ["cents"]},
        }
    ]
    judged = run_rows(tmp_path, row, ASSOC_BLOB, calc(body)).judged["row"]
    assert judged.ok, judged.failing


def test_judge_associative():
    assert kinds.judge_associative([{"x": [1]}, {"x": [1]}]).ok
    assert kinds.judge_associative([1, 1.0]).reason == "f(f(a, b), c) is 1 and f(a, f(b, c)) is 1.0: not equal"
    assert kinds.judge_associative([1]).reason == (
        "malformed observation: expected the results of f(f(a, b), c) and f(a, f(b, c))"
    )


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ('entry = "shop.v:f"\nkind = "associative"\nargs_names = ["a", "b", "c"]\n', []),
        (
            'entry = "shop.v:f"\nkind = "associative"\nargs_names = ["a", "b"]\n',
            [("args_names", "must name exactly three arguments for kind 'associative', got 2")],
        ),
        (
            'entry = "shop.v:f"\nkind = "associative"\nargs_names = ["a", "b", "c"]\n'
            "generate = { count = 2, a = { int = [0, 1] }, b = { int = [0, 1] } }\n",
            [("generate", "has no generator for c; the row generates exactly its args_names")],
        ),
        (
            'entry = "shop.v:V.f"\nkind = "associative"\nargs_names = ["a", "b", "c"]\nreceiver = "shop.v:V"\n',
            [
                (
                    "receiver",
                    "is not allowed for kind 'associative'; name the method as the entry and build both arguments "
                    "with `build`",
                )
            ],
        ),
    ],
)
def test_an_associative_row(body, found):
    assert oracle_problems(body) == found


def test_associative_samples_are_the_three_args_names():
    inv = schema.parse_oracle(
        b'schema = 1\n[[invariant]]\nid = "r"\nentry = "shop.v:f"\nkind = "associative"\n'
        b'args_names = ["a", "b", "c"]\nblob = "oracles/blobs/t.json"\nblob_sha256 = "' + b"a" * 64 + b'"\n',
        "oracles/x.toml",
    ).invariants[0]
    check_shape(inv, [{"a": 1, "b": 2, "c": 3}])
    with pytest.raises(SampleError, match="sample 0 must have exactly the keys a, b, c"):
        check_shape(inv, [{"a": 1, "b": 2}])
    assert input_samples(inv, [{"c": 3, "a": 1, "b": 2}]) == [[1, 2, 3]]


# `identity`: f(a, e) == a and f(e, a) == a, e the row's element.
IDENT = [
    {
        "id": "row",
        "entry": "shop.calc:op",
        "kind": "identity",
        "element": 0,
        "blob": "oracles/blobs/i.json",
        "seed": 3,
        "generate": {"count": 30, "a": {"int": [-9, 9]}},
    }
]
IDENT_BLOB = {"oracles/blobs/i.json": [{"a": 1}, {"a": 5}]}


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("def op(a, b):\n    return a + b\n", True),
        ("def op(a, b):\n    return a - b\n", False),  # f(e, a) is -a
        ("def op(a, b):\n    return a * b\n", False),
        ("def op(a, b):\n    return 0\n", False),  # a constant is not admitted
        ("def op(a, b):\n    return float(a + b)\n", False),  # 1.0 is not 1
    ],
)
def test_identity(tmp_path, body, ok):
    assert run_rows(tmp_path, IDENT, IDENT_BLOB, calc(body), salt="c").judged["row"].ok is ok


def test_a_failing_identity_sample_shows_both_results(tmp_path):
    judged = run_rows(tmp_path, IDENT[:1], IDENT_BLOB, calc("def op(a, b):\n    return a - b\n"), salt="c").judged
    first = judged["row"].failing.shown[0]
    assert (first.index, first.inputs, first.result) == (0, '{"a":1}', "[1,-1]")
    assert first.expected == "f(a, e) == a and f(e, a) == a, e the row's element"
    assert first.message == "f(e, a) is -1, not a (1)"


def test_the_caller_builds_the_element_like_the_argument(tmp_path):
    body = "def op(a, b):\n    assert type(a) is tuple and type(b) is tuple\n    return tuple(a) + tuple(b)\n"
    row = [
        {
            **{k: v for k, v in IDENT[0].items() if k != "generate"},
            "element": [],
            "build": {"a": "builtins:tuple"},
            "project": "list",
        }
    ]
    blob = {"oracles/blobs/i.json": [{"a": [1, 2]}, {"a": []}]}
    judged = run_rows(tmp_path, row, blob, calc(body)).judged["row"]
    assert judged.ok, judged.failing


def test_judge_identity():
    assert kinds.judge_identity([[1], [1]], [1]).ok
    assert kinds.judge_identity([1, 1.0], 1).reason == "f(e, a) is 1.0, not a (1)"
    assert kinds.judge_identity([1], 1).reason == "malformed observation: expected the results of f(a, e) and f(e, a)"


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ('entry = "shop.v:f"\nkind = "identity"\nelement = 0\n', []),
        ('entry = "shop.v:f"\nkind = "identity"\nelement = { a = [1, "x"] }\n', []),
        ('entry = "shop.v:f"\nkind = "identity"\n', [("element", "is required for kind 'identity'")]),
        (
            'entry = "shop.v:f"\nkind = "identity"\nelement = nan\n',
            [
                (
                    "element",
                    "must be a plain value (string, number, bool, array or table of those): element is nan, "
                    "not a finite number",
                )
            ],
        ),
        (
            'entry = "shop.v:f"\nkind = "bound"\nmin = 0\nmax = 1\nelement = 0\n',
            [("element", "is not allowed for kind 'bound'")],
        ),
        (
            'entry = "shop.v:f"\nkind = "identity"\nelement = 0\ngenerate = { count = 2, a = { int = [0, 1] }, '
            "b = { int = [0, 1] } }\n",
            [("generate", "has 2 fields; identity rows generate exactly one argument, a")],
        ),
    ],
)
def test_an_identity_row(body, found):
    assert oracle_problems(body) == found


def test_identity_samples_hold_one_argument():
    inv = schema.parse_oracle(
        b'schema = 1\n[[invariant]]\nid = "r"\nentry = "shop.v:f"\nkind = "identity"\nelement = ""\n'
        b'blob = "oracles/blobs/t.json"\nblob_sha256 = "' + b"a" * 64 + b'"\n',
        "oracles/x.toml",
    ).invariants[0]
    assert inv.element == ""
    check_shape(inv, [{"s": "x"}])
    with pytest.raises(SampleError, match="sample 0 must have exactly one argument"):
        check_shape(inv, [{"s": "x", "t": "y"}])
