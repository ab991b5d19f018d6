"""killing.py: `vacuity --suggest`'s candidate inputs, the search for the first one on which a
mutant and the code as it is differ (with a fake row runner), the candidate blob and its pins, and
the check that the production packages are the base tip's."""

from __future__ import annotations

import hashlib
import json
import tomllib
from typing import Any

import pytest

from tools.oracle_gate.authoring import killing
from tools.oracle_gate.authoring.killing import (
    Hints,
    base_difference,
    candidate_files,
    draw_candidates,
    edits,
    first_difference,
    killing_sample,
    row_results,
    sample_edits,
    suggest_row,
)
from tools.oracle_gate.authoring.vacuity import Mutant, constants
from tools.oracle_gate.spec.samples import check_sample, load_samples
from tools.oracle_gate.spec.schema import Invariant, parse_oracle
from tools.testing.gitrepo import GitRepo, oracle_toml

PIN = "0" * 64


def row(**fields: Any) -> Invariant:
    """One valid row of `oracles/shop.toml`, from `fields` over an exact_table row of shop.calc:add."""
    spec: dict[str, Any] = {
        "id": "add_table",
        "entry": "shop.calc:add",
        "kind": "exact_table",
        "blob": "oracles/blobs/table.json",
        "blob_sha256": PIN,
    }
    spec.update(fields)
    parsed = parse_oracle(oracle_toml([spec]).encode(), "oracles/shop.toml")
    assert not parsed.problems, parsed.problems
    return parsed.invariants[0]


def test_one_edit_of_each_kind_of_value():
    assert list(edits(5)) == [6, 4, 0, -1, 1, -5]
    assert list(edits(5, (10, 2.5, "x"))) == [6, 4, 0, -1, 1, -5, 10, 9, 11]  # an int takes the int constants
    assert list(edits(1.5, (10,))) == [2.5, 0.5, 0.0, -1.0, 1.0, -1.5, 10.0, 9.0, 11.0]
    assert list(edits(True)) == [False]
    assert list(edits("ab", ("k", 3))) == ["", "a", "abb", "k"]
    assert list(edits([1]))[:3] == [[], [], [1, 1]] and [2] in list(edits([1]))
    assert {"n": 2} in list(edits({"n": 1}))
    assert list(edits({"callable": "builtins:int"})) == [] and list(edits(None)) == []


def test_a_table_sample_edits_its_args_in_place_and_never_its_expected_value():
    inv = row(args_names=["a", "b"])
    found = list(sample_edits(inv, {"args": [1, 2], "expected": 3}, Hints({0: (0, 9)})))
    assert all(len(s["args"]) == 2 and s["expected"] == 3 for s in found)
    assert {"args": [9, 2], "expected": 3} in found and {"args": [1, 3], "expected": 3} in found


def test_candidates_are_deterministic_valid_distinct_and_start_with_the_stored_samples():
    inv = row(kind="bound", min=0, max=10, blob="oracles/blobs/bound.json")
    stored = [{"a": 1, "b": 2}, {"a": 0, "b": 0}]
    first = draw_candidates(inv, stored, 40, 7, constants=(5,))
    assert first == draw_candidates(inv, stored, 40, 7, constants=(5,))
    assert first[:2] == stored and len(first) == 40
    keys = [json.dumps(c, sort_keys=True) for c in first]
    assert len(set(keys)) == len(keys)
    assert {"a": 5, "b": 2} in first and {"a": 6, "b": 2} in first  # at the entry's constant and next to it
    for index, candidate in enumerate(first):
        check_sample(inv, index, candidate)
    assert len(draw_candidates(inv, stored, 3, 7)) == 3


def test_a_generating_row_draws_from_its_own_generators_with_the_seed():
    inv = row(
        kind="bound",
        min=0,
        max=10,
        blob="oracles/blobs/bound.json",
        generate={"count": 2, "a": {"int": [100, 200]}, "b": {"int": [100, 200]}},
    )
    stored = [{"a": 1, "b": 2}]
    one, other = draw_candidates(inv, stored, 30, 1), draw_candidates(inv, stored, 30, 2)
    drawn = [c for c in one if c["a"] >= 100 and c["b"] >= 100]
    assert len(drawn) >= 10 and drawn != [c for c in other if c["a"] >= 100 and c["b"] >= 100]
    assert {"a": 200, "b": 2} in one  # the generator's bound


