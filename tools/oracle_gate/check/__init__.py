"""`check`: every gate check of a change against a base revision (docs/design.md sections 5-7).

What is judged is what would land: the merge result of HEAD into the base tip, with the base tip's
claims (docs/design.md section 11). This module is the table of contents: `run_check` reads the
inputs from git once (`inputs.py`), runs checks 1-4 on the commits (`commits.py`), gathers the oracle
test's outcomes (`runs.py`: result files, or the workspace run with Bazel; then the clean run and the
hidden phase) and judges them (`outcomes.py`, pure functions of data, testable without Bazel), and
builds the `Report` (`findings.py`) once from what each step returned. `hidden.py` is the gate's side
of the rows' hidden samples, `coverage.py` the coverage signal, `behaviour.py` and
`behaviour_phase.py` the behaviour phase (the `back_to_back` rows and the behaviour diff, both sides
run in the probe), `quick.py` what `--quick` adds and leaves out (the work tree's uncommitted
protected paths, the rows the change reached).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import HIDDEN_OPTIONAL, HIDDEN_REQUIRED
from tools.oracle_gate.check import hidden
from tools.oracle_gate.check.behaviour import ProbeRunner
from tools.oracle_gate.check.behaviour_phase import KEPT_CHECK, behaviour_findings
from tools.oracle_gate.check.commits import commit_checks, spec_report
from tools.oracle_gate.check.findings import NOT_RUN, CheckLine, Findings, Outcomes, Report, ReportItem, summarize
from tools.oracle_gate.check.inputs import Inputs, gather_inputs, judged_note
from tools.oracle_gate.check.outcomes import (
    check_clean_run,
    check_harness,
    check_outcomes,
    coverage_findings,
    expected_ids,
    hidden_findings,
    oracle_refusal,
    withhold_while_invalid,
)
from tools.oracle_gate.check.quick import check_uncommitted, reached_rows, uncommitted_paths
from tools.oracle_gate.check.runs import (
    CleanRunner,
    HiddenOutcome,
    WorkspaceRunner,
    default_clean_runner,
    default_hidden_runner,
    default_workspace_runner,
    read_outcomes,
    run_clean,
    run_hidden,
    run_workspace,
    salted_files,
)
from tools.oracle_gate.errors import GateError, Violation
from tools.oracle_gate.progress import Phases
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.suite.spec_changes import RowChange

BOOTSTRAP_NOTE = "bootstrap: the base has no oracles/policy.toml; HEAD's policy applies and no id is required"
NOT_RUN_WHY = (
    "protected paths changed without the label, so neither the oracle test nor the harness ran: Bazel "
    "would run the change's own build configuration (WORKSPACE, MODULE.bazel, .bazelrc, repository rules) "
    "outside any sandbox before a human approved it"
)


@dataclass(frozen=True)
class CheckOptions:
    """How one `check` runs: `run_check`'s keywords, handed to its steps as one value.

    Attributes:
        results: JUnit XML files or Bazel test-log directories; when empty, the oracle test and the
            harness are run with `bazel test //oracles/... //harness/...`.
        labels: the pull request's labels that count (labels.py).
        environ: the environment, passed to Bazel when it runs the harness.
        clean: also run on a pristine tree (clean_run.py) and require the same id -> outcome and
            observation digest as the workspace run (exit 6 otherwise).
        remote: run the clean run through `--config=remote` (REAPI).
        salt: the run salt for generated samples, the same for both runs.
        workspace_runner: how to do the workspace run (default: `default_workspace_runner`; tests
            substitute it).
        clean_runner: how to do the clean run (default: `default_clean_runner`).
        verify_all: hash and parse every HEAD blob, even those the merge base pinned the same way.
        head_only: judge HEAD against the merge base, as if the base had not moved since the
            change branched (local use; the report says so).
        unsealed_workspace: run the workspace run on the host, without its sealed root
            (runs/workspace_seal.py), for a host that cannot make one; the report's first line says so.
        behaviour_runner: the probe of the behaviour phase (check/behaviour_phase.py); None, or
            `results`, runs no phase (a `back_to_back` row is then exit 1).
        quick: the commit checks, the work tree's uncommitted protected paths, and the oracle test
            on the work tree as it is, only when the change reached a row's entry (check/quick.py);
            no harness, clean run, hidden or behaviour phase. Needs `head_only`.
    """

    results: Sequence[str] = ()
    labels: Collection[str] = ()
    environ: Mapping[str, str] = field(default_factory=dict)
    clean: bool = False
    remote: bool = False
    salt: str = ""
    workspace_runner: WorkspaceRunner | None = None
    clean_runner: CleanRunner | None = None
    verify_all: bool = False
    head_only: bool = False
    unsealed_workspace: bool = False
    behaviour_runner: ProbeRunner | None = None
    quick: bool = False


def run_check(
    repo: str,
    base: str,
    *,
    results: Sequence[str] = (),
    labels: Collection[str] = (),
    environ: Mapping[str, str] | None = None,
    clean: bool = False,
    remote: bool = False,
    salt: str = "",
    workspace_runner: WorkspaceRunner | None = None,
    clean_runner: CleanRunner | None = None,
    verify_all: bool = False,
    head_only: bool = False,
    unsealed_workspace: bool = False,
    behaviour_runner: ProbeRunner | None = None,
    quick: bool = False,
) -> Report:
    """Runs every gate check of the change HEAD against `base`: on the merge result of HEAD into
    the base tip, with the tip's claims, unless HEAD already contains the tip or `head_only`.

    Args:
        repo: the work tree's root.
        base: a revision (branch, tag, commit id).
        results, labels, clean, remote, salt, workspace_runner, clean_runner, verify_all,
            head_only, unsealed_workspace, behaviour_runner, quick: the `CheckOptions` of this
            check (see there).
        environ: the environment, passed to Bazel when it runs the harness (default: os.environ).

    Raises:
        GateError: (exit 1) when the gate cannot decide: git errors, a change that does not merge
            cleanly into the base tip (`gitio.MergeConflict`), an invalid base policy, unreadable
            results or results given for a HEAD that is not what is judged, a work tree that
            differs from HEAD (without `results` or `clean`, when HEAD is judged), Bazel missing.
    """
    options = CheckOptions(
        results,
        labels,
        os.environ if environ is None else environ,
        clean,
        remote,
        salt,
        workspace_runner,
        clean_runner,
        verify_all,
        head_only,
        unsealed_workspace,
        behaviour_runner,
        quick,
    )
    phases = Phases()
    with phases.phase("reading the commits"):
        inputs = gather_inputs(repo, base, labels, verify_all=verify_all, head_only=head_only)
    return _judge_change(inputs, options, phases)


@dataclass(frozen=True)
class RunsFound:
    """What checks 4-6 returned (`_run_and_judge`), for the report.

    Attributes:
        found: the report items, in report order.
        ids: the ids that must have an outcome (`outcomes.expected_ids`); empty when nothing ran.
        workspace: the oracle test's outcomes; None when Bazel did not run.
        clean: the clean run; None when it did not run.
        hidden: what the hidden phase gave.
        coverage: `--format json`'s `coverage`, None when no production function changed.
        hidden_not_run: the ids whose hidden part did not run.
    """

    found: list[ReportItem]
    ids: list[str] = field(default_factory=list)
    workspace: Outcomes | None = None
    clean: BazelRun | None = None
    hidden: HiddenOutcome = HiddenOutcome()
    coverage: dict[str, Any] | None = None
    hidden_not_run: list[str] = field(default_factory=list)


def _judge_change(inputs: Inputs, options: CheckOptions, phases: Phases) -> Report:
    """`run_check` once its inputs are read: checks 1-4 on the commits, 5 and 6 on what ran (unless
    protected paths changed unapproved), then the spec-change report and the changelog rule."""
    if inputs.is_merge and options.results:
        raise GateError(
            f"the results are of HEAD {inputs.head.commit[:12]}, which does not contain the base tip "
            f"{inputs.tip[:12]}: what would land is their merge, so results of HEAD do not "
            "speak for it",
            fix="update the branch onto the base tip and run again, let the gate run "
            "Bazel itself (no --results), or pass --head-only",
        )
    found: list[ReportItem] = [judged_note(inputs), *([BOOTSTRAP_NOTE] if inputs.bootstrap else [])]
    with phases.phase("commit checks"):
        commits = commit_checks(inputs)
        uncommitted = uncommitted_paths(inputs) if options.quick else []
        if options.quick:
            commits.insert(1, check_uncommitted(inputs, uncommitted))
    if (
        any(c.violations for c in commits if c.name in ("protected paths", "uncommitted changes"))
        and not options.results
    ):
        # Bazel runs a change's WORKSPACE, MODULE.bazel, .bazelrc and repository rules outside any
        # sandbox, as the CI user: the gate runs nothing of a change whose protected paths no human
        # approved. Exit 2 is already lower than any code checks 5 and 6 could add.
        items, coverage = coverage_findings(inputs, None)
        ran = RunsFound(
            [CheckLine("invariant outcomes", False, NOT_RUN), f"not run: {NOT_RUN_WHY}", *items], coverage=coverage
        )
    elif options.quick:
        ran = _quick_run(inputs, options, phases, uncommitted)
    else:
        ran = _run_and_judge(inputs, options, phases)
    changes, spec_found = spec_report(inputs)
    return _report(inputs, options, phases, [*found, *commits, *ran.found, *spec_found], ran, changes)


def _run_and_judge(inputs: Inputs, options: CheckOptions, phases: Phases) -> RunsFound:
    """Checks 4 and 5 on what ran: the oracle test's outcomes (result files, or the workspace run)
    and the harness, judged, and the coverage signal; then the clean run and the hidden samples
    (`_clean_and_hidden`)."""
    # The stricter `hidden` of the policies in force and judged, as for `uncovered_changes`.
    settings = [o.policy.hidden for o in (inputs.claims.oracles, inputs.judged.oracles) if o.policy is not None]
    plan = hidden.plan(
        inputs.judged.oracles.invariants,
        HIDDEN_REQUIRED if HIDDEN_REQUIRED in settings else HIDDEN_OPTIONAL,
        options.environ,
        inputs.repo,
        clean=options.clean and not options.results,
        remote=options.remote,
    )
    salted = salted_files(inputs)
    if options.results:
        outcomes = read_outcomes(options.results)
    else:
        runner = options.workspace_runner or default_workspace_runner(
            options.salt, inputs.repo, salted, options.unsealed_workspace
        )
        with phases.phase("workspace run", announce=True):
            outcomes = run_workspace(inputs, runner, options.environ, clean=options.clean)
    outcome_check = check_outcomes(inputs, outcomes, salt=options.salt)
    harness = check_harness(outcomes.run) if outcomes.run is not None else None
    # Invalid oracles (check 2) void the outcome and harness checks: their violations become notes.
    outcome_check, harness = withhold_while_invalid(inputs, outcome_check, harness)
    coverage_items, coverage = coverage_findings(inputs, outcomes)
    found = [*outcomes.notes, outcome_check, *([harness] if harness is not None else []), *coverage_items]
    rest = _clean_and_hidden(inputs, options, phases, plan, outcomes, salted)
    # Outcomes from result files: the gate runs nothing itself, the behaviour phase included.
    probe = None if options.results else options.behaviour_runner
    digests = {ident: seen.digest for ident, seen in outcomes.observed.items() if seen.digest}
    behaviour = behaviour_findings(inputs, options.salt, options.environ, probe, phases, digests)
    return replace(
        rest,
        found=[*found, *rest.found, *behaviour],
        ids=expected_ids(inputs.judged.oracles),
        workspace=outcomes,
        coverage=coverage,
    )


def _quick_run(inputs: Inputs, options: CheckOptions, phases: Phases, uncommitted: list[str]) -> RunsFound:
    """`--quick`'s run (check/quick.py): the oracle test on the work tree as it is, without the
    harness, when the change reached a row's entry; else nothing runs."""
    reached = reached_rows(inputs, uncommitted)
    if not reached:
        return RunsFound(
            [
                CheckLine(
                    "invariant outcomes", True, "not run (--quick): the change reached no row's entry", not_run=True
                )
            ]
        )
    runner = options.workspace_runner or default_workspace_runner(
        options.salt, inputs.repo, salted_files(inputs), options.unsealed_workspace, harness=False
    )
    with phases.phase("workspace run", announce=True):
        outcomes = run_workspace(inputs, runner, options.environ, clean=False, as_is=True)
    outcome_check, _ = withhold_while_invalid(inputs, check_outcomes(inputs, outcomes, salt=options.salt), None)
    shown = ", ".join(reached[:8]) + (f" and {len(reached) - 8} more" if len(reached) > 8 else "")
    note = (
        f"quick: the change reached {len(reached)} row(s) ({shown}); the oracle test ran on the work tree, "
        "without the harness, the clean run, the hidden and the behaviour phases (CI runs them)"
    )
    return RunsFound(
        [note, *outcomes.notes, outcome_check], ids=expected_ids(inputs.judged.oracles), workspace=outcomes
    )


