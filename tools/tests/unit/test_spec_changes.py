"""spec_changes.py: the row-by-row report of an oracle change, its marks, and the changelog rule."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from tools.oracle_gate.spec.generate import GenerateSpec
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.suite.spec_changes import added_lines, changelog_violations, report_lines, spec_changes

ROW = Invariant(
    id="sum_in_range",
    entry="shop.calc:add",
    kind="bound",
    blob="oracles/blobs/b.json",
    blob_sha256="a" * 64,
    source="oracles/shop.toml",
    seed=1,
    min=0,
    max=100,
)
TABLE = Invariant(
    id="add_table",
    entry="shop.calc:add",
    kind="exact_table",
    blob="oracles/blobs/t.json",
    blob_sha256="b" * 64,
    source="oracles/shop.toml",
)


def oracles(*rows: Invariant) -> SimpleNamespace:
    return SimpleNamespace(invariants=list(rows), retired={})


@pytest.mark.parametrize(
    ("change", "marks"),
    [
        ({"min": -1}, ("bound widened",)),
        ({"max": 101}, ("bound widened",)),
        ({"min": 1, "max": 99}, ("bound narrowed",)),
        ({"min": -1, "max": 50}, ("bound widened",)),  # wider on one side counts as widened
        ({"entry": "shop.calc:plus"}, ("entry renamed",)),
        ({"seed": 2}, ("seed retargeted",)),
        ({"blob": "oracles/blobs/c.json", "blob_sha256": "c" * 64}, ("blob retargeted",)),
        ({"blob_sha256": "c" * 64}, ("blob content changed",)),
        ({"kind": "exact_table", "min": None, "max": None}, ("kind changed",)),
        ({"timeout_s": 5.0}, ()),
    ],
)
def test_each_field_change_is_listed_and_marked(change, marks):
    [row] = spec_changes(oracles(ROW), oracles(replace(ROW, **change)))
    assert row.status == "changed" and row.marks == marks
    assert {f.field for f in row.fields} == set(change)


def test_generated_samples_fewer_or_other():
    spec = GenerateSpec(count=9, fields=())
    fewer = spec_changes(oracles(replace(ROW, generate=spec)), oracles(replace(ROW, generate=GenerateSpec(2, ()))))
    assert fewer[0].marks == ("fewer generated samples",) and fewer[0].weakens
    gone = spec_changes(oracles(replace(ROW, generate=spec)), oracles(ROW))
    assert gone[0].marks == ("fewer generated samples",) and gone[0].fields[0].new == "-"
    more = spec_changes(oracles(ROW), oracles(replace(ROW, generate=spec)))
    assert more[0].marks == ("generated samples changed",) and not more[0].weakens


def test_added_and_removed_rows_and_the_text_report():
    changes = spec_changes(oracles(ROW, TABLE), oracles(replace(ROW, max=200), replace(TABLE, id="add_table_v2")))
    assert [(c.id, c.status) for c in changes] == [
        ("sum_in_range", "changed"),
        ("add_table_v2", "added"),
        ("add_table", "removed"),
    ]
    assert report_lines(changes) == [
        "  ~ sum_in_range (bound) in oracles/shop.toml  [bound widened]",
        "      max: 100 -> 200",
        "  + add_table_v2 (exact_table) in oracles/shop.toml  [row added]",
        "  - add_table (exact_table) from oracles/shop.toml  [row removed]",
    ]


def test_an_unchanged_spec_has_no_report():
    assert spec_changes(oracles(ROW, TABLE), oracles(TABLE, ROW)) == []


def test_added_lines_count_repeated_lines():
    assert added_lines("a\nb\n", "a\nb\nb\nc\n") == ["b", "c"]
    assert added_lines(None, "x\n") == ["x"] and added_lines("x\n", None) == []


def test_the_changelog_must_name_each_weakened_id_in_an_added_line():
    changes = spec_changes(oracles(ROW, TABLE), oracles(replace(ROW, max=200)))
    missing = changelog_violations(changes, "- sum_in_range: old entry\n", "- sum_in_range: old entry\n")
    assert sorted(v.id for v in missing) == ["add_table", "sum_in_range"]  # an old line does not count
    assert all(v.code == 5 and v.path == "oracles/CHANGELOG.md" for v in missing)
    assert changelog_violations(changes, None, "* sum_in_range, add_table: see ticket 12\n") == []
    assert [v.id for v in changelog_violations(changes, None, "- xsum_in_range and add_tables\n")] == [
        "sum_in_range",
        "add_table",
    ]


def test_a_changed_blob_gets_its_samples_compared_and_a_changed_answer_weakens():
    import json

    old_row = TABLE
    new_row = replace(TABLE, blob_sha256="c" * 64)
    old_blob = json.dumps([{"args": [1], "expected": 1}]).encode()
    new_blob = json.dumps([{"args": [1], "expected": 2}]).encode()
    found = spec_changes(oracles(old_row), oracles(new_row), lambda p: old_blob, lambda p: new_blob)
    assert found[0].marks[-1] == "expected value changed" and found[0].weakens
    assert found[0].samples is not None and found[0].samples.changed_count == 1
    broken = spec_changes(oracles(old_row), oracles(new_row), lambda p: None, lambda p: new_blob)
    assert broken[0].samples.summary().startswith("not compared: the base's blob ")
    assert not broken[0].weakens


def test_a_kind_change_and_a_composed_rows_wider_bounds_weaken_the_claim():
    [kind] = spec_changes(oracles(TABLE), oracles(replace(TABLE, kind="agrees", reference="oracles.reference.r:f")))
    assert "kind changed" in kind.marks and kind.weakens
    composed = replace(ROW, kind="composed", entries=("shop.calc:add", "shop.calc:neg"))
    [wide] = spec_changes(oracles(composed), oracles(replace(composed, max=10**9)))
    assert wide.marks == ("bound widened",) and wide.weakens


def test_a_change_under_oracles_reference_marks_every_row_with_a_reference():
    from tools.oracle_gate.suite.spec_changes import with_reference_code

    ref = replace(TABLE, reference="oracles.reference.r:add")
    found = with_reference_code([], oracles(ROW, ref), ["oracles/reference/helpers.py", "billing/x.py"])
    assert [(c.id, c.marks, c.fields[0].new) for c in found] == [
        ("add_table", ("reference code changed",), "oracles/reference/helpers.py")
    ]
    assert found[0].weakens
    assert with_reference_code([], oracles(ROW, ref), ["billing/x.py"]) == []
    # A row the change adds, with its reference, makes no earlier claim: no mark, no changelog line.
    [added] = spec_changes(oracles(ROW), oracles(ROW, ref))
    assert with_reference_code([added], oracles(ROW, ref), ["oracles/reference/r.py"]) == [added]
    assert added.marks == ("row added",) and not added.weakens


def test_a_changed_raises_and_raises_agree_turned_on_weaken_the_claim():
    import json

    new_row = replace(ROW, blob_sha256="c" * 64)
    old_blob = json.dumps([{"a": 1, "raises": "ValueError"}]).encode()
    new_blob = json.dumps([{"a": 1, "raises": "Exception"}]).encode()
    [found] = spec_changes(oracles(ROW), oracles(new_row), lambda p: old_blob, lambda p: new_blob)
    assert found.marks[-1] == "expected value changed" and found.weakens
    agrees = Invariant(
        id="p",
        entry="shop.calc:p",
        kind="agrees",
        blob="oracles/blobs/p.json",
        blob_sha256="d" * 64,
        source="oracles/shop.toml",
        reference="oracles.reference.r:p",
    )
    [turned_on] = spec_changes(oracles(agrees), oracles(replace(agrees, raises_agree=True)))
    assert turned_on.marks == ("raises agree",) and turned_on.weakens
    assert [(f.field, f.old, f.new) for f in turned_on.fields] == [("raises_agree", "False", "True")]
    [turned_off] = spec_changes(oracles(replace(agrees, raises_agree=True)), oracles(agrees))
    assert turned_off.marks == () and not turned_off.weakens
