"""The behaviour phase on a real git repository (docs/oracles.md, "Behaviour kept" and "The behaviour
diff"): a `back_to_back` row passes a refactor that keeps every result and fails (exit 4) the same
refactor with one result changed, naming the differing samples; the behaviour diff reports the
modified functions whose results differ, lists those it cannot generate for with why, and fails an
unclaimed difference only when the policy says so and the label is absent.

The workspace run is the real row runner (no Bazel); each side of the phase is the probe's tree
written from the commit's git objects, run through the real supervisor and caller
(tools/testing/probe_local.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from tools.oracle_gate.actions.judge import to_junit
from tools.oracle_gate.check import run_check
from tools.oracle_gate.report import render_text
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.results import read_result
from tools.testing.gitrepo import POLICY, GitRepo, blob_bytes, oracle_toml, sha256
from tools.testing.probe_local import local_probe
from tools.testing.rowrun import run_tree

CALC = """\
def add(a: int, b: int) -> int:
    return a + b


def scale(x: int, factor: int = 2) -> int:
    return x * factor


def label(x):
    return str(x)
"""
SAMPLES = [{"a": 1, "b": 2}, {"a": -3, "b": 3}]
ROW = {
    "id": "add_kept",
    "entry": "shop.calc:add",
    "kind": "back_to_back",
    "blob": "oracles/blobs/kept.json",
    "blob_sha256": sha256(blob_bytes(SAMPLES)),
    "seed": 4,
    "generate": {"count": 40, "a": {"int": [-20, 20]}, "b": {"int": [-20, 20]}},
}


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("tools.oracle_gate.runs.blocks.SANDBOX_WRITABLE", ())


class RowRunner:
    """The workspace run: the rows of the tree it is given, through the real row runner."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.runs = tmp, 0

    def __call__(self, tree: str, _environ: Mapping[str, str]) -> BazelRun:
        self.runs += 1
        scratch = self.tmp / f"run-{self.runs}"
        scratch.mkdir(parents=True, exist_ok=True)
        judged = run_tree(Path(tree), scratch, "shop")
        xml = to_junit(list(judged.values()), "", "oracle_test")
        return BazelRun(observed=read_result(xml, "test.xml").observed, targets={"//oracles:oracle_test": "PASSED"})


def project(tmp_path: Path, policy: str = POLICY) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.write("oracles/policy.toml", policy)
    repo.write("oracles/blobs/kept.json", blob_bytes(SAMPLES))
    repo.write("oracles/shop.toml", oracle_toml([ROW]))
    repo.write("shop/__init__.py", "")
    repo.write("shop/calc.py", CALC)
    repo.write_manifest()
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "change")
    return repo


