"""Unit tests of actions/caller.py: result encoding, one row's request to its reply, and the line channel of main."""

from __future__ import annotations

import ast
import collections
import json
import os
import random

import pytest

from tools.oracle_gate.actions import caller
from tools.oracle_gate.actions.caller import MAX_DEPTH, NotPlain, call_row, encode


@pytest.mark.parametrize("value, text", [
    (None, "null"), (True, "true"), (False, "false"), (0, "0"), (-7, "-7"), (1.0, "1.0"), (-0.0, "-0.0"),
    (1e16, "1e+16"), ("é\n\udcff", '"\\u00e9\\n\\udcff"'), ([], "[]"), ({}, "{}"),
    ({"b": [1, {"d": None, "c": 2.5}], "a": "x"}, '{"a":"x","b":[1,{"c":2.5,"d":null}]}'),
])
def test_encode_plain_values_compactly_with_sorted_keys(value, text):
    assert encode(value) == text
    assert json.loads(text) == value


@pytest.mark.parametrize("value, message", [
    (float("nan"), "result is nan, not a finite number"),
    ({"b": [{"a": float("-inf")}]}, "result['b'][0]['a'] is -inf, not a finite number"),
    ({1: 2}, "result has a non-string key of type int"),
    ([1, (2,)], "result[1] is a builtins.tuple, not a plain JSON-typed value"),
    ({1}, "result is a builtins.set, not a plain JSON-typed value"),
    (collections.OrderedDict(a=1), "result is a collections.OrderedDict, not a plain JSON-typed value"),
    ("huge", "result is an integer too long to convert to text"),
])
def test_encode_refuses_what_is_not_plain(value, message):
    with pytest.raises(NotPlain) as caught:
        encode(10 ** 5000 if value == "huge" else value)
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
    assert call_row({"id": "t", "entry": "operator:add", "kind": "exact_table", "seed": 0,
                     "samples": [[1, 2], ["a", "b"]]}) == '{"id":"t","results":[{"value":3},{"value":"ab"}]}'
    assert call_row({"id": "b", "entry": "builtins:dict", "kind": "bound", "seed": 0,
                     "samples": [{"b": 2, "a": 1}]}) == '{"id":"b","results":[{"value":{"a":1,"b":2}}]}'
    assert call_row({"id": "i", "entry": "builtins:dict", "kind": "idempotent", "seed": 0, "args": ["k"],
                     "repeat": 3, "samples": [{"state": {"n": 1}, "kwargs": {"k": "x"}}]}) == (
        '{"id":"i","results":[{"value":[{"k":"x","n":1},{"k":"x","n":1},{"k":"x","n":1}]}]}')


def test_raising_and_unplain_results_are_per_sample():
    reply = json.loads(call_row({"id": "f", "entry": "builtins:float", "kind": "exact_table",
                                 "samples": [["nan"], ["1.5"], ["no"]]}))
    assert reply == {"id": "f", "results": [
        {"unplain": "result is nan, not a finite number"}, {"value": 1.5},
        {"raised": "ValueError: could not convert string to float: 'no'"}]}


def test_a_raised_message_is_cut_to_500_characters():
    reply = json.loads(call_row({"id": "l", "entry": "operator:getitem", "kind": "exact_table",
                                 "samples": [[{}, "x" * 1000]]}))
    assert reply["results"] == [{"raised": "KeyError: '" + "x" * 489}]


@pytest.mark.parametrize("request_, error", [
    ({"id": "m", "entry": "math:pi"}, "cannot load entry math:pi: TypeError: math:pi is not callable"),
    ({"id": "n", "entry": "no_such_mod_xyz:f"},
     "cannot load entry no_such_mod_xyz:f: ModuleNotFoundError: No module named 'no_such_mod_xyz'"),
    ({"id": "a", "entry": "math:no_such_fn"},
     "cannot load entry math:no_such_fn: AttributeError: module 'math' has no attribute 'no_such_fn'"),
    ({"id": "e"}, "cannot load entry None: KeyError: 'entry'"),
])
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
        reply = json.loads(call_row({"id": "r", "entry": "random:random", "kind": "exact_table", "seed": seed,
                                     "samples": [[], []]}))
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
        os.write(req_write, b'{"id":"a","entry":"operator:add","kind":"exact_table","samples":[[1,2]]}\n'
                            b'{"id":"b","entry":"operator:getitem","kind":"exact_table","samples":[[{"\\udcff":1},"\\udcff"]]}\n')
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
    tree = ast.parse(open(caller.__file__, encoding="utf-8").read())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert names == {"importlib", "json", "math", "os", "random", "sys", "typing"}
