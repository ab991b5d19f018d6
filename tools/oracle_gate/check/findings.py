"""What `check` found, as records: each check's `Findings`, the summary's `CheckLine`s, the oracle
test's `Outcomes`, and the `Report` that `run_check` builds from them once, at the end.

The checks return values; nothing here runs a check, and `report.py` renders a `Report` from this
module alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.progress import Phases
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.results import Observed
from tools.oracle_gate.suite.spec_changes import RowChange

NOT_RUN = "not run: protected paths changed without the label"


@dataclass
class CheckLine:
    """One line of the per-check summary: name, `ok`/`FAIL` (or `NOT RUN`: `ok` and `not_run`, a
    check that fails nothing but did not run), a short detail, and the check's violations (for
    reports that group them by check, such as `--junit`)."""

    name: str
    ok: bool
    detail: str
    violations: tuple[Violation, ...] = ()
    not_run: bool = False

    @property
    def status(self) -> str:
        """The summary's word: `ok`, `FAIL` or `NOT RUN`."""
        return "FAIL" if not self.ok else "NOT RUN" if self.not_run else "ok"


@dataclass(frozen=True)
class Findings:
    """What one check found.

    Attributes:
        name: the check's name in the summary.
        violations: what fails the gate, in report order.
        detail: the summary's detail when there is no violation.
        notes: report lines that do not fail the gate, in report order.
        not_run: with no violation, the check did not run (`NOT RUN` in the summary, not `ok`).
    """

    name: str
    violations: tuple[Violation, ...]
    detail: str
    notes: tuple[str, ...] = ()
    not_run: bool = False

    def line(self) -> CheckLine:
        """The summary line of this check: FAIL with the count of violations, else its detail."""
        if self.violations:
            return CheckLine(self.name, False, f"{len(self.violations)} violation(s)", self.violations)
        return CheckLine(self.name, True, self.detail, not_run=self.not_run)


# One item of the report, in report order: a check's findings, a summary line that is no check's
# findings (the outcome check that did not run), or a note.
ReportItem = Findings | CheckLine | str


@dataclass(frozen=True)
class Summary:
    """The report's checks, violations and notes, in the order they were found (`summarize`)."""

    checks: list[CheckLine]
    violations: list[Violation]
    notes: list[str]


def summarize(found: Iterable[ReportItem]) -> Summary:
    """The summary lines, violations and notes of `found`, in order: a `Findings` gives its
    violations, its notes and its line; a `CheckLine` its line; a `str` a note. Raises nothing."""
    out = Summary([], [], [])
    for item in found:
        if isinstance(item, str):
            out.notes.append(item)
        elif isinstance(item, CheckLine):
            out.checks.append(item)
        else:
            out.violations.extend(item.violations)
            out.notes.extend(item.notes)
            out.checks.append(item.line())
    return out


@dataclass(frozen=True)
class Outcomes:
    """The oracle test's per-id results, however they were gathered (`runs.read_outcomes`,
    `runs.run_workspace`).

    Attributes:
        observed: id -> what the oracle test reported.
        source: where they came from, for messages: `N result file(s)` or `the oracle test`.
        notes: report lines about gathering them: ignored testcases, a work tree that differs from HEAD.
        run: the workspace run when the gate ran Bazel; None when the operator gave result files.
    """

    observed: Mapping[str, Observed]
    source: str
    notes: tuple[str, ...] = ()
    run: BazelRun | None = None


@dataclass
class Report:
    """Everything `check` found; `exit_code` is the lowest violation code, or 0.

    `tip` is the base tip (`base_commit` in `--format json`); `merged` the commit judged (HEAD
    itself when it contains the tip or with `head_only`, else the merge result the gate made);
    `claims` the commit whose oracles are in force without the label (the tip, or the merge base
    with `head_only`). `approved` is the policy's label when the change carries it (an oracle change
    approved), else "". `run_check` builds it once, from what the checks returned.
    """

    base: str
    tip: str
    merge_base: str
    head: str
    labels: list[str]
    merged: str = ""
    head_only: bool = False
    claims: str = ""
    checks: list[CheckLine] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    invariants: list[str] = field(default_factory=list)
    clean_outcomes: dict[str, str] | None = None
    summaries: dict[str, list[str]] = field(default_factory=dict)
    salt: str = ""
    observed: dict[str, Observed] = field(default_factory=dict)
    clean_observed: dict[str, Observed] | None = None
    clean_boundary: str | None = None
    workspace_boundary: str = ""
    unsealed: str = ""
    spec_changes: list[RowChange] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    phases: Phases = field(default_factory=Phases)
    bazel_log: str = ""
    coverage: dict[str, Any] | None = None
    hidden_not_run: list[str] = field(default_factory=list)
    kept_failed: list[str] = field(default_factory=list)
    approved: str = ""

    @property
    def exit_code(self) -> int:
        """The lowest code among the violations (docs/design.md section 6), 0 when there are none."""
        return min((v.code for v in self.violations), default=errors.OK)

    @property
    def merge_result(self) -> str:
        """The merge result the gate judged, or "" when it judged HEAD itself."""
        return self.merged if self.merged and self.merged != self.head else ""
