"""check.py's judging as pure functions of data: outcomes, harness and clean run, without Bazel."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tools.oracle_gate.check.commits import check_ids_kept, check_protected_paths
from tools.oracle_gate.check.findings import Outcomes
from tools.oracle_gate.check.inputs import gather_inputs
from tools.oracle_gate.check.outcomes import (
    build_violation,
    check_clean_run,
    check_harness,
    check_outcomes,
    withhold_while_invalid,
)
from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.events import BuildFailure
from tools.oracle_gate.runs.results import Observed
from tools.oracle_gate.suite.loader import Oracles
from tools.testing.gitrepo import IDS, POLICY

PASSED = {i: Observed("passed") for i in IDS}


def inputs_of(project, labels=()):
    project.commit("nothing")
    return gather_inputs(str(project.path), "main", labels)


def test_every_expected_id_passing_is_ok(project):
    found = check_outcomes(inputs_of(project), Outcomes(PASSED, "1 result file(s)"))
    assert (found.violations, found.detail, found.notes) == ((), "3 of 3 invariant(s) passed (1 result file(s))", ())


def test_missing_skipped_and_failed_ids_are_exit_4_and_unknown_ids_a_note(project):
    observed = {
        "sum_in_range": Observed("skipped", source="r.xml"),
        "add_table": Observed("failed", source="r.xml", message="sample 0: 4 != 3"),
        "stray": Observed("passed"),
    }
    found = check_outcomes(inputs_of(project), Outcomes(observed, "1 result file(s)"), salt="s1")
    assert [v.line() for v in found.violations] == [
        "[4] oracles/shop.toml add_table: failed: the invariant does not hold: sample 0: 4 != 3 (from r.xml) (salt s1)",
        "[4] oracles/shop.toml norm_is_idempotent: no outcome in 1 result file(s); the oracle test must run it",
        "[4] oracles/shop.toml sum_in_range: skipped, not executed; that is not coverage (from r.xml)",
    ]
    assert found.notes == ("results name ids no oracle declares: stray",)


def test_a_failed_build_comes_first_and_a_run_names_no_result_file(project):
    run = BazelRun(build_failed=True)
    observed = {**PASSED, "add_table": Observed("failed", source="r.xml")}
    found = check_outcomes(inputs_of(project), Outcomes(observed, "the oracle test", run=run))
    first, second = [v.line() for v in found.violations]
    assert first.startswith("[4] oracles/: the change's targets did not build in the workspace run: see Bazel's output")
    assert second == "[4] oracles/shop.toml add_table: failed: the invariant does not hold"


def test_a_change_whose_build_file_is_broken_is_exit_4_naming_the_target(project):
    failure = BuildFailure(
        False,
        "//billing:billing",
        "in deps attribute of py_library rule //billing:billing: rule '//billing:gone' does not exist",
    )
    found = check_outcomes(
        inputs_of(project), Outcomes({}, "the oracle test", run=BazelRun(build_failed=True, failure=failure))
    )
    first = found.violations[0].line()
    assert first.startswith(
        "[4] billing/: the change's targets did not build in the workspace run: //billing:billing: in deps attribute"
    )


@pytest.mark.parametrize(
    "label, message",
    [
        ("@far", "Error in download_and_extract: java.io.IOException: Unknown host: nowhere.invalid"),
        ("", "Bazel ended without finishing the build"),
    ],
)
def test_a_run_that_could_not_be_set_up_is_exit_1_and_judges_no_id(project, label, message):
    run = BazelRun(build_failed=True, failure=BuildFailure(True, label, message))
    found = check_outcomes(inputs_of(project), Outcomes({}, "the oracle test", run=run))
    assert [v.code for v in found.violations] == [1]
    line = found.violations[0].line()
    assert line.startswith("[1] bazel: the workspace run could not be set up, not the change's doing: ")
    assert (label or message) in line and message in line
    assert "0 of" in found.detail


REFUSED = (
    "Error in fail: oracle-gate: [5] //oracles:oracles: references: //oracles:reference depends on //billing, "
    "outside oracles/; a reference may use only oracles/ and the standard library"
)


@pytest.mark.parametrize(
    "message, line",
    [
        # oracle_suite refusing a reference library with a dependency outside oracles/ (Starlark fail()).
        (
            REFUSED,
            "[5] oracles/: //oracles:oracles: references: //oracles:reference depends on //billing, outside "
            "oracles/; a reference may use only oracles/ and the standard library",
        ),
        # The reference check's line (a gate action's stderr): its path leads.
        (
            "oracle-gate: [5] oracles/shop.toml: row add_table: field reference: the "
            "reference oracles.reference.r:f raised",
            "[5] oracles/shop.toml: row add_table: field reference: the reference oracles.reference.r:f raised",
        ),
    ],
)
def test_the_gates_own_exit_5_line_is_exit_5_and_judges_no_id(project, message, line):
    # gate_failure wraps a failure of the views' invocation as set up, with this prefix.
    failure = BuildFailure(True, "//oracles:oracles", f"the gate's own targets did not build: {message}")
    run = BazelRun(build_failed=True, failure=failure)
    found = check_outcomes(inputs_of(project), Outcomes({}, "the oracle test", run=run))
    assert [v.line() for v in found.violations] == [line]
    assert found.detail == "0 of 3 invariant(s) judged: the oracles did not build"
    # In the clean run it stays exit 5, not a disagreement of the runs.
    clean = check_clean_run(Outcomes(PASSED, "the oracle test", run=BazelRun()), run, labelled=False, remote=False)
    assert [v.code for v in clean.violations][:1] == [5]


@pytest.mark.parametrize(
    "failure",
    [
        BuildFailure(False, "//oracles:oracles", REFUSED),  # not through gate_failure: the change's invocation
        BuildFailure(True, "//billing:billing", REFUSED),  # not a target of oracles/
        BuildFailure(True, "//oracles:oracles", "the gate's own targets did not build: oracle-gate: [1] cannot read"),
    ],
)
def test_only_the_gates_own_targets_give_exit_5(failure):
    assert build_violation(BazelRun(build_failed=True, failure=failure), "workspace run").code in (1, 4)


def test_outcomes_are_not_judged_while_the_oracles_are_invalid(project):
    inputs = inputs_of(project)
    run = BazelRun(targets={"//harness:t": "FAILED"}, build_failed=False)
    outcomes = check_outcomes(inputs, Outcomes({}, "the oracle test", run=run))
    harness = check_harness(run)
    assert outcomes.violations and harness.violations
    assert withhold_while_invalid(inputs, outcomes, harness) == (outcomes, harness)
    side = replace(inputs.head, oracles=Oracles(None, problems=[OracleError("is missing", path="oracles/policy.toml")]))
    invalid = replace(inputs, head=side, judged=side)
    held, held_harness = withhold_while_invalid(invalid, outcomes, harness)
    assert held.violations == () and held_harness is not None and held_harness.violations == ()
    assert held.notes == tuple(
        f"not judged while the oracles are invalid: {v.line()}" for v in outcomes.violations + harness.violations
    )
    assert held.detail == "not judged: the oracle files are invalid (exit 5)"


def test_invalid_oracles_do_not_advise_fixing_the_environment(project):
    # The pin check fails the views' build on invalid oracle files: a set-up failure of the run
    # whose cause is the exit-5 lines, not the environment.
    run = BazelRun(
        build_failed=True, failure=BuildFailure(True, "//oracles:oracles", "the gate's own targets did not build")
    )
    outcomes = check_outcomes(inputs_of(project), Outcomes({}, "the oracle test", run=run))
    assert "fix the environment" in outcomes.violations[0].line()
    inputs = inputs_of(project)
    side = replace(inputs.head, oracles=Oracles(None, problems=[OracleError("is missing", path="oracles/policy.toml")]))
    invalid = replace(inputs, head=side, judged=side)
    held, _ = withhold_while_invalid(invalid, outcomes, None)
    assert held.notes == (
        "not judged while the oracles are invalid: the run did not build: the gate's pin check "
        "stops at invalid oracle files",
    )


def test_the_clean_run_must_agree_with_the_workspace_run():
    workspace = Outcomes(PASSED, "the oracle test", run=BazelRun(targets={"//harness:t": "PASSED"}))
    same = BazelRun(observed=dict(PASSED), targets={"//harness:t": "PASSED"})
    found = check_clean_run(workspace, same, labelled=False, remote=False)
    assert found.violations == ()
    assert found.detail == (
        "agrees with the workspace run: 3 id(s), same outcomes and observation digests (sandboxed, the base's oracles)"
    )
    other = BazelRun(observed={**PASSED, "add_table": Observed("failed")}, targets={})
    found = check_clean_run(workspace, other, labelled=True, remote=True, salt="s2")
    assert [v.line() for v in found.violations] == [
        "[6] oracles/ add_table: workspace run passed, clean remote run failed: outcomes differ (salt s2); the result "
        "depends on something outside the declared, committed inputs",
        "[6] harness/: //harness:t: workspace run PASSED, clean remote run missing",
    ]


def test_protected_paths_and_ids_kept_read_only_the_inputs(project):
    project.write("oracles/policy.toml", POLICY.replace('"shop"]', '"shop", "other"]'))
    inputs = inputs_of(project)
    found = check_protected_paths(inputs)
    assert [v.line() for v in found.violations] == [
        "[2] oracles/policy.toml: protected by 'oracles/**' and changed (M) without the 'oracle-change' label"
    ]
    labelled = check_protected_paths(replace(inputs, approval=replace(inputs.approval, labelled=True)))
    assert labelled.violations == () and labelled.notes == (
        "1 protected path(s) changed under the 'oracle-change' label",
    )
    assert check_ids_kept(inputs).violations == ()
    side = replace(inputs.head, oracles=Oracles(inputs.head.oracles.policy))
    assert check_ids_kept(replace(inputs, head=side, judged=side)).violations[0].line() == (
        "[3] oracles/ add_table: present at the base, missing at HEAD; to retire a row on purpose, add a [[retired]] "
        "entry (id, reason, since) under the label and a line in oracles/CHANGELOG.md naming the id (docs/oracles.md, "
        '"Retiring a row")'
    )


def _oracles_of(tmp_path, name, rows, extra=None):
    from tools.oracle_gate.git.tree import WorkTree
    from tools.oracle_gate.suite.loader import load_oracles
    from tools.testing.gitrepo import make_project

    repo = make_project(tmp_path / name, rows)
    for rel, data in (extra or {}).items():
        repo.write(rel, data)
    return load_oracles(WorkTree(str(repo.path)), verify_blobs=False)


def test_a_row_the_tip_added_or_tightened_is_never_lost_in_the_merge_result(project, tmp_path):
    from tools.testing.gitrepo import blob_bytes, default_rows, sha256

    twos = blob_bytes([{"args": [2, 2], "expected": 4}])
    row = {
        "id": "add_twos",
        "entry": "shop.calc:add",
        "kind": "exact_table",
        "blob": "oracles/blobs/twos.json",
        "blob_sha256": sha256(twos),
    }
    base = _oracles_of(tmp_path, "base", default_rows())
    tip = _oracles_of(tmp_path, "tip", default_rows(max_=3) + [row], {"oracles/blobs/twos.json": twos})
    merged = _oracles_of(tmp_path, "merged", default_rows())
    inputs = inputs_of(project)
    inputs = replace(
        inputs,
        merge_base=replace(inputs.merge_base, oracles=base),
        head=replace(inputs.head, oracles=base),
        claims=replace(inputs.claims, commit="t" * 40, oracles=tip),
        judged=replace(inputs.judged, commit="m" * 40, oracles=merged),
    )
    found = check_ids_kept(inputs)
    assert [v.line() for v in found.violations] == [
        "[3] oracles/ add_twos: present at the base tip, missing in the merge result",
        "[3] oracles/shop.toml sum_in_range: the base tip added or changed this row since the merge base, and the "
        "merge result holds it otherwise (max 3 at the tip, 100 in the merge result); update the branch and keep "
        "the tip's row",
    ]
    # A merge result that holds the tip's rows as the tip does passes, whatever else it changed.
    kept = replace(inputs, judged=replace(inputs.judged, oracles=tip))
    assert check_ids_kept(kept).violations == ()
    assert check_ids_kept(kept).detail == "3 at base, 3 at HEAD, 4 at the base tip, 4 in the merge result, none missing"


def test_an_external_repository_that_fails_on_a_file_the_change_modified_is_the_changes(project):
    message = "pip_lock_repository: @//:requirements_lock.txt line 3: a pip option; regenerate it"
    run = BazelRun(build_failed=True, failure=BuildFailure(True, "@pypi", message))
    found = build_violation(run, "workspace run", ["requirements_lock.txt", "billing/tax.py"])
    assert found.code == 4 and found.path == "requirements_lock.txt"
    assert "breaks external repository @pypi in the workspace run" in found.message
    nested = build_violation(
        BazelRun(build_failed=True, failure=BuildFailure(True, "@x", "//third_party:x.lock bad")),
        "workspace run",
        ["third_party/x.lock"],
    )
    assert nested.code == 4
    unrelated = build_violation(run, "workspace run", ["billing/tax.py"])
    assert unrelated.code == 1


def test_a_workspace_run_that_cannot_start_keeps_the_report_and_is_exit_1(project):
    from tools.oracle_gate.check import run_check
    from tools.oracle_gate.errors import GateError

    def broken(_repo, _env):
        raise GateError("`bazel info bazel-bin` failed: ERROR: the server crashed")

    project.commit("nothing")
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=broken,
        clean=True,
        clean_runner=lambda *a: pytest.fail("the clean run must not start"),
    )
    assert report.exit_code == 1
    assert [c.name for c in report.checks][:4] == ["protected paths", "oracle files", "manifest", "invariant ids"]
    assert any(
        "the server crashed" in v.line() and v.line().startswith("[1] bazel: the workspace run could not be set up")
        for v in report.violations
    )
    assert "clean run: not run, the workspace run could not be set up" in report.notes
