"""Unit tests of actions/caller.py: result encoding, one row's request to its reply, and the line channel of main."""

from __future__ import annotations

import ast
import collections
import json
import os
import random
import sys
from pathlib import Path

import pytest

from tools.oracle_gate.actions import caller
from tools.oracle_gate.actions.caller import MAX_DEPTH, NotPlain, call_row, encode

# The classes the caller reports for a raised ValueError, the raised class first.
VALUE_ERROR = ["builtins:ValueError", "builtins:Exception", "builtins:BaseException", "builtins:object"]


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-7, "-7"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (1e16, "1e+16"),
        ("é\n\udcff", '"\\u00e9\\n\\udcff"'),
        ([], "[]"),
        ({}, "{}"),
        ({"b": [1, {"d": None, "c": 2.5}], "a": "x"}, '{"a":"x","b":[1,{"c":2.5,"d":null}]}'),
    ],
)
def test_encode_plain_values_compactly_with_sorted_keys(value, text):
    assert encode(value) == text
    assert json.loads(text) == value


@pytest.mark.parametrize(
    "value, message",
    [
        (float("nan"), "result is nan, not a finite number"),
        ({"b": [{"a": float("-inf")}]}, "result['b'][0]['a'] is -inf, not a finite number"),
        ({1: 2}, "result has a non-string key of type int"),
        ([1, (2,)], "result[1] is a builtins.tuple, not a plain JSON-typed value"),
        ({1}, "result is a builtins.set, not a plain JSON-typed value"),
        (collections.OrderedDict(a=1), "result is a collections.OrderedDict, not a plain JSON-typed value"),
        ("huge", "result is an integer too long to convert to text"),
    ],
)
def test_encode_refuses_what_is_not_plain(value, message):
    with pytest.raises(NotPlain) as caught:
        encode(10**5000 if value == "huge" else value)
    assert str(caught.value) == message


def nested(levels: int) -> list:
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


def test_encode_depth_limit():
    assert encode(nested(MAX_DEPTH)) == "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(NotPlain) as caught:
        encode(nested(MAX_DEPTH + 1), "state")
    assert str(caught.value) == "state" + "[0]" * (MAX_DEPTH + 1) + f" nests deeper than {MAX_DEPTH} levels"


def test_each_kind_is_called_in_its_shape():
    assert (
        call_row(
            {"id": "t", "entry": "operator:add", "kind": "exact_table", "seed": 0, "samples": [[1, 2], ["a", "b"]]}
        )
        == '{"id":"t","results":[{"value":3},{"value":"ab"}]}'
    )
    assert (
        call_row({"id": "b", "entry": "builtins:dict", "kind": "bound", "seed": 0, "samples": [{"b": 2, "a": 1}]})
        == '{"id":"b","results":[{"value":{"a":1,"b":2}}]}'
    )
    assert call_row(
        {
            "id": "i",
            "entry": "builtins:dict",
            "kind": "idempotent",
            "seed": 0,
            "args": ["k"],
            "repeat": 3,
            "samples": [{"state": {"n": 1}, "kwargs": {"k": "x"}}],
        }
    ) == ('{"id":"i","results":[{"value":[{"k":"x","n":1},{"k":"x","n":1},{"k":"x","n":1}]}]}')


def test_raising_and_unplain_results_are_per_sample():
    reply = json.loads(
        call_row({"id": "f", "entry": "builtins:float", "kind": "exact_table", "samples": [["nan"], ["1.5"], ["no"]]})
    )
    assert reply == {
        "id": "f",
        "results": [
            {"unplain": "result is nan, not a finite number"},
            {"value": 1.5},
            {"raised": "ValueError: could not convert string to float: 'no'", "classes": VALUE_ERROR},
        ],
    }


def test_a_raised_message_is_cut_to_500_characters():
    reply = json.loads(
        call_row({"id": "l", "entry": "operator:getitem", "kind": "exact_table", "samples": [[{}, "x" * 1000]]})
    )
    assert reply["results"] == [
        {
            "raised": "KeyError: '" + "x" * 489,
            "classes": ["builtins:KeyError", "builtins:LookupError", *VALUE_ERROR[1:]],
        }
    ]


@pytest.mark.parametrize(
    "request_, error",
    [
        ({"id": "m", "entry": "math:pi"}, "cannot load entry math:pi: TypeError: math:pi is not callable"),
        (
            {"id": "n", "entry": "no_such_mod_xyz:f"},
            "cannot load entry no_such_mod_xyz:f: ModuleNotFoundError: No module named 'no_such_mod_xyz'",
        ),
        (
            {"id": "a", "entry": "math:no_such_fn"},
            "cannot load entry math:no_such_fn: AttributeError: module 'math' has no attribute 'no_such_fn'",
        ),
        ({"id": "e"}, "cannot load entry None: KeyError: 'entry'"),
    ],
)
def test_an_entry_that_cannot_be_loaded_is_the_rows_error(request_, error):
    reply = json.loads(call_row({**request_, "kind": "exact_table", "samples": [[]]}))
    assert reply == {"id": request_["id"], "error": error}


