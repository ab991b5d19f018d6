"""The behaviour phase's run and report: both sides through the probe, then the `behaviour kept`
check (the `back_to_back` rows) and the `behaviour diff` (check/behaviour.py plans and compares;
docs/oracles.md, "Behaviour kept" and "The behaviour diff")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import UNCOVERED_FAIL, UNCOVERED_NOTE
from tools.oracle_gate.check import behaviour
from tools.oracle_gate.check.behaviour import DIFF_SAMPLES, Compared, Plan, ProbeRunner
from tools.oracle_gate.check.coverage import changed_functions
from tools.oracle_gate.check.findings import Findings, ReportItem
from tools.oracle_gate.check.inputs import Inputs
from tools.oracle_gate.errors import GateError, Violation
from tools.oracle_gate.progress import Phases
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.suite.probe_files import probe_oracles

KEPT_CHECK = "behaviour kept"
DIFF_CHECK = "behaviour diff"
BOOTSTRAP_NOTE = (
    "behaviour phase: not run: the base predates the gate (bootstrap), so there is no base tip to compare "
    "with; back_to_back rows and the behaviour diff apply from the next change on"
)
KEPT_DOC = 'docs/oracles.md, "Behaviour kept"'
# Why the phase did not run when `check` was given no probe (a caller of `run_check` that runs no Bazel).
NO_RUNNER = "the behaviour phase did not run (a check given --results runs nothing itself); run check without --results"


def plan_phase(inputs: Inputs, salt: str, diff: bool = True) -> Plan:
    """The rows and functions the phase compares (`behaviour.kept_rows`, `behaviour.diff_rows`) for
    the claims in force and, with `diff`, the functions the change modified (without it, the rows
    only: a check that runs no probe reports no diff). Raises nothing."""
    side = inputs.judged if inputs.labelled else inputs.claims
    if not diff:
        return Plan(rows=behaviour.kept_rows(inputs, side, salt))
    packages = _packages(inputs)
    changes = inputs.merge_changes if inputs.is_merge else inputs.changes
    modified = changed_functions(
        inputs.repo, inputs.claims.commit, inputs.judged.commit, [c.path for c in changes], packages
    )
    plan = behaviour.diff_rows(inputs, modified, packages, salt)
    plan.rows = behaviour.kept_rows(inputs, side, salt)
    return plan


def _packages(inputs: Inputs) -> list[str]:
    policies = [o.policy for o in (inputs.claims.oracles, inputs.judged.oracles) if o.policy is not None]
    return sorted({name for policy in policies for name in policy.production_packages})


def behaviour_findings(
    inputs: Inputs,
    salt: str,
    environ: Mapping[str, str],
    runner: ProbeRunner | None,
    phases: Phases,
    run_digests: Mapping[str, str] | None = None,
) -> list[ReportItem]:
    """The phase's report items: `behaviour kept` when the claims have `back_to_back` rows, then
    `behaviour diff` when the change modified a production function; [] when neither; when the base
    predates the gate, nothing but a note (BOOTSTRAP_NOTE) if the change brings `back_to_back` rows.

    Args:
        inputs: what is judged.
        salt: the run's salt (the rows' generated samples are those the runs drew).
        environ: the gate's environment, for the probe.
        runner: the probe (runs/probe.py `probe`), or None when this check runs none: then each
            `back_to_back` row is an exit-1 violation and there is no diff.
        phases: times the phase.
        run_digests: id -> the workspace run's observation digest of each row; a `back_to_back`
            row whose results in the judged commit's probe differ from them is exit 6 (the code
            behaves otherwise in the probe than in the run).

    Raises:
        GateError: as the runner raises, but exit 1 (which becomes the phase's failure).
    """
    if inputs.bootstrap:
        # The base predates the gate: it is no workspace the probe can build, and no claim of its
        # is in force. The change that adopts the gate is compared from the next change on.
        kept = any(kinds.kind(inv.kind).base_judged for inv in inputs.judged.oracles.invariants)
        return [BOOTSTRAP_NOTE] if kept else []
    plan = plan_phase(inputs, salt, diff=runner is not None)
    if not plan.rows and not plan.functions and not plan.not_measured:
        return []
    compared, failure = _run(inputs, plan, environ, runner, phases)
    rows = [compared.get(inv.id) or Compared(inv.id, inv.source, failure=failure) for inv, _ in plan.rows]
    functions = [
        compared.get(row.id) or Compared(found.entry, found.path, failure=failure) for found, row in plan.functions
    ]
    items: list[ReportItem] = []
    if plan.rows:
        changed = {c.name: c for c in functions if c.differing}
        by_entry = {inv.id: changed[inv.entry] for inv, _ in plan.rows if inv.entry in changed}
        items.append(_kept(rows, bool(failure), run_digests or {}, by_entry))
    if (plan.functions or plan.not_measured) and runner is not None:
        items.append(_diff(inputs, plan, functions, bool(failure)))
    return items


def _run(
    inputs: Inputs, plan: Plan, environ: Mapping[str, str], runner: ProbeRunner | None, phases: Phases
) -> tuple[dict[str, Compared], str]:
    """(probe row id -> Compared, why the phase could not run or "")."""
    if runner is None:
        return {}, NO_RUNNER
    if not plan.probe_rows:
        return {}, ""
    side = inputs.judged if inputs.labelled else inputs.claims
    base_files = {p: side.tree.read(e) for p, e in side.listing.items() if p.startswith("oracles/") and e.is_regular}
    files = probe_oracles(base_files, plan.probe_rows)
    try:
        with phases.phase("behaviour phase", announce=True):
            # The base tip first: nothing the change's code does in its own probe can reach it.
            base = runner(inputs.repo, inputs.claims.commit, files, environ, "base")
            judged = runner(inputs.repo, inputs.judged.commit, files, environ, "judged")
    except GateError as exc:
        if exc.code != errors.UNDECIDED:
            raise
        return {}, f"the behaviour phase could not run: {exc}"
    except OSError as exc:
        return {}, f"the behaviour phase could not run: {exc.strerror or exc}"
    out: dict[str, Compared] = {}
    for inv, row in plan.rows:
        out[row.id] = behaviour.compare(inv.id, inv.source, row, judged.get(row.id), base.get(row.id))
    for found, row in plan.functions:
        out[row.id] = behaviour.compare(found.entry, found.path, row, judged.get(row.id), base.get(row.id))
    return out, ""


def _kept(
    rows: Sequence[Compared],
    undecided: bool,
    run_digests: Mapping[str, str],
    diffs: Mapping[str, Compared] | None = None,
) -> Findings:
    """The `behaviour kept` check: exit 4 for a row whose results differ from the base tip's or that
    could not run on a side, and for a row whose entry the behaviour diff found changed on inputs of
    its own (`diffs`: row id -> its entry's diff, when that differs; the row claims the entry's
    behaviour kept, whatever the input); exit 6 for one whose results in the probe are not the
    run's; exit 1 for every row when the phase could not run."""
    found = []
    for c in rows:
        ran = run_digests.get(c.name, "")
        diff = (diffs or {}).get(c.name)
        if diff is not None and not c.failure and not c.differing:
            shown = "; ".join(diff.shown) + ("; ..." if diff.differing > len(diff.shown) else "")
            why = (
                f"behaviour changed on {diff.differing} of {diff.total} inputs of the behaviour diff of "
                f"{diff.name}: {shown} ({KEPT_DOC})"
            )
            found.append(Violation(errors.NO_OUTCOME, c.source, c.name, why))
        elif c.failure:
            code = errors.UNDECIDED if undecided else errors.NO_OUTCOME
            found.append(Violation(code, c.source, c.name, f"not compared with the base tip: {c.failure}"))
        elif c.differing:
            shown = "; ".join(c.shown) + ("; ..." if c.differing > len(c.shown) else "")
            why = f"behaviour changed on {c.differing} of {c.total} samples: {shown} ({KEPT_DOC})"
            found.append(Violation(errors.NO_OUTCOME, c.source, c.name, why))
        elif ran and c.digest and ran != c.digest:
            why = (
                f"the judged commit's results in the behaviour phase (observation digest {c.digest[:12]}) are not "
                f"those of the workspace run ({ran[:12]}) on the same samples: the code behaves otherwise there"
            )
            found.append(Violation(errors.RUNS_DISAGREE, c.source, c.name, why))
    total = sum(c.total for c in rows)
    return Findings(KEPT_CHECK, tuple(found), f"{len(rows)} row(s) return what the base tip returns on {total} samples")


def _diff(inputs: Inputs, plan: Plan, functions: Sequence[Compared], undecided: bool) -> Findings:
    """The `behaviour diff`: a note per function whose results differ, that could not be compared
    or that is not measured. With `behaviour_changes = "fail"` and without the label, for a public
    function no row of the claims names as its entry: exit 4 when its results differ, the judged
    commit's side failed, its parameters changed or it was removed; exit 1 when the phase could
    not run."""
    claimed = {e for inv in inputs.claims.oracles.invariants for e in (inv.entry, *inv.entries) if e}
    fail = _setting(inputs) == UNCOVERED_FAIL and not inputs.labelled
    notes: list[str] = []
    found: list[Violation] = []

    def strict(name: str, path: str, line: str, code: int = errors.NO_OUTCOME) -> None:
        public = not any(part.startswith("_") for part in name.partition(":")[2].split("."))
        if fail and public and name not in claimed:
            found.append(Violation(code, path, name, line + ' (behaviour_changes = "fail")'))

    for c in functions:
        if c.failure:
            notes.append(f"behaviour diff: {c.name}: not compared: {c.failure}")
            if undecided or c.failure.startswith("the judged commit"):
                strict(c.name, c.source, notes[-1], errors.UNDECIDED if undecided else errors.NO_OUTCOME)
        elif c.differing:
            notes.append(f"behaviour changed: {c.name} on {c.differing} of {c.total} inputs: {'; '.join(c.shown)}")
            strict(c.name, c.source, notes[-1])
    for item in plan.not_measured:
        notes.append(f"behaviour diff: not measured: {item.found.entry}: {item.why}")
        if item.change:
            strict(item.found.entry, item.found.path, notes[-1])
    compared = [c for c in functions if not c.failure]
    changed = sum(1 for c in compared if c.differing)
    detail = f"{len(compared)} function(s) compared on up to {DIFF_SAMPLES} inputs, {changed} changed behaviour"
    return Findings(DIFF_CHECK, tuple(found), detail, tuple(notes))


def _setting(inputs: Inputs) -> str:
    """The stricter `behaviour_changes` of the policies in force and judged."""
    policies = [o.policy for o in (inputs.claims.oracles, inputs.judged.oracles) if o.policy is not None]
    return UNCOVERED_FAIL if any(p.behaviour_changes == UNCOVERED_FAIL for p in policies) else UNCOVERED_NOTE


def probe_runner() -> ProbeRunner:
    """The real probe (runs/probe.py), as `check` runs it: the base tip's in its kept folder
    (`probe-base`), whose Bazel server the next check of the repository finds warm; the judged
    commit's in a fresh root, removed at the end. A kept root where a change's code ran would carry
    what that code left (its root's /tmp, outputs in the output base) to the next change's probe,
    and nothing else checks the phase's results in a fresh root (docs/threat-model.md)."""
    from tools.oracle_gate.runs.probe import probe

    def run(
        repo: str, commit: str, files: Mapping[str, bytes], environ: Mapping[str, str], side: str
    ) -> Mapping[str, Any]:
        return probe(repo, commit, files, environ, kept_as="probe-base" if side == "base" else "")

    return run