def check(repo: GitRepo, tmp_path: Path, **kwargs: object):
    return run_check(
        str(repo.path),
        "main",
        environ=dict(os.environ),
        workspace_runner=RowRunner(tmp_path / "rows"),  # which draws with the salt "", as this check
        behaviour_runner=local_probe,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_refactor_that_keeps_every_result_passes_and_shows_no_behaviour_change(tmp_path):
    repo = project(tmp_path)
    repo.write("shop/calc.py", CALC.replace("return a + b", "total = b\n    total += a\n    return total"))
    repo.commit("refactor")
    report = check(repo, tmp_path)
    text = render_text(report)
    assert report.exit_code == 0, text
    assert "  ok    behaviour kept      1 row(s) return what the base tip returns on 42 samples" in text
    assert "  ok    behaviour diff      1 function(s) compared on up to 200 inputs, 0 changed behaviour" in text
    assert "behaviour changed" not in text


def test_one_changed_result_fails_the_row_and_shows_the_diff(tmp_path):
    repo = project(tmp_path)
    repo.write("shop/calc.py", CALC.replace("return a + b", "return b + a + (1 if a % 5 == 0 else 0)"))
    repo.commit("one result changed")
    report = check(repo, tmp_path)
    text = render_text(report)
    assert report.exit_code == 4, text
    (violation,) = [v for v in report.violations if v.id == "add_kept"]
    assert violation.message.startswith("behaviour changed on ")
    assert "base tip" in violation.message
    (line,) = [n for n in report.notes if n.startswith("behaviour changed: shop.calc:add on ")]
    assert " of 242 inputs: " in line  # the row's 2 stored and 40 drawn samples, then 200 from the annotations
    # The per-sample results are the change's own in the run's outcome; the phase decides.
    assert "FAIL  behaviour kept      1 violation(s)" in text


def test_a_difference_only_the_diff_meets_fails_the_row_that_claims_the_entry(tmp_path):
    # The row draws a and b from [-20, 20]; the change differs only where a is 500, which the
    # diff's draws from the annotations (a thousand either side of zero) meet.
    repo = project(tmp_path)
    repo.write("shop/calc.py", CALC.replace("return a + b", "return a + b + (1 if a >= 500 else 0)"))
    repo.commit("a result changed outside the row's generators")
    report = check(repo, tmp_path)
    text = render_text(report)
    assert report.exit_code == 4, text
    (violation,) = [v for v in report.violations if v.id == "add_kept"]
    assert " inputs of the behaviour diff of shop.calc:add: " in violation.message, violation.message
    assert "base tip" in violation.message
    assert "add_kept" in [line.split()[0] for line in text.splitlines() if "behaviour kept: FAIL" in line]


def test_the_diff_lists_what_it_cannot_measure_and_fails_only_when_the_policy_says_so(tmp_path):
    policy = POLICY + 'behaviour_changes = "fail"\n'
    repo = project(tmp_path, policy)
    changed = CALC.replace("return x * factor", "return x * factor + 1").replace("return str(x)", "return repr(x)")
    repo.write("shop/calc.py", changed.replace("def add(a: int, b: int)", "def add(a: int, b: int = 0)"))
    repo.commit("scale off by one")
    report = check(repo, tmp_path)
    assert report.exit_code == 4, render_text(report)
    (violation,) = [v for v in report.violations if v.id == "shop.calc:scale"]
    assert 'behaviour_changes = "fail"' in violation.message
    notes = "\n".join(report.notes)
    assert "behaviour diff: not measured: shop.calc:label: parameter `x`" in notes
    assert "behaviour diff: not measured: shop.calc:add: its parameters differ from the base tip's" in notes
    labelled = check(repo, tmp_path, labels=["oracle-change"])
    assert not [v for v in labelled.violations if v.id == "shop.calc:scale"]


def test_code_that_answers_the_probe_otherwise_than_the_run_is_caught(tmp_path):
    # Right (the base tip's results) in the probe, whose tree lies in a folder named `tree`;
    # wrong everywhere else, the runs included.
    repo = project(tmp_path)
    cheat = "import os\n\n\n" + CALC.replace(
        "return a + b", 'return a + b + (0 if os.environ.get("PYTHONPATH", "").endswith("/tree") else 1)'
    )
    repo.write("shop/calc.py", cheat)
    repo.commit("answers the probe alone right")
    report = check(repo, tmp_path)
    (violation,) = [v for v in report.violations if v.id == "add_kept"]
    assert violation.code == 6 and "the code behaves otherwise there" in violation.message


def test_without_a_probe_a_back_to_back_row_is_undecided(tmp_path):
    repo = project(tmp_path)
    repo.write("shop/calc.py", CALC + "\n")
    repo.commit("nothing")
    report = run_check(str(repo.path), "main", environ=dict(os.environ), workspace_runner=RowRunner(tmp_path / "rows"))
    (violation,) = report.violations
    assert (violation.code, violation.id) == (1, "add_kept")
    assert "the behaviour phase did not run" in violation.message and "--results" in violation.message
    assert json.loads(json.dumps(report.exit_code)) == 1


def test_under_fail_what_the_diff_cannot_compare_because_of_the_change_fails_too(tmp_path):
    repo = project(tmp_path, POLICY + 'behaviour_changes = "fail"\n')
    changed = "import os\n\n\n" + CALC.replace("return x * factor", "os._exit(3)")
    changed = changed.replace("def label(x):\n    return str(x)\n", "")
    changed = changed.replace("a: int, b: int)", "a: int, b: int = 1)")
    repo.write("shop/calc.py", changed)
    repo.commit("scale crashes, label is gone, add gets a default")
    report = check(repo, tmp_path)
    failed = {v.id: v for v in report.violations}
    assert "the judged commit:" in failed["shop.calc:scale"].message
    assert "removed by this change" in failed["shop.calc:label"].message
    # add is claimed by a row (its own verdict decides): its changed parameters are a note.
    assert "shop.calc:add" not in failed
    assert "behaviour diff: not measured: shop.calc:add: its parameters differ from the base tip's" in report.notes


LINES = """\
from dataclasses import dataclass


@dataclass
class Line:
    quantity: int
    price: int


def line_total(line: Line) -> int:
    return line.quantity * line.price
"""


def test_the_diff_draws_from_the_base_tips_annotations_not_the_changes(tmp_path):
    repo = project(tmp_path, POLICY + 'behaviour_changes = "fail"\n')
    repo.git("checkout", "-q", "main")
    repo.write("shop/lines.py", LINES)
    repo.commit("lines")
    repo.git("checkout", "-q", "-B", "change")
    # Wrong for every quantity but 1, and the change narrows the class it draws from to 1.
    narrowed = LINES.replace("    quantity: int", "    quantity: Literal[1]").replace(
        "return line.quantity * line.price", "return line.price"
    )
    repo.write("shop/lines.py", "from typing import Literal\n" + narrowed)
    repo.commit("line_total ignores the quantity")
    report = check(repo, tmp_path)
    (violation,) = [v for v in report.violations if v.id == "shop.lines:line_total"]
    assert violation.message.startswith("behaviour changed: shop.lines:line_total on ")


def test_the_change_that_adopts_the_gate_is_not_compared_with_a_base_that_predates_it(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("shop/__init__.py", "")
    repo.write("shop/calc.py", CALC)
    repo.commit("before the gate")
    repo.git("checkout", "-q", "-b", "adopt")
    repo.write("oracles/policy.toml", POLICY)
    repo.write("oracles/blobs/kept.json", blob_bytes(SAMPLES))
    repo.write("oracles/shop.toml", oracle_toml([ROW]))
    repo.write_manifest()
    repo.commit("adopt the gate")
    report = check(repo, tmp_path, labels=["oracle-change"])
    assert report.exit_code == 0, render_text(report)
    assert any(note.startswith("behaviour phase: not run: the base predates the gate") for note in report.notes)


def test_without_a_probe_the_diff_is_not_even_planned(tmp_path, monkeypatch):
    # A check given --results reports no diff, so it reads no blob for one (a large spec's blobs
    # would otherwise all be parsed once more for nothing).
    from tools.oracle_gate.check import behaviour

    def unexpected(*_args, **_kwargs):
        raise AssertionError("the diff was planned")

    monkeypatch.setattr(behaviour, "diff_rows", unexpected)
    repo = project(tmp_path)
    repo.write("shop/calc.py", CALC.replace("return x * factor", "return factor * x"))
    repo.commit("scale refactored")
    report = run_check(str(repo.path), "main", environ=dict(os.environ), workspace_runner=RowRunner(tmp_path / "rows"))
    assert [(v.code, v.id) for v in report.violations] == [(1, "add_kept")]


UNANNOTATED = CALC.replace("def add(a: int, b: int) -> int:", "def add(a, b):")


def test_a_function_the_diff_cannot_draw_for_reads_no_more_known_inputs_than_it_compares(tmp_path, monkeypatch):
    from tools.oracle_gate.check import behaviour

    repo = project(tmp_path)
    repo.git("checkout", "-q", "main")
    repo.write("shop/calc.py", UNANNOTATED)
    repo.commit("add without annotations")
    repo.git("checkout", "-q", "-B", "change")
    repo.write("shop/calc.py", UNANNOTATED.replace("return a + b", "return b + a"))
    repo.commit("add refactored")
    taken: list[int] = []
    real = behaviour._diff_row

    def counted(ident, entry, result, known, packages, salt):
        taken.append(len(known))
        return real(ident, entry, result, known, packages, salt)

    monkeypatch.setattr(behaviour, "DIFF_SAMPLES", 5)
    monkeypatch.setattr(behaviour, "_diff_row", counted)
    report = check(repo, tmp_path)
    # The row gives 42 inputs (2 stored, 40 generated); only the 5 compared are taken.
    assert taken == [5], taken
    assert report.exit_code == 0, render_text(report)
