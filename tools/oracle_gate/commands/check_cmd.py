"""`check`: prints the per-check summary (text or JSON) and returns the gate's exit code."""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
from collections.abc import Mapping

from tools.oracle_gate.check import Report, run_check
from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.gitio import default_base
from tools.oracle_gate.labels import collect_labels
from tools.oracle_gate.results import Observed
from tools.oracle_gate.text import visible

# A salt goes into `--define=oracle_salt=...`; keep it to characters no shell or Bazel treats specially.
SALT_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def choose_salt(given: str | None) -> str:
    """The run salt: `given` (a replay) when set, else 16 fresh hex digits from `secrets`.

    Raises:
        UsageError: (exit 1) for a salt outside SALT_PATTERN.
    """
    if given is None:
        return secrets.token_hex(8)
    if not SALT_PATTERN.fullmatch(given):
        raise UsageError("--salt must be 1-64 characters of letters, digits, '_', '.' and '-'")
    return given


def _short(found: Observed | None) -> str:
    return found.digest[:12] if found is not None and found.digest else "-"


def render_text(report: Report) -> str:
    """Returns the human summary: header, one line per check, per-id outcomes, violations, verdict.
    Every line is passed through `text.visible`, so no value from the change can break or add one."""
    lines = [
        f"oracle-gate check: base {report.base} ({report.base_commit[:12]}), merge base "
        f"{report.merge_base[:12]}, HEAD {report.head[:12]}; labels: {', '.join(report.labels) or 'none'}"
        + (f"; salt {report.salt}" if report.salt else "")
    ]
    width = max(len(c.name) for c in report.checks)
    for c in report.checks:
        lines.append(f"  {'ok  ' if c.ok else 'FAIL'}  {c.name.ljust(width)}  {c.detail}")
    if report.invariants:
        ids = sorted(set(report.invariants) | set(report.clean_outcomes or {})) if report.clean_outcomes is not None else report.invariants
        idw = max(len(i) for i in ids)
        if report.clean_outcomes is None:
            lines.append("per-id outcomes (observation digest):")
            for ident in ids:
                lines.append(f"  {ident.ljust(idw)}  {report.outcomes.get(ident, 'missing'):9}  "
                             f"{_short(report.observed.get(ident))}")
        else:
            clean_observed = report.clean_observed or {}
            lines.append("per-id outcomes (observation digest):")
            lines.append(f"  {'id'.ljust(idw)}  {'workspace':9}  {'':12}  clean")
            for ident in ids:
                lines.append(f"  {ident.ljust(idw)}  {report.outcomes.get(ident, 'missing'):9}  "
                             f"{_short(report.observed.get(ident)):12}  {report.clean_outcomes.get(ident, 'missing'):9}  "
                             f"{_short(clean_observed.get(ident))}")
    for run_name, summary in report.summaries.items():
        lines.extend(f"{run_name} run: {line}" for line in summary)
    lines.extend(report.notes)
    lines.extend(v.line() for v in report.violations)
    code = report.exit_code
    if code and report.salt:
        lines.append(f"salt {report.salt}: replay with `check --salt {report.salt}`")
    lines.append("gate ok (exit 0)" if code == 0 else f"gate FAILED (exit {code})")
    # Each line is one line: whatever the repository, results or environment put into it is escaped.
    return "\n".join(visible(line) for line in lines)


def render_json(report: Report) -> str:
    """Returns the machine-readable report as one JSON document."""
    return json.dumps(
        {
            "exit_code": report.exit_code,
            "base": report.base,
            "base_commit": report.base_commit,
            "merge_base": report.merge_base,
            "head": report.head,
            "labels": report.labels,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in report.checks],
            "salt": report.salt,
            "outcomes": {i: report.outcomes.get(i, "missing") for i in report.invariants},
            "observations": {i: _observation_json(report.observed.get(i)) for i in report.invariants},
            "violations": [
                {"code": v.code, "path": v.path, "id": v.id, "message": v.message} for v in report.violations
            ],
            "clean_outcomes": report.clean_outcomes,
            "clean_observations": None if report.clean_observed is None else {
                i: _observation_json(o) for i, o in sorted(report.clean_observed.items())},
            "bazel_summaries": report.summaries,
            "notes": report.notes,
        },
        indent=2,
        sort_keys=False,
    )


def _observation_json(found: Observed | None) -> dict[str, object] | None:
    if found is None:
        return None
    return {"outcome": found.outcome, "observation_sha256": found.digest, "sample_sha256": list(found.samples),
            "source": found.source}


def run(args: argparse.Namespace, repo: str, environ: Mapping[str, str]) -> int:
    """Runs `check` and prints its report to stdout; returns the exit code."""
    base = default_base(repo) if args.base is None else args.base
    labels = collect_labels(args.label, environ, repo)
    if args.remote and not args.clean:
        raise UsageError("--remote applies to the clean run; pass --clean --remote")
    if args.clean and args.results:
        raise UsageError("--clean runs the harness itself; it cannot be combined with --results")
    salt = "" if args.results else choose_salt(args.salt)
    report = run_check(repo, base, args.results, labels.names, environ, clean=args.clean, remote=args.remote, salt=salt)
    if labels.head and labels.head != report.head:
        raise GateError(f"HEAD moved from {labels.head} to {report.head} while the gate ran; run it again")
    report.notes[:0] = labels.notes  # why a CI label does not count, first
    out = render_json(report) if args.format == "json" else render_text(report)
    sys.stdout.write(out + "\n")
    return report.exit_code