def test_an_unknown_kind_fails_every_sample():
    reply = json.loads(call_row({"id": "k", "entry": "operator:add", "kind": "other", "samples": [[1, 2], [3]]}))
    assert reply == {"id": "k", "results": [{"raised": "unknown kind 'other'"}] * 2}


@pytest.mark.parametrize("seed, used", [(7, 7), (0, 0), (None, 0), (True, 0), ("7", 0)])
def test_the_row_seed_seeds_random_before_the_calls(seed, used):
    state = random.getstate()
    try:
        reply = json.loads(
            call_row({"id": "r", "entry": "random:random", "kind": "exact_table", "seed": seed, "samples": [[], []]})
        )
    finally:
        random.setstate(state)
    rng = random.Random(used)
    assert reply["results"] == [{"value": rng.random()}, {"value": rng.random()}]


def test_each_call_gets_a_fresh_copy_of_its_inputs():
    request = {"id": "c", "entry": "operator:iadd", "kind": "exact_table", "samples": [[[1], [2]]]}
    assert call_row(request) == '{"id":"c","results":[{"value":[1,2]}]}'
    assert request["samples"] == [[[1], [2]]]


def test_main_serves_one_reply_line_per_request_line():
    req_read, req_write = os.pipe()
    rep_read, rep_write = os.pipe()
    try:
        os.write(
            req_write,
            b'{"id":"a","entry":"operator:add","kind":"exact_table","samples":[[1,2]]}\n'
            b'{"id":"b","entry":"operator:getitem","kind":"exact_table","samples":[[{"\\udcff":1},"\\udcff"]]}\n',
        )
        os.close(req_write)
        assert caller.main([str(req_read), str(rep_write)]) == 0
        os.close(rep_write)
        replies = os.read(rep_read, 1 << 16)
    finally:
        os.close(req_read)
        os.close(rep_read)
    assert replies == b'{"id":"a","results":[{"value":3}]}\n{"id":"b","results":[{"value":1}]}\n'


def test_main_stops_at_a_request_that_is_not_json():
    req_read, req_write = os.pipe()
    rep_read, rep_write = os.pipe()
    try:
        os.write(req_write, b'{"id":"a","entry":"operator:neg","kind":"exact_table","samples":[[1]]}\nnot json\n')
        os.close(req_write)
        with pytest.raises(ValueError):
            caller.main([str(req_read), str(rep_write)])
        os.close(rep_write)
        assert os.read(rep_read, 1 << 16) == b'{"id":"a","results":[{"value":-1}]}\n'
    finally:
        os.close(req_read)
        os.close(rep_read)


