"""toml_text.py: a row written as TOML reads back, through tomllib, as the same values."""

from __future__ import annotations

import tomllib

import pytest

from tools.oracle_gate.spec.toml_text import key_text, row_table, value_text


def test_a_row_with_every_value_type_reads_back_the_same():
    row = {
        "id": "a",
        "entry": "shop.calc:add",
        "kind": "bound",
        "min": -1,
        "max": 2.5,
        "args": ["x", "y"],
        "build": {"flags": "builtins:tuple", "odd key": "shop:Make"},
        "flag": True,
        "generate": {"count": 3, "x": {"int": [0, 9]}, "s": {"string": 'a"\\\n\t\x7f\x00', "len": [0, 3]}},
    }
    assert tomllib.loads(row_table(row))["invariant"] == [row]


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), object(), (1, 2)])
def test_a_value_toml_cannot_hold_is_refused(value):
    with pytest.raises(ValueError):
        value_text(value)


def test_keys_are_bare_only_when_toml_allows_it():
    assert key_text("count") == "count"
    assert key_text("a-b_1") == "a-b_1"
    assert key_text("a b") == '"a b"'
    assert key_text("é") == '"é"'
