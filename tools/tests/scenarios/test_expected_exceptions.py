"""Expected exceptions through the real caller and judge (docs/oracles.md, "Expected exceptions"):
a stored sample that says `raises` passes for code that raises that class or a subclass and fails,
saying what happened, for code that stops raising or raises another class; an `agrees` row with
`raises_agree` counts both sides raising the same class as agreement."""

from __future__ import annotations

import pytest

from tools.testing.rowrun import ReferenceBroken, calc, run_rows

HONEST = """
class ParseError(ValueError):
    pass

def parse(text):
    if not text:
        raise ParseError("empty")
    return int(text)
"""
TABLE_ROW = {"id": "parse_table", "entry": "shop.calc:parse", "kind": "exact_table", "blob": "oracles/blobs/p.json"}
TABLE_BLOB = {
    "oracles/blobs/p.json": [
        {"args": ["12"], "expected": 12},
        {"args": ["x"], "raises": "ValueError"},
        {"args": [""], "raises": "shop.calc:ParseError"},
    ]
}


def table_run(tmp_path, body):
    return run_rows(tmp_path, [TABLE_ROW], TABLE_BLOB, calc(body)).judged["parse_table"]


def test_honest_code_that_raises_the_class_or_a_subclass_passes(tmp_path):
    judged = table_run(tmp_path, HONEST)
    assert judged.ok, judged.reasons


@pytest.mark.parametrize(
    ("body", "reasons"),
    [
        (
            "def parse(text):\n    try:\n        return int(text)\n    except ValueError:\n        return 0\n",
            [
                "sample 1 (0-based): returned 0 instead of raising ValueError",
                "sample 2 (0-based): returned 0 instead of raising shop.calc:ParseError",
            ],
        ),
        (
            "def parse(text):\n    if not text:\n        raise KeyError(text)\n    return int(text)\n",
            ["sample 2 (0-based): raised KeyError: '', not shop.calc:ParseError or a subclass"],
        ),
        (
            "def parse(text):\n    return int(text)\n",
            [
                "sample 2 (0-based): raised ValueError: invalid literal for int() with base 10: '', not "
                "shop.calc:ParseError or a subclass"
            ],
        ),
    ],
)
def test_code_that_stops_raising_or_raises_another_class_fails_saying_what_happened(tmp_path, body, reasons):
    judged = table_run(tmp_path, body)
    assert not judged.ok and judged.reasons == reasons
    shown = judged.failing.shown[-1]
    assert shown.expected == "raises shop.calc:ParseError (or a subclass)"
    assert shown.inputs == '[""]'


def test_a_bound_sample_may_say_what_its_call_must_raise(tmp_path):
    row = {"id": "b", "entry": "shop.calc:parse", "kind": "bound", "min": 0, "max": 100, "blob": "oracles/blobs/b.json"}
    blob = {"oracles/blobs/b.json": [{"text": "7"}, {"text": "", "raises": "ValueError"}]}
    assert run_rows(tmp_path / "honest", [row], blob, calc(HONEST)).judged["b"].ok
    silent = "def parse(text):\n    return int(text or 0)\n"
    judged = run_rows(tmp_path / "silent", [row], blob, calc(silent)).judged["b"]
    assert judged.reasons == ["sample 1 (0-based): returned 0 instead of raising ValueError"]


REFERENCE = {
    "oracles/reference/ref.py": """
def parse(text):
    if not text.strip("0123456789") and text:
        return int(text)
    raise ValueError(text)
"""
}
AGREES_ROW = {
    "id": "parse_agrees",
    "entry": "shop.calc:parse",
    "kind": "agrees",
    "blob": "oracles/blobs/a.json",
    "reference": "oracles.reference.ref:parse",
    "raises_agree": True,
    "seed": 3,
    "generate": {"count": 30, "text": {"string": "12x", "len": [0, 3]}},
}
AGREES_BLOB = {"oracles/blobs/a.json": [{"text": "12"}, {"text": ""}]}
STRICT = HONEST.replace(
    "return int(text)", "if not text.isdigit():\n        raise ParseError(text)\n    return int(text)"
)


def agrees_run(tmp_path, body, row=AGREES_ROW):
    return run_rows(tmp_path, [row], AGREES_BLOB, calc(body), salt="s", references=REFERENCE).judged[row["id"]]


def test_raises_agree_counts_both_raising_the_same_class_as_agreement(tmp_path):
    judged = agrees_run(tmp_path, STRICT)
    assert judged.ok, judged.reasons


def test_raises_agree_fails_an_entry_that_returns_where_the_reference_raises(tmp_path):
    lenient = "def parse(text):\n    return int(text.strip('x') or 0)\n"
    judged = agrees_run(tmp_path, lenient)
    assert not judged.ok
    assert "sample 1 (0-based): returned 0 instead of raising ValueError" in judged.reasons


def test_without_raises_agree_a_raising_reference_is_a_broken_oracle(tmp_path):
    row = {k: v for k, v in AGREES_ROW.items() if k != "raises_agree"}
    with pytest.raises(ReferenceBroken, match=r"raised ValueError: .* on stored sample 1 \(0-based\)"):
        agrees_run(tmp_path, STRICT, row)
