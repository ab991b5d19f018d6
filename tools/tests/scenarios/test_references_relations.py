"""Reference rows, `matches` and the relations between calls: right and wrong functions, memorised
answers, broken references, and the trivial functions each relation admits (docs/oracles.md)."""

from __future__ import annotations

import pytest

from tools.testing.rowrun import ReferenceBroken, calc, run_rows

HALF_EVEN = {
    "oracles/reference/ref.py": """
from fractions import Fraction

def tax(amount, rate):
    return round(Fraction(amount) * Fraction(rate))
"""
}
RIGHT_TAX = """
from decimal import Decimal, ROUND_HALF_EVEN
def tax(amount, rate):
    return int((Decimal(amount) * Decimal(rate)).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
"""
TAX_ROW = {
    "id": "row",
    "entry": "shop.calc:tax",
    "kind": "exact_table",
    "blob": "oracles/blobs/t.json",
    "seed": 5,
    "reference": "oracles.reference.ref:tax",
    "args_names": ["amount", "rate"],
    "generate": {"count": 40, "amount": {"int": [0, 10_000]}, "rate": {"choice": ["0.5", "0.25", "0.125"]}},
}
TAX_BLOB = {
    "oracles/blobs/t.json": [
        {"args": [1, "0.5"], "expected": 0},
        {"args": [3, "0.5"], "expected": 2},
        {"args": [10, "0.25"], "expected": 2},
    ]
}


def tax_run(tmp_path, body, references=HALF_EVEN, row=TAX_ROW, salt="s1"):
    return run_rows(tmp_path, [row], TAX_BLOB, calc(body), salt=salt, references=references).judged["row"]


def test_a_reference_row_passes_the_right_function(tmp_path):
    judged = tax_run(tmp_path, RIGHT_TAX)
    assert judged.ok, judged.reasons


@pytest.mark.parametrize("salt", ["s1", "another"])
def test_answers_memorised_for_every_stored_sample_fail_on_fresh_samples(tmp_path, salt):
    memorised = (
        "KNOWN = {(1, '0.5'): 0, (3, '0.5'): 2, (10, '0.25'): 2}\ndef tax(amount, rate):\n"
        "    return KNOWN.get((amount, rate), int(amount * float(rate) + 0.5))\n"
    )
    stored = run_rows(
        tmp_path / "stored",
        [{k: v for k, v in TAX_ROW.items() if k not in ("reference", "generate", "args_names")}],
        TAX_BLOB,
        calc(memorised),
    ).judged["row"]
    assert stored.ok  # the stored samples alone are passed by memorised answers
    judged = tax_run(tmp_path / "fresh", memorised, salt=salt)
    assert not judged.ok
    assert all(r.startswith("generated sample") for r in judged.reasons)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("def tax(amount, rate):\n    raise ValueError('no')\n", "raised ValueError: no on generated sample 0"),
        ("def tax(amount, rate):\n    return float('nan')\n", "returned a value that is not plain JSON"),
        ("class Sly(int):\n    pass\ndef tax(amount, rate):\n    return Sly(1)\n", "not a plain JSON-typed value"),
        ("def tax(amount, rate):\n    return object()\n", "not a plain JSON-typed value"),
        ("import time\ndef tax(amount, rate):\n    time.sleep(60)\n", "timed out"),
        ("import sys\ndef tax(amount, rate):\n    sys.exit(3)\n", "SystemExit"),
        ("def taxes(amount, rate):\n    return 0\n", "cannot load entry oracles.reference.ref:tax"),
    ],
)
def test_a_broken_reference_is_an_invalid_oracle_in_one_line(tmp_path, body, why):
    row = dict(TAX_ROW, timeout_s=2)
    with pytest.raises(ReferenceBroken) as raised:
        tax_run(tmp_path, RIGHT_TAX, references={"oracles/reference/ref.py": body}, row=row)
    lines = raised.value.args[0]
    assert len(lines) == 1 and lines[0].startswith(
        "oracles/shop.toml: row row: field reference: the reference oracles.reference.ref:tax "
    )
    assert why in lines[0] and lines[0].endswith("the oracle is broken, not the change"), lines[0]


def test_a_slow_reference_within_its_time_limit_is_fine(tmp_path):
    slow = dict(HALF_EVEN)
    slow["oracles/reference/ref.py"] += (
        "\nimport time\n_tax = tax\ndef tax(amount, rate):\n    time.sleep(0.01)\n    return _tax(amount, rate)\n"
    )
    assert tax_run(tmp_path, RIGHT_TAX, references=slow).ok


