"""docs/design.md section 12, the coverage signal, on a real git repository: a change that modifies a
production function no oracle row reaches passes with a note naming it (or fails, exit 4, when the
policy says `uncovered_changes = "fail"`), and the record of what ran never makes a failing row pass.

Each workspace run really calls the rows of the tree it is given through the row runner (caller,
supervisor, judge; no Bazel), and the judge's JUnit XML is read back as the gate reads Bazel's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from tools.oracle_gate.actions.judge import to_junit
from tools.oracle_gate.check import run_check
from tools.oracle_gate.report import render_json, render_text
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.results import read_result
from tools.testing.gitrepo import POLICY, GitRepo, junit
from tools.testing.rowrun import run_tree

PRICES = (
    "def discount(cents):\n    return cents // 10\n\n\nclass Cart:\n    def "
    "total(self, lines):\n        return sum(lines)\n"
)
# A regression in functions no row's entry calls: every row still passes.
BROKEN_PRICES = PRICES.replace("cents // 10", "cents // 100").replace("sum(lines)", "sum(lines) - 1")
CALC = "def add(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The gate's checkout of a merge result lives in its run folder: one per test.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("tools.oracle_gate.runs.blocks.SANDBOX_WRITABLE", ())


class RowRunner:
    """A workspace runner that runs the rows of the tree it is given and reports what the judge
    wrote, as the oracle test's test.xml would (coverage records included)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.runs = 0

    def __call__(self, tree: str, _environ: Mapping[str, str]) -> BazelRun:
        self.runs += 1
        scratch = self.tmp / f"run-{self.runs}"
        scratch.mkdir(parents=True, exist_ok=True)  # run_tree replaces what it writes there
        judged = run_tree(Path(tree), scratch, "shop")
        xml = to_junit(list(judged.values()), "", "oracle_test")
        return BazelRun(observed=read_result(xml, "test.xml").observed, targets={"//oracles:oracle_test": "PASSED"})


def on_main(project: GitRepo, files: Mapping[str, str]) -> str:
    """Commits `files` (and a fresh manifest) on main, then returns to the change branch reset onto it."""
    project.git("checkout", "-q", "main")
    for rel, data in files.items():
        project.write(rel, data)
    project.write_manifest()
    tip = project.commit("on main")
    project.git("checkout", "-q", "-B", "change")
    return tip


def check(project: GitRepo, tmp_path: Path, **kwargs):
    return run_check(
        str(project.path), "main", environ=dict(os.environ), workspace_runner=RowRunner(tmp_path / "rows"), **kwargs
    )


def test_a_regression_no_row_reaches_passes_with_a_note_naming_each_function(project, tmp_path):
    on_main(project, {"shop/prices.py": PRICES})
    project.write("shop/prices.py", BROKEN_PRICES)
    project.commit("break prices")
    report = check(project, tmp_path)
    assert report.exit_code == 0, [v.line() for v in report.violations]
    assert (
        "coverage: the change modified 2 production function(s) no invariant ran: shop.prices:discount, "
        "shop.prices:Cart.total" in report.notes
    )
    text = render_text(report)
    assert (
        "  ok    changed functions   2 modified production function(s), 0 run by an invariant "
        "(uncovered_changes = 'note')" in text.splitlines()
    )
    assert text.splitlines()[-1] == "gate ok (exit 0)"
    coverage = json.loads(render_json(report))["coverage"]
    assert (coverage["measured"], coverage["uncovered"]) == (True, ["shop.prices:discount", "shop.prices:Cart.total"])


def test_a_production_package_that_is_no_top_level_folder_is_said_not_measured(project, tmp_path):
    # A src/ layout: coverage reads a package's files by its name as a top-level folder.
    policy = project.read("oracles/policy.toml").decode()
    assert 'production_packages = ["shop"]' in policy
    on_main(
        project,
        {
            "oracles/policy.toml": policy.replace(
                'production_packages = ["shop"]', 'production_packages = ["shop", "humanize"]'
            ),
            "src/humanize/__init__.py": "def f():\n    return 1\n",
        },
    )
    project.write("src/humanize/__init__.py", "def f():\n    return 2\n")
    project.commit("change f")
    report = check(project, tmp_path)
    assert report.exit_code == 0, [v.line() for v in report.violations]
    assert [n for n in report.notes if n.startswith("changed functions:")] == [
        "changed functions: not measured for humanize: no such folder at the repository's root (a production "
        "package outside it, as in a src/ layout, is not read; docs/adopting.md)"
    ]


def test_a_change_every_row_reaches_gets_no_note(project, tmp_path):
    project.write("shop/calc.py", CALC.replace("a + b", "b + a"))
    project.commit("reorder add")
    report = check(project, tmp_path)
    assert report.exit_code == 0
    assert not [n for n in report.notes if n.startswith("coverage:")]
    assert "1 modified production function(s), 1 run by an invariant" in render_text(report)