def _clean_and_hidden(
    inputs: Inputs,
    options: CheckOptions,
    phases: Phases,
    plan: hidden.HiddenPlan,
    outcomes: Outcomes,
    salted: frozenset[str],
) -> RunsFound:
    """Check 6 and the hidden samples: with `clean`, the clean run (which reads the workspace run:
    what it blocked, its outcomes and targets) compared with the workspace run, then the hidden
    phase; the `hidden samples` check in every case but a clean run that could not run."""
    observed = outcomes.observed
    run = outcomes.run
    if options.clean and run is not None and run.failure is not None and run.failure.setup:
        return RunsFound(
            [
                "clean run: not run, the workspace run could not be set up"
                if oracle_refusal(run.failure) is None
                else "clean run: not run, the oracles did not build"
            ]
        )
    if not options.clean or plan.violations:
        check, not_run = hidden_findings(plan, None, observed)
        note = ["clean run: not run, it cannot be given the hidden samples its rows name (see `hidden samples`)"]
        return RunsFound([*(note if options.clean else []), *([check] if check else [])], hidden_not_run=not_run)
    try:
        with phases.phase("clean run", announce=True):
            clean = run_clean(
                inputs,
                options.clean_runner or default_clean_runner(options.salt, salted),
                options.environ,
                remote=options.remote,
                workspace=run,
            )
    except GateError as exc:
        # The workspace run's findings stay in the report; the clean run's reason is its one line.
        if exc.code != errors.UNDECIDED:
            raise
        return RunsFound(
            [
                Findings(
                    "clean run", (Violation(errors.UNDECIDED, "bazel", "", f"the clean run could not run: {exc}"),), ""
                )
            ]
        )
    agrees = check_clean_run(outcomes, clean, labelled=inputs.labelled, remote=options.remote, salt=options.salt)
    ran = run_hidden(inputs, plan, options.environ, run, phases=phases, runner=default_hidden_runner)
    check, not_run = hidden_findings(plan, ran.words, {**observed, **clean.observed}, ran.problems)
    return RunsFound([agrees, *([check] if check else [])], clean=clean, hidden=ran, hidden_not_run=not_run)