def test_candidates_invalid_for_a_row_sharing_the_blob_are_left_out():
    inv = row(kind="monotonic", over="xs", direction="non_decreasing", blob="oracles/blobs/m.json")
    found = draw_candidates(inv, [{"xs": [1, 2]}], 50, 0)
    assert found and all(len(c["xs"]) >= 2 for c in found)  # `over` keeps two values


def test_first_difference_skips_a_sample_the_code_raises_on():
    base = [{"value": 1}, {"raised": "ValueError: no"}, {"value": 3}, {"value": 4}]
    assert first_difference(base, [{"value": 1}, {"value": 0}, {"value": 3}, {"value": 5}], 4) == 3
    assert first_difference(base, [{"value": 1}, {"value": 0}, {"raised": "KeyError: x"}, {"value": 4}], 4) == 2
    assert first_difference(base, [{"value": 1}, {"value": 0}, {"value": 3}, {"value": 5}], 3) is None
    assert first_difference([{"value": 1}], [{"value": 1.0}], 1) == 0  # types count, as the judge's


def test_a_killing_sample_is_in_the_rows_blob_shape():
    table = row()
    assert killing_sample(table, {"args": [6, 2], "expected": None}, 8) == {"args": [6, 2], "expected": 8}
    bound = row(kind="bound", min=0, max=10, blob="oracles/blobs/bound.json")
    assert killing_sample(bound, {"a": 6, "b": 2}, 8) == {"a": 6, "b": 2}


def test_the_candidate_blob_is_pinned_in_every_row_that_names_it():
    rows = [
        {
            "id": "one",
            "entry": "shop.calc:add",
            "kind": "exact_table",
            "blob": "oracles/blobs/t.json",
            "blob_sha256": PIN,
        },
        {
            "id": "two",
            "entry": "shop.calc:add",
            "kind": "exact_table",
            "blob": "oracles/blobs/u.json",
            "blob_sha256": PIN,
        },
        {
            "id": "three",
            "entry": "shop.calc:add",
            "kind": "exact_table",
            "blob": "oracles/blobs/t.json",
            "blob_sha256": PIN,
        },
    ]
    text = ("# demo\n" + oracle_toml(rows)).encode()
    inv = parse_oracle(text, "oracles/shop.toml").invariants[0]
    files = candidate_files(
        inv, [{"args": [1, 2], "expected": None}], {"oracles/shop.toml": text, "oracles/x.toml": b""}
    )
    digest = hashlib.sha256(files["oracles/blobs/t.json"].encode()).hexdigest()
    pins = [r["blob_sha256"] for r in tomllib.loads(files["oracles/shop.toml"])["invariant"]]
    assert pins == [digest, PIN, digest] and set(files) == {"oracles/blobs/t.json", "oracles/shop.toml"}
    assert files["oracles/shop.toml"].startswith("# demo\n")
    assert load_samples(files["oracles/blobs/t.json"].encode()) == [{"args": [1, 2], "expected": None}]


def test_row_results_read_the_rows_reply_or_say_why_there_is_none():
    reply = json.dumps({"id": "r", "results": [{"value": 1}]})
    assert row_results({"rows": [{"id": "r", "reply": reply}]}, "r") == [{"value": 1}]
    assert row_results({"rows": [{"id": "r", "error": "timed out"}]}, "r") == "timed out"
    assert row_results({"rows": [{"id": "r", "reply": json.dumps({"id": "r", "error": "boom"})}]}, "r") == "boom"
    assert row_results(None, "r").startswith("the caller wrote no observations")
    assert row_results({"rows": []}, "r") == "the caller did not run the row"


class FakeRunner:
    """A row runner that calls `base` (or `mutant`, when the entry's module is in the files) on the
    blob's samples as written in `files`; records the files of each call."""

    def __init__(self, inv: Invariant, base: Any, mutant: Any) -> None:
        self.inv, self.base, self.mutant, self.calls = inv, base, mutant, []

    def observe(self, source: str, salt: str, files: dict[str, str]) -> Any:
        self.calls.append(files)
        fn = self.mutant if "shop/calc.py" in files else self.base
        samples = load_samples(files[self.inv.blob].encode())
        if fn is None:
            return None
        results = []
        for sample in samples:
            try:
                results.append({"value": fn(*sample["args"])})
            except ZeroDivisionError as exc:
                results.append({"raised": f"ZeroDivisionError: {exc}"})
        return {"rows": [{"id": self.inv.id, "reply": json.dumps({"id": self.inv.id, "results": results})}]}


