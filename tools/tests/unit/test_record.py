"""record.py: the samples a recording tries, and the blob and table it makes of their results."""

from __future__ import annotations

import json

import pytest

from tools.oracle_gate.authoring import record
from tools.oracle_gate.errors import OracleError, UsageError
from tools.oracle_gate.git.tree import WorkTree
from tools.testing.gitrepo import GitRepo, oracle_toml

TABLE = {"id": "t", "entry": "shop.calc:half", "kind": "exact_table", "blob": "oracles/blobs/t.json"}
BOUND = {
    "id": "b",
    "entry": "shop.calc:half",
    "kind": "bound",
    "min": 0,
    "max": 3,
    "blob": "oracles/blobs/b.json",
    "generate": {"count": 4, "n": {"int": [0, 6]}},
}


def targets(tmp_path, rows, blobs, ids):
    repo = GitRepo(tmp_path / "repo")
    repo.write("oracles/shop.toml", oracle_toml(rows))
    for path, samples in blobs.items():
        repo.write(path, json.dumps(samples))
    return record.load_targets(WorkTree(str(repo.path)), ids, ["shop"])


def test_a_row_without_a_pin_is_loaded_with_its_blob_and_inputs_only_samples_get_a_placeholder(tmp_path):
    (target,) = targets(tmp_path, [TABLE], {"oracles/blobs/t.json": [{"args": [4]}]}, ["t"])
    assert (target.invariant.id, target.index, target.stored) == ("t", 0, [{"args": [4], "expected": None}])


@pytest.mark.parametrize(
    ("rows", "ids", "error", "message"),
    [
        ([TABLE], ["x"], UsageError, "no oracle row has the id 'x'"),
        ([TABLE], ["t", "t"], UsageError, "an ID is given twice"),
        ([dict(TABLE, blob=7)], ["t"], OracleError, "the blob `record` writes"),
        ([dict(TABLE, kind="nope")], ["t"], OracleError, "unknown kind"),
    ],
)
def test_what_load_targets_refuses(tmp_path, rows, ids, error, message):
    with pytest.raises(error, match=message):
        targets(tmp_path, rows, {}, ids)


def test_tried_samples_are_stored_then_drawn_then_boundary_without_repeats(tmp_path):
    (target,) = targets(tmp_path, [BOUND], {"oracles/blobs/b.json": [{"n": 6}, {"n": 6}]}, ["b"])
    tried = record.tried_samples(target, 3, "salt")
    origins = [origin for origin, _ in tried]
    assert origins[0] == "stored 0" and "stored 1" not in origins
    assert origins[1] == "generated" and origins[-1] == "boundary"
    assert {"n": -1} in [s for o, s in tried if o == "boundary"]
    assert len({json.dumps(s) for _, s in tried}) == len(tried)


def test_a_row_with_nothing_to_run_is_refused(tmp_path):
    (target,) = targets(tmp_path, [TABLE], {}, ["t"])
    with pytest.raises(OracleError, match="has no stored sample and no"):
        record.tried_samples(target, 10, "salt")


def reply(results):
    return {"id": "t", "reply": json.dumps({"id": "t", "results": results})}


def test_results_of_refuses_a_row_that_failed_as_a_whole(tmp_path):
    (target,) = targets(tmp_path, [TABLE], {"oracles/blobs/t.json": [{"args": [4]}]}, ["t"])
    with pytest.raises(OracleError, match="no caller action ran the row"):
        record.results_of(target, None, "main abc", 1)
    with pytest.raises(OracleError, match="time limit; raise the row's timeout_s"):
        record.results_of(target, {"id": "t", "error": "time limit"}, "main abc", 1)
    with pytest.raises(OracleError, match="cannot load shop.calc:half"):
        record.results_of(
            target, {"id": "t", "reply": json.dumps({"id": "t", "error": "cannot load shop.calc:half"})}, "m", 1
        )
    with pytest.raises(OracleError, match="one result per sample"):
        record.results_of(target, reply([]), "main abc", 1)
    assert record.results_of(target, reply([{"value": 2}]), "main abc", 1) == [{"value": 2}]