def test_production_code_cannot_import_the_reference(tmp_path):
    cheat = "def tax(amount, rate):\n    from oracles.reference import ref\n    return ref.tax(amount, rate)\n"
    judged = tax_run(tmp_path, cheat)
    assert not judged.ok and "No module named 'oracles'" in judged.reasons[0]


def agrees_row(**fields):
    return {
        "id": "row",
        "entry": "shop.calc:tax",
        "kind": "agrees",
        "reference": "oracles.reference.ref:tax",
        "blob": "oracles/blobs/a.json",
        "seed": 2,
        "generate": {"count": 30, "amount": {"int": [0, 1000]}, "rate": {"choice": ["0.5", "0.125"]}},
        **fields,
    }


def test_agrees_judges_stored_inputs_and_fresh_samples_by_the_reference(tmp_path):
    blobs = {"oracles/blobs/a.json": [{"amount": 5, "rate": "0.5"}]}
    assert (
        run_rows(tmp_path / "r", [agrees_row()], blobs, calc(RIGHT_TAX), salt="x", references=HALF_EVEN)
        .judged["row"]
        .ok
    )
    up = RIGHT_TAX.replace("ROUND_HALF_EVEN", "ROUND_HALF_UP")
    wrong = run_rows(tmp_path / "w", [agrees_row()], blobs, calc(up), salt="x", references=HALF_EVEN).judged["row"]
    assert not wrong.ok and wrong.reasons[0] == "sample 0 (0-based): result 3 != expected 2"


def matches_row(pattern="[a-z0-9]+(?:-[a-z0-9]+)*", project=None):
    row = {
        "id": "row",
        "entry": "shop.calc:slug",
        "kind": "matches",
        "pattern": pattern,
        "blob": "oracles/blobs/m.json",
        "seed": 1,
        "generate": {"count": 30, "text": {"string": "Ab c-D9 ", "len": [1, 20]}},
    }
    return [dict(row, project=project) if project else row]


SLUG = "import re\ndef slug(text):\n    return '-'.join(re.findall('[a-z0-9]+', text.lower())) or 'x'\n"


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        (SLUG, True),
        (SLUG.replace("'-'.join", "' '.join"), False),  # a space is not in the pattern
        ("def slug(text):\n    return text\n", False),  # uppercase letters fail the full match
        ("def slug(text):\n    return len(text)\n", False),  # not a str
        ("class S(str):\n    pass\ndef slug(text):\n    return S('ok')\n", False),
    ],
)
def test_matches_is_a_full_match_of_a_str_result(tmp_path, body, ok):
    blobs = {"oracles/blobs/m.json": [{"text": "Hello World"}]}
    assert run_rows(tmp_path, matches_row(), blobs, calc(body), salt="m").judged["row"].ok is ok


def test_a_prefix_match_is_not_enough(tmp_path):
    blobs = {"oracles/blobs/m.json": [{"text": "x"}]}
    judged = run_rows(tmp_path, matches_row("[a-z]"), blobs, calc("def slug(text):\n    return 'ab'\n")).judged["row"]
    assert not judged.ok and "does not match the pattern" in judged.reasons[0]


ROUND_TRIP = [
    {
        "id": "row",
        "entry": "shop.calc:fmt",
        "kind": "round_trip",
        "inverse": "shop.calc:parse",
        "blob": "oracles/blobs/r.json",
        "seed": 4,
        "generate": {"count": 40, "cents": {"int": [0, 10**12]}},
    }
]
RT_BLOB = {"oracles/blobs/r.json": [{"cents": 5}, {"cents": 1234}]}
FMT = "def fmt(cents):\n    return f'{cents // 100}.{cents % 100:02d}'\n"
PARSE = "def parse(text):\n    units, rest = text.split('.')\n    return int(units) * 100 + int(rest)\n"


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        (FMT + PARSE, True),
        (FMT.replace("cents % 100", "cents % 10") + PARSE, False),  # 1234 -> "12.04"
        ("def fmt(cents):\n    return cents\ndef parse(x):\n    return x\n", True),  # identities are admitted
        ("def fmt(cents):\n    return 'x'\ndef parse(x):\n    return 0\n", False),  # a constant is not
        (FMT + "def parse(text):\n    return float(text) * 100\n", False),  # 1234 != 1234.0, strictly
    ],
)
def test_round_trip(tmp_path, body, ok):
    assert run_rows(tmp_path, ROUND_TRIP, RT_BLOB, calc(body), salt="r").judged["row"].ok is ok


