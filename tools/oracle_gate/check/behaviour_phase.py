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
from tools.oracle_gate.suite.probe_files import probe_oracles

KEPT_CHECK = "behaviour kept"
DIFF_CHECK = "behaviour diff"
# Why the phase did not run when `check` was given no probe (a caller of `run_check` that runs no Bazel).
NO_RUNNER = "the behaviour phase did not run (a check given --results runs nothing itself); run check without --results"


def plan_phase(inputs: Inputs, salt: str) -> Plan:
    """The rows and functions the phase compares (`behaviour.kept_rows`, `behaviour.diff_rows`) for
    the claims in force and the functions the change modified. Raises nothing."""
    side = inputs.judged if inputs.labelled else inputs.claims
    packages = _packages(inputs)
    changes = inputs.merge_changes if inputs.is_merge else inputs.changes
    modified = changed_functions(
        inputs.repo, inputs.claims.commit, inputs.judged.commit, [c.path for c in changes], packages
    )
    plan = behaviour.diff_rows(inputs, [f for f in modified if f.status != "removed"], packages, salt)
    plan.rows = behaviour.kept_rows(inputs, side, salt)
    return plan


def _packages(inputs: Inputs) -> list[str]:
    policies = [o.policy for o in (inputs.claims.oracles, inputs.judged.oracles) if o.policy is not None]
    return sorted({name for policy in policies for name in policy.production_packages})


def behaviour_findings(
    inputs: Inputs, salt: str, environ: Mapping[str, str], runner: ProbeRunner | None, phases: Phases
) -> list[ReportItem]:
    """The phase's report items: `behaviour kept` when the claims have `back_to_back` rows, then
    `behaviour diff` when the change modified a production function; [] when neither.

    Args:
        inputs: what is judged.
        salt: the run's salt (the rows' generated samples are those the runs drew).
        environ: the gate's environment, for the probe.
        runner: the probe (runs/probe.py `probe`), or None when this check runs none: then each
            `back_to_back` row is an exit-1 violation and there is no diff.
        phases: times the phase.

    Raises:
        GateError: as the runner raises, but exit 1 (which becomes the phase's failure).
    """
    plan = plan_phase(inputs, salt)
    if not plan.rows and not plan.functions and not plan.not_measured:
        return []
    compared, failure = _run(inputs, plan, environ, runner, phases)
    rows = [compared.get(inv.id) or Compared(inv.id, inv.source, failure=failure) for inv, _ in plan.rows]
    functions = [
        compared.get(row.id) or Compared(found.entry, found.path, failure=failure) for found, row in plan.functions
    ]
    items: list[ReportItem] = []
    if plan.rows:
        items.append(_kept(rows, bool(failure)))
    if (plan.functions or plan.not_measured) and runner is not None:
        items.append(_diff(inputs, plan, functions))
    return items


def _run(
    inputs: Inputs, plan: Plan, environ: Mapping[str, str], runner: ProbeRunner | None, phases: Phases
) -> tuple[dict[str, Compared], str]:
    """(probe row id -> Compared, why the phase could not run or "")."""
    if runner is None:
        return {}, NO_RUNNER
    side = inputs.judged if inputs.labelled else inputs.claims
    base_files = {p: side.tree.read(e) for p, e in side.listing.items() if p.startswith("oracles/") and e.is_regular}
    files = probe_oracles(base_files, plan.probe_rows)
    try:
        with phases.phase("behaviour phase", announce=True):
            # The base tip first: nothing the change's code does in its own probe can reach it.
            base = runner(inputs.repo, inputs.claims.commit, files, environ)
            judged = runner(inputs.repo, inputs.judged.commit, files, environ)
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


def _kept(rows: Sequence[Compared], undecided: bool) -> Findings:
    """The `behaviour kept` check: exit 4 for a row whose results differ from the base tip's or that
    could not run on a side; exit 1 for every row when the phase could not run."""
    found = []
    for c in rows:
        if c.failure:
            code = errors.UNDECIDED if undecided else errors.NO_OUTCOME
            found.append(Violation(code, c.source, c.name, f"not compared with the base tip: {c.failure}"))
        elif c.differing:
            shown = "; ".join(c.shown) + ("; ..." if c.differing > len(c.shown) else "")
            found.append(
                Violation(
                    errors.NO_OUTCOME,
                    c.source,
                    c.name,
                    f"behaviour changed on {c.differing} of {c.total} samples: {shown} "
                    '(docs/oracles.md, "Behaviour kept")',
                )
            )
    total = sum(c.total for c in rows)
    return Findings(KEPT_CHECK, tuple(found), f"{len(rows)} row(s) return what the base tip returns on {total} samples")


def _diff(inputs: Inputs, plan: Plan, functions: Sequence[Compared]) -> Findings:
    """The `behaviour diff`: a note per function whose results differ, could not be compared or is
    not measured; with `behaviour_changes = "fail"` and without the label, exit 4 for a differing
    function that no row of the claims names as its entry."""
    claimed = {e for inv in inputs.claims.oracles.invariants for e in (inv.entry, *inv.entries) if e}
    fail = _setting(inputs) == UNCOVERED_FAIL and not inputs.labelled
    notes: list[str] = []
    found: list[Violation] = []
    for c in functions:
        if c.failure:
            notes.append(f"behaviour diff: {c.name}: not compared: {c.failure}")
        elif c.differing:
            line = f"behaviour changed: {c.name} on {c.differing} of {c.total} inputs: {'; '.join(c.shown)}"
            notes.append(line)
            if fail and c.name not in claimed:
                found.append(Violation(errors.NO_OUTCOME, c.source, c.name, line + ' (behaviour_changes = "fail")'))
    notes.extend(f"behaviour diff: not measured: {why}" for why in plan.not_measured)
    changed = sum(1 for c in functions if c.differing)
    detail = f"{len(functions)} function(s) compared on up to {DIFF_SAMPLES} inputs, {changed} changed behaviour"
    return Findings(DIFF_CHECK, tuple(found), detail, tuple(notes))


def _setting(inputs: Inputs) -> str:
    """The stricter `behaviour_changes` of the policies in force and judged."""
    policies = [o.policy for o in (inputs.claims.oracles, inputs.judged.oracles) if o.policy is not None]
    return UNCOVERED_FAIL if any(p.behaviour_changes == UNCOVERED_FAIL for p in policies) else UNCOVERED_NOTE


def probe_runner() -> ProbeRunner:
    """The real probe (runs/probe.py), as `check` runs it."""
    from tools.oracle_gate.runs.probe import probe

    def run(repo: str, commit: str, files: Mapping[str, bytes], environ: Mapping[str, str]) -> Mapping[str, Any]:
        return probe(repo, commit, files, environ)

    return run