def test_an_exact_table_records_values_and_exceptions_and_marks_what_changed(tmp_path):
    blob = [{"args": [4], "expected": 1}, {"args": [2], "expected": 1}, {"args": [-1]}]
    (target,) = targets(tmp_path, [TABLE], {"oracles/blob/t.json": [], "oracles/blobs/t.json": blob}, ["t"])
    tried = record.tried_samples(target, 0, "s")
    raised = {"raised": "ValueError: negative", "classes": ["builtins:ValueError", "builtins:Exception"]}
    out = record.recorded(target, tried, [{"value": 2}, {"value": 1}, raised], "s")
    assert out.samples == [
        {"args": [4], "expected": 2},
        {"args": [2], "expected": 1},
        {"args": [-1], "raises": "ValueError"},
    ]
    assert [line.mark for line in out.lines] == [record.CHANGED, record.KEPT, record.NEW]
    with pytest.raises(OracleError, match="give the row a `project`"):
        record.recorded(target, tried, [{"value": 2}, {"unplain": "a set"}, raised], "s")


def test_a_bound_row_keeps_the_samples_the_approved_code_passes(tmp_path):
    (target,) = targets(tmp_path, [BOUND], {"oracles/blobs/b.json": [{"n": 2}, {"n": 9}]}, ["b"])
    tried = [("stored 0", {"n": 2}), ("stored 1", {"n": 9}), ("generated", {"n": 5})]
    out = record.recorded(target, tried, [{"value": 1}, {"value": 4}, {"value": 2}], "s")
    assert out.samples == [{"n": 2}, {"n": 5}]
    assert [line.mark for line in out.lines] == [record.KEPT, record.LEFT_OUT, record.NEW]
    assert "the approved code fails the row here" in out.lines[1].note


SOURCE = """\
from enum import Enum


class Mode(Enum):
    A = 1


def half(n: int, flag: bool = False) -> int:
    return n // 2


def moded(m: Mode) -> int:
    return 1


class Box:
    def get(self, n: int) -> int:
        return n
"""


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("shop.calc:half", None),
        ("shop.calc:moded", "its parameters need builders the row does not name (m)"),
        ("shop.calc:Box.get", "its entry is a method"),
        ("shop.calc:gone", "shop.calc:gone is no module-level function at the recorded commit"),
        ("shop.other:half", "no file of shop.other at the recorded commit"),
    ],
)
def test_an_exact_table_row_draws_from_its_entrys_annotations(tmp_path, entry, expected):
    (target,) = targets(tmp_path, [dict(TABLE, entry=entry)], {"oracles/blobs/t.json": [{"args": [1, True]}]}, ["t"])
    spec = record.annotated_generate(target, {"shop/calc.py": SOURCE})
    if expected is None:
        assert not isinstance(spec, str)
        assert spec.packed == ("n", "flag")
    else:
        assert isinstance(spec, str) and spec.startswith(expected)


def test_module_paths_cover_a_src_layout_and_packages():
    assert record.module_paths("shop.calc") == [
        "shop/calc.py",
        "shop/calc/__init__.py",
        "src/shop/calc.py",
        "src/shop/calc/__init__.py",
    ]


def test_a_back_to_back_row_keeps_every_input_a_raise_included(tmp_path):
    row = dict(BOUND, kind="back_to_back")
    del row["min"], row["max"]
    (target,) = targets(tmp_path, [row], {}, ["b"])
    tried = [("generated", {"n": 2}), ("boundary", {"n": -1})]
    raised_result = {"raised": "ValueError: negative", "classes": ["builtins:ValueError", "builtins:Exception"]}
    out = record.recorded(target, tried, [{"value": 1}, raised_result], "s")
    assert out.samples == [{"n": 2}, {"n": -1}]
    assert [(line.mark, line.result) for line in out.lines] == [(record.NEW, "1"), (record.NEW, "raises ValueError")]
