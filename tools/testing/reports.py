"""A finished check's report of real commits, for the tests of the statement `check --attest`
writes and `verify` checks (unit/test_statement.py, unit/test_verify.py)."""

from __future__ import annotations

import datetime

from tools.oracle_gate.check.findings import CheckLine, Report
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.runs.results import Observed
from tools.testing.gitrepo import GitRepo

NOW = datetime.datetime(2026, 12, 7, 10, 30, 15, 123456, tzinfo=datetime.UTC)
SECRET = "hidden-expected-value-4711"


def report_of(project: GitRepo, *, failed: bool = False, **extra: object) -> Report:
    """A finished check of `project`'s HEAD against main, as run_check builds it."""
    head = project.git("rev-parse", "HEAD").strip()
    tip = project.git("rev-parse", "main").strip()
    observed = {
        "a": Observed("failed" if failed else "passed", "1" * 64, message=SECRET),
        "b": Observed("passed", "2" * 64, hidden="clean run only"),
    }
    return Report(
        "main",
        tip,
        tip,
        head,
        [],
        merged=head,
        claims=tip,
        checks=[CheckLine("protected paths", True, "ok"), CheckLine("invariant outcomes", not failed, "x")],
        violations=[Violation(4, "oracles/shop.toml", "a", f"failed: {SECRET}")] if failed else [],
        invariants=["a", "b"],
        salt="abc123",
        observed=observed,
        **{  # type: ignore[arg-type]
            "clean_observed": {"a": Observed("passed", "1" * 64), "b": Observed("passed", "2" * 64, hidden="passed")},
            **extra,
        },
    )
