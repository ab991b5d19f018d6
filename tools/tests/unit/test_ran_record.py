"""Unit tests of spec/ran_record.py: the coverage record a reply may carry, as the judge accepts it and
writes it back."""

from __future__ import annotations

import pytest

from tools.oracle_gate.spec.ran_record import (
    MAX_NAME_CHARS,
    MAX_RAN_FUNCTIONS,
    parse_ran_text,
    ran_record,
    ran_text,
    valid_name,
)


@pytest.mark.parametrize(
    "name",
    [
        "shop:f",
        "shop.calc:add",
        "shop.calc:Cart.total",
        "shop.calc:outer.<locals>.inner",
        "shop.calc:outer.<locals>.K.method",
        "caf\u00e9.m:\u00fcber",
        "shop:" + "f" * (MAX_NAME_CHARS - 5),
    ],
)
def test_valid_names_are_module_colon_qualname(name):
    assert valid_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "shop",
        "shop.calc.add",
        ":f",
        "shop:",
        "shop::f",
        "shop:a:b",
        ".shop:f",
        "shop.:f",
        "shop:f.",
        "shop:<lambda>",
        "shop:f.<listcomp>",
        "shop:<locals>.f",
        "shop:f.<locals>",
        "sh op:f",
        "shop:f g",
        "shop:f\n",
        "1shop:f",
        "shop:1f",
        "shop:" + "f" * (MAX_NAME_CHARS - 4),
        None,
        7,
        ["shop:f"],
    ],
)
def test_anything_else_is_not_a_name(name):
    assert not valid_name(name)


def test_a_record_is_a_list_of_names_sorted_without_duplicates():
    assert ran_record(["b:g", "a:f", "b:g"]) == ("a:f", "b:g")
    assert ran_record([]) == ()
    assert ran_record(["a:f"] * MAX_RAN_FUNCTIONS) == ("a:f",)


@pytest.mark.parametrize(
    "value", [None, "a:f", {"a:f": 1}, ("a:f",), ["a:f", "bad"], ["a:f"] * (MAX_RAN_FUNCTIONS + 1)]
)
def test_any_other_value_is_no_record(value):
    assert ran_record(value) is None


def test_the_property_text_round_trips_and_any_other_text_is_no_record():
    names = ("shop.calc:Cart.total", "shop.calc:add")
    assert ran_text(names) == "shop.calc:Cart.total shop.calc:add"
    assert parse_ran_text(ran_text(names)) == names
    assert parse_ran_text("") == ()
    assert parse_ran_text(None) is None
    for text in ("shop:f  shop:g", " shop:f", "shop:f\tshop:g", "shop:f shop:<lambda>"):
        assert parse_ran_text(text) is None