def _report(
    inputs: Inputs,
    options: CheckOptions,
    phases: Phases,
    found: list[ReportItem],
    ran: RunsFound,
    changes: list[RowChange],
) -> Report:
    """The report of one check, built once from what its steps returned (`found` in report order).
    The per-id tables show what the oracle test reported whether or not it was judged."""
    summary = summarize(found)
    workspace = ran.workspace.run if ran.workspace is not None else None
    observed = dict(ran.workspace.observed) if ran.workspace is not None else {}
    summaries = {name: run.summary for name, run in (("workspace", workspace), ("clean", ran.clean)) if run is not None}
    if ran.hidden.summary is not None:
        summaries["hidden"] = ran.hidden.summary
    clean = ran.clean
    return Report(
        inputs.base,
        inputs.tip,
        inputs.merge_base.commit,
        inputs.head.commit,
        sorted(inputs.labels),
        merged=inputs.judged.commit,
        head_only=inputs.head_only,
        claims=inputs.claims.commit,
        checks=summary.checks,
        violations=summary.violations,
        notes=summary.notes,
        outcomes={ident: o.outcome for ident, o in observed.items()},
        invariants=list(ran.ids),
        clean_outcomes={ident: o.outcome for ident, o in clean.observed.items()} if clean is not None else None,
        summaries=summaries,
        salt=options.salt,
        observed=observed,
        clean_observed=clean.observed if clean is not None else None,
        clean_boundary=clean.boundary if clean is not None else None,
        workspace_boundary=workspace.boundary if workspace is not None else "",
        unsealed=workspace.unsealed if workspace is not None else "",
        spec_changes=changes,
        phases=phases,
        coverage=ran.coverage,
        hidden_not_run=ran.hidden_not_run,
        kept_failed=sorted(
            {v.id for item in found if isinstance(item, Findings) and item.name == KEPT_CHECK for v in item.violations}
        ),
        approved=inputs.label if inputs.labelled else "",
        sources={inv.id: inv.source for inv in (*inputs.judged.oracles.invariants, *inputs.head.oracles.invariants)},
    )