@pytest.fixture
def shop(tmp_path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "calc.py").write_text(
        "def add(a, b):\n    if a > 5:\n        return a + b\n    return b + a\n"
    )
    return tmp_path


MUTANT = Mutant(3, "Add -> Sub", "def add(a, b):\n    if a > 5:\n        return a - b\n    return b + a\n")


def test_the_first_candidate_on_which_they_differ_kills_the_mutant(shop):
    inv = row(args_names=["a", "b"])
    runner = FakeRunner(inv, lambda a, b: a + b, lambda a, b: a - b if a > 5 else a + b)
    text = oracle_toml(
        [{"id": inv.id, "entry": inv.entry, "kind": "exact_table", "blob": inv.blob, "blob_sha256": PIN}]
    )
    found = suggest_row(
        str(shop), inv, [{"args": [1, 2], "expected": 3}], {inv.source: text.encode()}, [MUTANT], runner
    )
    (suggestion,) = found.suggestions
    assert suggestion.sample == {"args": [6, 2], "expected": 8}  # 5 is the entry's constant, 6 next to it
    assert suggestion.result == {"value": 8} and suggestion.mutant_result == {"value": 4}
    assert len(runner.calls) == 2 and runner.calls[1]["shop/calc.py"] == MUTANT.source  # one run per mutant
    assert found.seed == killing.DEFAULT_SEED and found.candidates == len(
        load_samples(runner.calls[0][inv.blob].encode())
    )


def test_an_equivalent_mutant_has_no_killing_input_and_a_crashing_one_says_so(shop):
    inv = row(args_names=["a", "b"])
    text = oracle_toml(
        [{"id": inv.id, "entry": inv.entry, "kind": "exact_table", "blob": inv.blob, "blob_sha256": PIN}]
    )
    args = (str(shop), inv, [{"args": [1, 2], "expected": 3}], {inv.source: text.encode()}, [MUTANT])
    same = suggest_row(*args, FakeRunner(inv, lambda a, b: a + b, lambda a, b: b + a), count=20)
    assert same.candidates == 20 and same.suggestions[0].sample is None and not same.suggestions[0].note
    crashed = suggest_row(*args, FakeRunner(inv, lambda a, b: a + b, None))
    assert crashed.suggestions[0].note.startswith("the mutant's run on the candidates failed as a whole")
    broken = suggest_row(*args, FakeRunner(inv, None, None))
    assert broken.problem.startswith("the code as it is failed on the candidates as a whole") and not broken.suggestions


def test_a_sample_the_code_raises_on_is_never_suggested(shop):
    inv = row(args_names=["a", "b"])
    text = oracle_toml(
        [{"id": inv.id, "entry": inv.entry, "kind": "exact_table", "blob": inv.blob, "blob_sha256": PIN}]
    )
    found = suggest_row(
        str(shop),
        inv,
        [{"args": [1, 2], "expected": 0}],
        {inv.source: text.encode()},
        [MUTANT],
        FakeRunner(inv, lambda a, b: a // b, lambda a, b: 0),
    )
    assert found.suggestions[0].sample is not None and found.suggestions[0].sample["args"][1] != 0


def test_the_entrys_constants_in_source_order_once_each_without_docstring_or_bools():
    source = (
        'def f(x):\n    """Doc."""\n    if x > 5 and x != "a" and True:\n        return x * 2.5 + 5\n    return 0\n'
    )
    assert constants(source, "f") == [5, "a", 2.5, 0]


def test_a_file_outside_oracles_unlike_the_base_tips_is_named(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("shop/__init__.py", "")
    repo.write("shop/calc.py", "x = 1\n")
    repo.write("harness/BUILD.bazel", "# harness\n")
    base = repo.commit("base")
    assert base_difference(str(repo.path), base) == ""
    repo.write("oracles/shop.toml", "# rows\n")
    repo.write("shop/__pycache__/calc.cpython-311.pyc", b"\0")
    assert base_difference(str(repo.path), base) == ""
    repo.write("harness/BUILD.bazel", "# a shadow library\n")
    assert base_difference(str(repo.path), base) == "harness/BUILD.bazel"
    repo.write("shop/BUILD.bazel", "# new\n")
    assert base_difference(str(repo.path), base) == "harness/BUILD.bazel"
    repo.write("harness/BUILD.bazel", "# harness\n")
    assert base_difference(str(repo.path), base) == "shop/BUILD.bazel"
    repo.write("shop/calc.py", "x = 2\n")
    repo.commit("the change, committed")
    assert base_difference(str(repo.path), base) == "shop/BUILD.bazel"