def test_with_uncovered_changes_fail_the_same_regression_is_exit_4(project, tmp_path):
    on_main(project, {"shop/prices.py": PRICES, "oracles/policy.toml": POLICY + 'uncovered_changes = "fail"\n'})
    project.write("shop/prices.py", BROKEN_PRICES)
    project.commit("break prices")
    report = check(project, tmp_path)
    assert report.exit_code == 4
    assert [v.line() for v in report.violations] == [
        "[4] shop/prices.py: shop.prices:discount (changed at line 1) was modified by the change and no invariant ran "
        'it; the policy says uncovered_changes = "fail": add or extend a row '
        "whose entry reaches it (a labelled change)",
        "[4] shop/prices.py: shop.prices:Cart.total (changed at line 6) was modified by the change and no invariant "
        'ran it; the policy says uncovered_changes = "fail": add or extend a row whose entry reaches it (a labelled '
        "change)",
    ]
    # Deleting a function nothing can run any more is never uncovered.
    project.write("shop/prices.py", "")
    project.commit("delete them")
    assert check(project, tmp_path).exit_code == 0


def test_a_record_that_claims_coverage_never_passes_a_failing_row(project, tmp_path):
    # The change breaks `add` and rewrites the caller's record to claim everything ran: the rows
    # still fail on their results; the claim only silences the note it could have added.
    forged = (
        CALC.replace("a + b", "a - b") + "\nimport sys\nif hasattr(sys.modules['__main__'], 'ran_names'):\n"
        "    sys.modules['__main__'].ran_names = lambda seen, packages: ['shop.calc:add', 'shop.calc:norm']\n"
    )
    project.write("shop/calc.py", forged)
    project.commit("break add, forge the record")
    report = check(project, tmp_path)
    assert report.exit_code == 4
    assert {v.id for v in report.violations} == {"sum_in_range", "add_table"}
    assert report.observed["add_table"].ran == ("shop.calc:add", "shop.calc:norm")


def test_only_what_landing_the_change_modifies_counts_not_what_the_tip_changed(project, tmp_path):
    on_main(project, {"shop/prices.py": PRICES})
    project.write("shop/prices.py", BROKEN_PRICES.replace("sum(lines) - 1", "sum(lines)"))
    project.commit("break discount")
    project.git("checkout", "-q", "main")
    project.write("shop/other.py", "def rate():\n    return 2\n")
    project.commit("main moves on")
    project.git("checkout", "-q", "change")
    report = check(project, tmp_path)
    assert report.merge_result, report.notes
    assert (
        "coverage: the change modified 1 production function(s) no invariant ran: shop.prices:discount" in report.notes
    )


def test_outcomes_from_result_files_say_the_coverage_was_not_measured(gate, project, tmp_path, all_passed):
    project.write("shop/calc.py", CALC.replace("return state", "return dict(state)"))
    project.commit("change norm")
    code, out, _ = gate(
        "check", "--repo", str(project.path), "--base", "main", "--results", junit(tmp_path, all_passed)
    )
    assert code == 0, out
    assert (
        "coverage: not measured (the outcomes come from result files (--results), not from a run of the gate); "
        "the change modified 1 production function(s): shop.calc:norm"
    ) in out.splitlines()
    assert "  ok    changed functions   1 modified production function(s), coverage not measured" in out.splitlines()


def test_a_run_bazel_never_made_says_the_coverage_was_not_measured(project, tmp_path):
    project.write("shop/calc.py", CALC.replace("return state", "return dict(state)"))
    project.write("tools/gate.py", "# changed\n")
    project.commit("change norm and the gate")
    report = check(project, tmp_path)
    assert report.exit_code == 2
    assert (
        "coverage: not measured (Bazel did not run (protected paths changed without the label)); the change "
        "modified 1 production function(s): shop.calc:norm"
    ) in report.notes


def test_while_the_oracles_are_invalid_the_coverage_is_not_measured(project, tmp_path):
    project.write("shop/calc.py", CALC.replace("return state", "return dict(state)"))
    project.write("oracles/shop.toml", "schema = 1\n[[invariant]]\nid = 3\n")
    project.write_manifest()
    project.commit("change norm, break the oracles")
    observed = read_result(to_junit([], "", "oracle_test"), "test.xml").observed
    report = run_check(
        str(project.path),
        "main",
        labels={"oracle-change"},
        environ=dict(os.environ),
        workspace_runner=lambda *_a: BazelRun(observed=observed),
    )
    assert report.exit_code == 3, [v.line() for v in report.violations]  # the rows are gone; the file is exit 5 too
    assert (
        "coverage: not measured (the oracles are invalid, so no row was judged); the change modified 1 "
        "production function(s): shop.calc:norm"
    ) in report.notes
