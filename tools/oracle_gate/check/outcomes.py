"""Checks 4-6 of `check` on what ran, as pure functions of data (no Bazel, no git): the oracle
test's outcomes and the harness (exit 4), the clean run against the workspace run (exit 6), the
coverage signal (docs/design.md section 12) and the rows' hidden parts (check/hidden.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.check import hidden
from tools.oracle_gate.check.coverage import (
    NOT_MEASURED_INVALID,
    NOT_MEASURED_NOT_RUN,
    NOT_MEASURED_RESULTS,
    changed_functions,
    measure,
    not_read_note,
    uncovered_setting,
    unread_packages,
)
from tools.oracle_gate.check.findings import Findings, Outcomes, ReportItem
from tools.oracle_gate.check.inputs import Inputs
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.events import BuildFailure, is_oracle_target
from tools.oracle_gate.runs.results import EXECUTED, PASSED, Observed, differences
from tools.oracle_gate.suite.loader import Oracles
from tools.oracle_gate.text import one_line


def expected_ids(head: Oracles) -> list[str]:
    """The ids that must have a passing outcome: HEAD's valid rows, or, when no row is valid, every
    id HEAD declares (so that invalid oracles still show what the results say of them)."""
    return sorted(inv.id for inv in head.invariants) or sorted(head.declared_ids)


def check_outcomes(inputs: Inputs, outcomes: Outcomes, *, salt: str = "") -> Findings:
    """Exit 4 for each expected id (`expected_ids`) without a passing outcome, and first for a
    workspace run that did not build; a note names ids the results report but no oracle declares.

    A failure names the result file it was read from when the operator gave the results, and the
    salt of the run's generated samples when there is one.
    """
    ids = expected_ids(inputs.judged.oracles)
    sources = {inv.id: inv.source for inv in inputs.judged.oracles.invariants}
    observed = outcomes.observed
    from_files = outcomes.run is None
    found: list[Violation] = []
    if outcomes.run is not None and outcomes.run.build_failed:
        failed = build_violation(outcomes.run, "workspace run", [c.path for c in inputs.changes])
        if failed.code in (errors.UNDECIDED, errors.INVALID_ORACLE):
            # Nothing of the change was judged: no id is the change's failure.
            why = "the run was not set up" if failed.code == errors.UNDECIDED else "the oracles did not build"
            return Findings("invariant outcomes", (failed,), f"0 of {len(ids)} invariant(s) judged: {why}")
        found.append(failed)
    for ident in ids:
        result = observed.get(ident)
        where = sources.get(ident, "oracles/")
        if result is None:
            found.append(
                Violation(
                    errors.NO_OUTCOME, where, ident, f"no outcome in {outcomes.source}; the oracle test must run it"
                )
            )
        elif result.outcome not in EXECUTED:
            found.append(
                Violation(
                    errors.NO_OUTCOME,
                    where,
                    ident,
                    f"{result.outcome}, not executed; that is not coverage{_origin(result, from_files)}",
                )
            )
        elif result.outcome != PASSED:
            why = result.message
            found.append(
                Violation(
                    errors.NO_OUTCOME,
                    where,
                    ident,
                    "failed: the invariant does not hold"
                    + (f": {one_line(why)}" if why else "")
                    + _origin(result, from_files)
                    + (f" (salt {salt})" if salt else ""),
                )
            )
    unknown = sorted(set(observed) - set(ids))
    passed = sum(1 for i in ids if i in observed and observed[i].outcome == PASSED)
    return Findings(
        "invariant outcomes",
        tuple(found),
        f"{passed} of {len(ids)} invariant(s) passed ({outcomes.source})",
        (f"results name ids no oracle declares: {', '.join(unknown)}",) if unknown else (),
    )


def build_violation(run: BazelRun, where: str, changed: Sequence[str] = ()) -> Violation:
    """The violation of a run that did not build (`run.build_failed`): exit 5 when the gate's own
    targets refused the oracles (`oracle_refusal`); exit 1 when the cause is not
    the change's (`BazelRun.failure.setup`: an external repository that cannot be fetched, Bazel
    ending early, the gate's own targets), naming the root cause and Bazel's first real error line;
    else exit 4, the change's targets did not build. An external repository whose error names a
    file the change modified (`changed`, repository-relative paths; by path or as a label, such as
    a lock file its repository rule refused) is the change's too: Bazel's events do not say which
    files a repository rule read, its error message does."""
    failure = run.failure
    refused = oracle_refusal(failure)
    if refused is not None:
        return refused
    cause = failure.line() if failure is not None else "see Bazel's output"
    named = [
        path
        for path in changed
        if failure is not None and failure.label.startswith("@") and _names_path(failure.message, path)
    ]
    if failure is not None and failure.setup and named:
        return Violation(
            errors.NO_OUTCOME,
            named[0],
            "",
            f"the change's {named[0]} breaks external repository {failure.label} in the {where}: {failure.message}",
        )
    if failure is not None and failure.setup:
        return Violation(
            errors.UNDECIDED,
            "bazel",
            "",
            f"the {where} could not be set up, not the change's doing: {cause}; "
            "fix the environment (network, toolchains, the base's WORKSPACE or MODULE.bazel) and run again",
        )
    package = failure.label[2:].split(":", 1)[0] if failure is not None and failure.label.startswith("//") else ""
    hint = (
        ""
        if failure is not None and failure.message
        else " (an action or test that cannot run sandboxed, e.g. tagged local or no-sandbox, fails too)"
    )
    return Violation(
        errors.NO_OUTCOME,
        f"{package}/" if package else "oracles/",
        "",
        f"the change's targets did not build in the {where}: {cause}{hint}",
    )


# How the gate's actions and rules start an exit-5 reason (errors.error_line).
_INVALID_ORACLE_MARK = f"{errors.PREFIX} [{errors.INVALID_ORACLE}] "


def oracle_refusal(failure: BuildFailure | None) -> Violation | None:
    """Exit 5 for a failure of the gate's own targets (`bazel_run.gate_failure`: set up, an
    `oracles` target) whose reason is an `oracle-gate: [5] ...` line, read from a gate action's
    stderr or Starlark's `fail()` (`events.build_failure`): a broken reference (the reference check)
    or a reference library that reaches outside oracles/ (`oracle_suite`). The oracles are invalid,
    not the environment. The line's leading `oracles/...` path, if any, is the violation's path.
    None for any other failure."""
    if failure is None or not failure.setup or not is_oracle_target(failure.label):
        return None
    _, mark, reason = failure.message.partition(_INVALID_ORACLE_MARK)
    if not mark or not reason.strip():
        return None
    head, sep, rest = reason.partition(": ")
    if sep and head.startswith("oracles/") and " " not in head:
        return Violation(errors.INVALID_ORACLE, head, "", rest)
    return Violation(errors.INVALID_ORACLE, "oracles/", "", reason)


def _names_path(message: str, path: str) -> bool:
    """True when `message` names the repository file `path` by path or as a label (`//dir:name`)."""
    folder, _, name = path.rpartition("/")
    return path in message or f"//{folder}:{name}" in message


def _origin(found: Observed, from_files: bool) -> str:
    """` (from FILE)`: the result file an outcome was read from, when the operator gave the results
    (a test-log directory holds many; the gate's own runs say which run instead)."""
    return f" (from {found.source})" if from_files and found.source else ""


def check_harness(run: BazelRun) -> Findings:
    """Exit 4 for each harness test target that did not pass and each spawn that ran where the
    gate does not allow it, in the workspace run."""
    passed = [t for t in run.targets if t not in run.harness_failures() and not t.startswith("//oracles")]
    return Findings(
        "harness tests",
        tuple(harness_violations(run, "workspace") + escape_violations(run, "workspace")),
        f"{len(passed)} target(s) passed, none ran unsandboxed",
    )


def harness_violations(run: BazelRun, where: str) -> list[Violation]:
    """One exit-4 violation per harness test target that did not pass: the change's own tests must
    pass in every run, though they never decide an invariant."""
    return [
        Violation(
            errors.NO_OUTCOME, "harness/", "", f"{label} {status} in the {where} run: the harness's own tests must pass"
        )
        for label, status in run.harness_failures().items()
    ]


def escape_violations(run: BazelRun, where: str) -> list[Violation]:
    """One exit-4 violation per spawn that ran where the gate does not allow it (execlog.py,
    bazel_run.run_bazel), and per target outside the oracles package that depends on it
    (`launch.Launcher.oracle_dependents`): no result of such a run counts."""
    return [
        Violation(
            errors.NO_OUTCOME,
            "harness/",
            "",
            f"{escape.describe()} in the {where} run: the change's code runs "
            "sandboxed and only the gate's own actions run in its invocations, so no result of this run counts",
        )
        for escape in run.escapes
    ] + [
        Violation(
            errors.NO_OUTCOME,
            "harness/",
            "",
            f"{label} depends on the oracles package ({where} run): only the "
            "gate's own targets may carry oracle files, so the gate ran nothing",
        )
        for label in run.oracle_dependents
    ]


def withhold_while_invalid(
    inputs: Inputs, outcomes: Findings, harness: Findings | None
) -> tuple[Findings, Findings | None]:
    """Outcomes are not judged while the oracles are invalid.

    With invalid oracles the harness cannot run what they claim (the build's pin check fails it
    first); the exit-5 lines of `check_oracle_files` are the cause. So the outcome and harness
    violations become notes (`not judged while the oracles are invalid: ...`), after the outcome
    check's own notes, and both checks pass; the outcomes are still shown.
    """
    if not inputs.judged.oracles.problems:
        return outcomes, harness
    held = outcomes.violations + (harness.violations if harness is not None else ())
    notes = outcomes.notes + tuple(f"not judged while the oracles are invalid: {_held_line(v)}" for v in held)
    return (
        replace(outcomes, violations=(), notes=notes, detail="not judged: the oracle files are invalid (exit 5)"),
        replace(harness, violations=()) if harness is not None else None,
    )


def _held_line(violation: Violation) -> str:
    """A withheld violation's line; a set-up failure (exit 1) of the run, which invalid oracles
    cause themselves (the pin check fails the build), without the advice to fix the environment."""
    if violation.code == errors.UNDECIDED and violation.path == "bazel":
        return "the run did not build: the gate's pin check stops at invalid oracle files"
    return violation.line()


def check_clean_run(workspace: Outcomes, clean: BazelRun, *, labelled: bool, remote: bool, salt: str = "") -> Findings:
    """Exit 6 when the clean run disagrees with the workspace run (docs/design.md sections 7 and 9).

    Every id whose outcome or observation digest differs (`results.differences`), first a clean run
    that did not build, then every test target whose status differs (when the gate ran the
    workspace run), then each spawn of the clean run that ran where the gate does not allow it
    (exit 4). `labelled` says whose oracles the clean run used (`run_clean`).
    """
    clean_observed = clean.observed
    where = "remote" if remote else "sandboxed"
    salt_note = f" (salt {salt})" if salt else ""
    found = [
        Violation(
            errors.RUNS_DISAGREE,
            "oracles/",
            d.id,
            f"workspace run {d.left}, clean {where} run {d.right}: {d.reason}{salt_note}; the result depends "
            "on something outside the declared, committed inputs",
        )
        for d in differences(dict(workspace.observed), clean_observed)
    ]
    if clean.build_failed:
        failed = build_violation(clean, f"clean {where} run")
        # The change's targets: the runs disagree on what builds.
        if failed.code not in (errors.UNDECIDED, errors.INVALID_ORACLE):
            failed = Violation(
                errors.RUNS_DISAGREE,
                "oracles/",
                "",
                f"the clean run did not build: {clean.failure.line() if clean.failure else 'see its output'}",
            )
        found.insert(0, failed)
    run = workspace.run
    if run is not None:
        for label in sorted(set(run.targets) | set(clean.targets)):
            left, right = run.targets.get(label, "missing"), clean.targets.get(label, "missing")
            if left != right:
                found.append(
                    Violation(
                        errors.RUNS_DISAGREE,
                        "harness/",
                        "",
                        f"{label}: workspace run {left}, clean {where} run {right}",
                    )
                )
    found.extend(escape_violations(clean, f"clean {where}"))
    source_note = "the judged commit's oracles (labelled change)" if labelled else "the base's oracles"
    failing = sum(1 for observed in clean_observed.values() if observed.outcome != PASSED)
    # On a failing change the check still passes when the runs agree: the detail says what held.
    return Findings(
        "clean run",
        tuple(found),
        f"agrees with the workspace run: {len(clean_observed)} id(s), same outcomes and observation "
        f"digests ({where}, {source_note})" + (f"; {failing} failed in both runs" if failing else ""),
    )


def coverage_findings(inputs: Inputs, outcomes: Outcomes | None) -> tuple[list[ReportItem], dict[str, Any] | None]:
    """The coverage signal (docs/design.md section 12): the production functions the change added
    or changed (`coverage.changed_functions`: what landing it changes, the claims commit -> the
    judged commit, which is the merge base -> HEAD when HEAD is judged) held against the coverage
    records of the workspace run's rows.

    Args:
        inputs: what is judged; the production packages are those of the policies in force and
            judged, the setting the stricter of their `uncovered_changes` (`uncovered_setting`).
        outcomes: the oracle test's outcomes; None when Bazel did not run. Outcomes from result
            files (`outcomes.run` None), invalid oracles or results without any record are "not
            measured": a note, never a violation. Measured, each function no row entered is a note,
            or with `uncovered_changes = "fail"` an exit-4 violation.

    Returns:
        (report items: a note for production packages that cannot be read, then the check
        `changed functions` when the change modified any function; `--format json`'s `coverage`,
        None when it modified none). Raises nothing: a file git cannot show at a commit counts as
        empty there.
    """
    policies = [o.policy for o in (inputs.claims.oracles, inputs.judged.oracles) if o.policy is not None]
    packages = sorted({name for policy in policies for name in policy.production_packages})
    changes = inputs.merge_changes if inputs.is_merge else inputs.changes
    changed = changed_functions(
        inputs.repo, inputs.claims.commit, inputs.judged.commit, [c.path for c in changes], packages
    )
    why = (
        NOT_MEASURED_NOT_RUN
        if outcomes is None
        else NOT_MEASURED_RESULTS
        if outcomes.run is None
        else NOT_MEASURED_INVALID
        if inputs.judged.oracles.problems
        else ""
    )
    found = measure(
        changed, outcomes.observed if outcomes is not None else {}, setting=uncovered_setting(policies), why=why
    )
    unread = unread_packages(inputs.repo, packages)
    items: list[ReportItem] = [not_read_note(unread)] if unread else []
    if not found.modified:
        return items, None
    items.append(Findings("changed functions", tuple(found.violations()), found.detail(), tuple(found.notes())))
    return items, found.to_json()


def hidden_findings(
    plan: hidden.HiddenPlan,
    words: Mapping[str, str] | None,
    observed: Mapping[str, Observed],
    problems: Sequence[Violation] = (),
) -> tuple[Findings | None, list[str]]:
    """The `hidden samples` check of the rows with a `hidden_sha256` (hidden.py), and the ids whose
    hidden part did not run, sorted; (None, []) when no row has one. The check holds what the store
    could not give (exit 1 when required, else notes), what stopped the hidden phase (`problems`),
    and each hidden part the phase failed (`words`: id -> word, None when it did not run; exit 4,
    naming only the row). Raises nothing."""
    if not plan.rows:
        return None, []
    found, detail = hidden.judge(plan, None if problems else words, observed)
    not_run = sorted(set(plan.rows) - set(plan.delivered))
    return (
        Findings(
            "hidden samples",
            (*plan.violations, *problems, *found),
            detail,
            tuple(plan.notes),
            not_run=bool(not_run) and not plan.delivered,
        ),
        not_run,
    )