MONO = [
    {
        "id": "row",
        "entry": "shop.calc:total",
        "kind": "monotonic",
        "over": "discount",
        "direction": "non_increasing",
        "blob": "oracles/blobs/o.json",
        "seed": 9,
        "generate": {"count": 30, "price": {"int": [0, 1000]}, "discount": {"list": {"int": [0, 2000]}, "len": [2, 5]}},
    }
]
MONO_BLOB = {"oracles/blobs/o.json": [{"price": 100, "discount": [50, 0, 100]}]}


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("def total(price, discount):\n    return max(price - discount, 0)\n", True),
        ("def total(price, discount):\n    return abs(price - discount)\n", False),
        ("def total(price, discount):\n    return 7\n", True),  # a constant is admitted
        ("def total(price, discount):\n    return str(price - discount)\n", False),  # mixed: not numbers
    ],
)
def test_monotonic(tmp_path, body, ok):
    assert run_rows(tmp_path, MONO, MONO_BLOB, calc(body), salt="o").judged["row"].ok is ok


def test_monotonic_calls_the_entry_once_per_value_in_ascending_order(tmp_path):
    body = (
        "SEEN = []\ndef total(price, discount):\n    SEEN.append(discount)\n    "
        "return -discount if SEEN == sorted(SEEN) else 0\n"
    )
    judged = run_rows(tmp_path, [{k: v for k, v in MONO[0].items() if k != "generate"}], MONO_BLOB, calc(body)).judged[
        "row"
    ]
    assert judged.ok, judged.reasons


ANTI = [
    {
        "id": "row",
        "entry": "shop.calc:cmp",
        "kind": "antisymmetric",
        "args_names": ["a", "b"],
        "blob": "oracles/blobs/s.json",
        "seed": 8,
        "generate": {"count": 30, "a": {"int": [0, 5]}, "b": {"int": [0, 5]}},
    }
]
ANTI_BLOB = {"oracles/blobs/s.json": [{"a": 1, "b": 2}]}


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("def cmp(a, b):\n    return (a > b) - (a < b)\n", True),
        ("def cmp(a, b):\n    return 1 if a >= b else -1\n", False),  # cmp(a, a) is 1
        ("def cmp(a, b):\n    return 0\n", True),  # the constant 0 is admitted
        ("def cmp(a, b):\n    return float((a > b) - (a < b)) if a < b else (a > b) - (a < b)\n", False),
        ("def cmp(a, b):\n    return a < b\n", False),  # bool is not a number
    ],
)
def test_antisymmetric(tmp_path, body, ok):
    assert run_rows(tmp_path, ANTI, ANTI_BLOB, calc(body), salt="a").judged["row"].ok is ok


def test_composed_feeds_each_result_to_the_next_and_judges_the_last(tmp_path):
    rows = [
        {
            "id": "row",
            "kind": "composed",
            "entries": ["shop.calc:fmt", "shop.calc:parse", "shop.calc:half"],
            "min": 0,
            "max": 10**12,
            "blob": "oracles/blobs/r.json",
            "seed": 1,
            "generate": {"count": 20, "cents": {"int": [0, 10**12]}},
        }
    ]
    good = FMT + PARSE + "def half(c):\n    return c // 2\n"
    assert run_rows(tmp_path / "g", rows, RT_BLOB, calc(good), salt="c").judged["row"].ok
    bad = FMT + PARSE + "def half(c):\n    return c - 10**11\n"
    assert not run_rows(tmp_path / "b", rows, RT_BLOB, calc(bad), salt="c").judged["row"].ok
    ref = {"oracles/reference/ref.py": "def chain(cents):\n    return cents // 2\n"}
    exact = [
        dict({k: v for k, v in rows[0].items() if k not in ("min", "max")}, reference="oracles.reference.ref:chain")
    ]
    assert run_rows(tmp_path / "r", exact, RT_BLOB, calc(good), salt="c", references=ref).judged["row"].ok
    off = FMT + PARSE + "def half(c):\n    return (c + 1) // 2\n"
    assert not run_rows(tmp_path / "o", exact, RT_BLOB, calc(off), salt="c", references=ref).judged["row"].ok