def test_the_caller_imports_the_standard_library_only():
    tree = ast.parse(Path(caller.__file__).read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert names == {"importlib", "json", "math", "os", "random", "sys", "typing"}


# The coverage record (docs/design.md section 12): which production functions a row's calls entered.

PROBE = {
    "ran_probe/__init__.py": "def top(x):\n    return x\n",
    "ran_probe/calc.py": """\
from ran_probe import util

SETUP = util.at_import()


def add(a, b):
    def inner(x):
        return util.twice(x) // 2
    return inner(a) + Cart().total(b) + sum(i for i in [0]) + (lambda: 0)()


class Cart:
    def total(self, b):
        return b


def never():
    return 0
""",
    "ran_probe/util.py": """\
def twice(x):
    return 2 * x


def at_import():
    return 1
""",
}


@pytest.fixture
def probe(tmp_path, monkeypatch):
    for rel, source in PROBE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in [m for m in list(sys.modules) if m.split(".")[0] == "ran_probe"]:
        del sys.modules[name]


def row(entry, samples, **extra):
    return {"id": "r", "entry": entry, "kind": "exact_table", "seed": 0, "samples": samples, **extra}


def test_the_record_names_every_production_function_the_calls_entered(probe):
    reply = json.loads(call_row(row("ran_probe.calc:add", [[1, 2], [3, 4]], packages=["ran_probe"])))
    # Methods, nested functions and functions of other modules of the package, by their
    # `__qualname__`; not the lambda, the generator expression, what ran at import, nor what never ran.
    assert reply == {
        "id": "r",
        "results": [{"value": 3}, {"value": 7}],
        "ran": [
            "ran_probe.calc:Cart.total",
            "ran_probe.calc:add",
            "ran_probe.calc:add.<locals>.inner",
            "ran_probe.util:twice",
        ],
    }


def test_each_row_records_only_its_own_calls_and_the_recording_stops_after_it(probe):
    call_row(row("ran_probe.calc:add", [[1, 2]], packages=["ran_probe"]))
    reply = json.loads(call_row(row("ran_probe.util:twice", [[5]], packages=["ran_probe"])))
    assert reply["ran"] == ["ran_probe.util:twice"]
    assert sys.gettrace() is None
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        assert monitoring.get_events(monitoring.COVERAGE_ID) == 0


def test_only_the_named_packages_are_recorded_and_without_packages_there_is_no_record(probe):
    assert json.loads(call_row(row("ran_probe.calc:add", [[1, 2]], packages=["other"])))["ran"] == []
    assert "ran" not in json.loads(call_row(row("ran_probe.calc:add", [[1, 2]])))
    assert "ran" not in json.loads(call_row(row("ran_probe.calc:add", [[1, 2]], packages="ran_probe")))


def test_a_row_that_raises_still_records_and_an_unloadable_entry_has_no_record(probe):
    reply = json.loads(call_row(row("ran_probe.calc:add", [["x", 2]], packages=["ran_probe"])))
    assert reply["results"][0] == {
        "raised": "TypeError: unsupported operand type(s) for //: 'str' and 'int'",
        "classes": ["builtins:TypeError", *VALUE_ERROR[1:]],
    }
    assert reply["ran"] == ["ran_probe.calc:add", "ran_probe.calc:add.<locals>.inner", "ran_probe.util:twice"]
    assert json.loads(call_row(row("ran_probe.calc:gone", [[1]], packages=["ran_probe"]))).keys() == {"id", "error"}


def test_the_record_leaves_the_results_as_they_were(probe):
    plain = call_row(row("ran_probe.calc:add", [[1, 2], [3, 4]]))
    recorded = json.loads(call_row(row("ran_probe.calc:add", [[1, 2], [3, 4]], packages=["ran_probe"])))
    assert json.loads(plain)["results"] == recorded["results"]


def test_a_packages_own_module_is_named_by_the_package_however_it_was_imported(probe):
    for entry in ("ran_probe:top", "ran_probe.__init__:top"):
        assert json.loads(call_row(row(entry, [[1]], packages=["ran_probe"])))["ran"] == ["ran_probe:top"]


def test_names_the_gate_would_refuse_are_left_out():
    # A code object whose qualified name production code rewrote, or a module that is not a dotted
    # name of identifiers, never reaches the reply (the judge would refuse the whole record).
    assert caller._plain_name("shop.calc", "Cart.total") and caller._plain_name("shop", "f.<locals>.g")
    assert not caller._plain_name("shop", "<locals>.g") and not caller._plain_name("shop", "f.<locals>")
    assert not caller._plain_name("shop.my-mod", "f") and not caller._plain_name("shop", "a b")


def test_the_callers_record_limit_is_the_judges():
    from tools.oracle_gate.spec.ran_record import MAX_RAN_FUNCTIONS

    assert caller.MAX_RAN_FUNCTIONS == MAX_RAN_FUNCTIONS


def test_a_raised_result_names_the_classes_of_its_method_resolution_order(tmp_path, monkeypatch):
    (tmp_path / "raising_probe.py").write_text(
        "class Meta(type):\n"
        "    __mro__ = property(lambda cls: (int,))\n"
        "class ParseError(ValueError, metaclass=Meta):\n"
        "    pass\n"
        "Odd = type('Odd name', (ParseError,), {})\n"
        "def parse(text):\n"
        "    class Local(ParseError):\n"
        "        pass\n"
        "    raise {'p': ParseError, 'o': Odd, 'l': Local}[text]('bad')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reply = json.loads(
        call_row({"id": "r", "entry": "raising_probe:parse", "kind": "exact_table", "samples": [["p"], ["o"], ["l"]]})
    )
    assert reply["results"] == [
        {"raised": "ParseError: bad", "classes": ["raising_probe:ParseError", *VALUE_ERROR]},
        {"raised": "Odd name: bad", "classes": ["raising_probe:ParseError", *VALUE_ERROR]},
        # A class defined in a function cannot be found again by its name: it is not reported.
        {"raised": "Local: bad", "classes": ["raising_probe:ParseError", *VALUE_ERROR]},
    ]


class _Posing(Exception):
    """Names itself after another class: never reported under that name."""

    __module__ = "json.decoder"
    __qualname__ = "JSONDecodeError"


class _PosingBase:
    __module__ = "builtins"
    __qualname__ = "ValueError"


class _Boom(KeyError, _PosingBase):
    pass


def test_a_class_that_assigns_another_class_name_is_not_reported_under_it():
    assert caller.raised_classes(_Posing) == ["builtins:Exception", "builtins:BaseException", "builtins:object"]
    assert "builtins:ValueError" not in caller.raised_classes(_Boom)
    assert caller.raised_classes(ValueError)[0] == "builtins:ValueError"


def test_project_list_turns_named_tuples_into_lists_recursively_and_leaves_str_subclasses():
    pair = collections.namedtuple("Pair", "a b")

    class Text(str):
        pass

    assert caller.project((pair(1, (2, 3)), [pair("x", None)]), "list") == [[1, [2, 3]], [["x", None]]]
    projected = caller.project([Text("s")], "list")
    assert type(projected[0]) is Text  # still refused by encode, as a str subclass
