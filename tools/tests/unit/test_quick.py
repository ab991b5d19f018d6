"""check/quick.py and `check --quick` through run_check, with a stand-in for the workspace run."""

from __future__ import annotations

from tools.oracle_gate.check import run_check
from tools.oracle_gate.check.inputs import gather_inputs
from tools.oracle_gate.check.quick import check_uncommitted, reached_rows, uncommitted_paths
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.results import Observed

PASSED = {i: Observed("passed", "a" * 64) for i in ("sum_in_range", "norm_is_idempotent", "add_table")}


def inputs(project):
    return gather_inputs(str(project.path), "main", (), head_only=True)


def test_rows_are_reached_through_their_module_and_its_importers(project):
    project.write("shop/util.py", "def half(x):\n    return x // 2\n")
    project.write(
        "shop/calc.py", "from .util import half\n\ndef add(a, b):\n    return a + b\n\ndef norm(s, k):\n    return s\n"
    )
    project.commit("util")
    assert reached_rows(inputs(project), []) == ["sum_in_range", "norm_is_idempotent", "add_table"]
    project.git("checkout", "-q", "-b", "later")
    project.write("harness/test_shop.py", "# only the harness\n")
    project.commit("harness")
    found = gather_inputs(str(project.path), "change", (), head_only=True)
    assert reached_rows(found, []) == []
    assert reached_rows(found, ["shop/util.py"]) == ["sum_in_range", "norm_is_idempotent", "add_table"]
    assert reached_rows(found, ["shop/data.json"]) == ["sum_in_range", "norm_is_idempotent", "add_table"]
    assert reached_rows(found, ["shop/__pycache__/calc.cpython-311.pyc"]) == []
    # A module deleted (or renamed away) is in no import graph of the work tree: its package is reached.
    (project.path / "shop/util.py").unlink()
    assert reached_rows(found, ["shop/util.py"]) == ["sum_in_range", "norm_is_idempotent", "add_table"]


def test_uncommitted_protected_paths_fail_without_the_label(project):
    project.commit("nothing")
    project.write("oracles/shop.toml", "schema = 1\n")
    project.write("shop/calc.py", "def add(a, b):\n    return 0\n")
    found = inputs(project)
    paths = uncommitted_paths(found)
    assert paths == ["oracles/shop.toml", "shop/calc.py"]
    check = check_uncommitted(found, paths)
    assert [(v.code, v.path) for v in check.violations] == [(2, "oracles/shop.toml")]


def test_quick_runs_nothing_when_no_row_is_reached(project):
    project.write("harness/test_shop.py", "# more harness\n")
    project.commit("harness")
    report = run_check(
        str(project.path), "main", environ={}, head_only=True, quick=True, workspace_runner=lambda *a: 1 / 0
    )
    assert report.exit_code == 0
    assert [(c.name, c.status) for c in report.checks][-1] == ("invariant outcomes", "NOT RUN")


def test_quick_runs_the_work_tree_as_it_is_and_judges_its_outcomes(project):
    project.commit("nothing")
    project.write("shop/calc.py", "def add(a, b):\n    return a - b\n\n\ndef norm(state, k):\n    return state\n")
    ran = []

    def runner(tree, _env):
        ran.append(tree)
        return BazelRun(observed={**PASSED, "add_table": Observed("failed", "b" * 64)})

    report = run_check(str(project.path), "main", environ={}, head_only=True, quick=True, workspace_runner=runner)
    assert ran == [str(project.path)]
    assert report.exit_code == 4 and [v.id for v in report.violations] == ["add_table"]
    assert any(n.startswith("quick: the change reached 3 row(s)") for n in report.notes)
    assert any("it was run as it is" in n for n in report.notes)


def test_an_uncommitted_oracle_edit_stops_the_quick_run(project):
    project.commit("nothing")
    project.write("oracles/shop.toml", "schema = 1\n")
    report = run_check(
        str(project.path), "main", environ={}, head_only=True, quick=True, workspace_runner=lambda *a: 1 / 0
    )
    assert report.exit_code == 2
    assert any(v.path == "oracles/shop.toml" and "not committed" in v.message for v in report.violations)
