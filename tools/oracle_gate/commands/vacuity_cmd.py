"""`vacuity [ID...] [--format text|json]`: rows that pass on every mutant of their entry (vacuity.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.authoring import vacuity
from tools.oracle_gate.authoring.vacuity import RowResult
from tools.oracle_gate.commands import Context, Parser, valid_oracles
from tools.oracle_gate.errors import UsageError, exit_codes_help
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.text import runner_safe_json, visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "vacuity"
DESCRIPTION = """\
Runs each oracle row (all of them, or the IDs given) against mutants of its
entry function: one small change each (an operator, a comparison, a constant)
inside that function, run by the gate's own caller and judge. A row that
passes on every mutant checks nothing about that function; the report lists
it with the mutants it missed, so the oracle owner can tighten the bound or
add samples. An entry whose body has nothing those changes apply to (it only
delegates to another function) has no mutants of its own: its rows are
reported as such, neither ok nor checking nothing, since vacuity cannot tell.
Shows a progress bar on a terminal. Never run by `check`. Exits 0 whatever
the report says (it is information for the oracle owner: rows that check
nothing, rows with no mutants of their own and rows that fail on the code as
it is included), 5 when the oracle files are invalid, 1 for an unknown ID or
an entry that cannot be read or parsed."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `vacuity` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="find rows that pass on every mutant of their entry",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("ids", nargs="*", metavar="ID", help="rows to check (default: every row)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")


def _bar(ident: str) -> Callable[[int, int], None]:
    """A progress bar on stderr, drawn only when stderr is a terminal."""

    def show(done: int, total: int) -> None:
        if not sys.stderr.isatty() or total == 0:
            return
        width = 30
        filled = width * done // total
        sys.stderr.write(f"\r{ident[:30]:<30} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def run(args: argparse.Namespace, context: Context) -> int:
    """Checks the rows and prints the report; returns 0 (whatever the rows' verdicts), or 5 for
    invalid oracle files.

    Raises:
        UsageError: (exit 1) for an ID no oracle file declares.
        GateError: (exit 1) when an entry's module cannot be read or parsed.
    """
    repo = context.repo()
    tree = WorkTree(repo)
    oracles = valid_oracles(tree)
    if oracles is None:
        return errors.INVALID_ORACLE
    rows = {inv.id: inv for inv in oracles.invariants}
    unknown = [i for i in args.ids if i not in rows]
    if unknown:
        raise UsageError(f"no oracle row has the id {unknown[0]!r}")
    listing = tree.files("oracles")
    results: list[RowResult] = []
    with vacuity.open_runner(repo, context.environ) as runner:
        for ident in args.ids or list(rows):
            inv = rows[ident]
            oracle_bytes = tree.read(listing[inv.source])
            blob = tree.read(listing[inv.blob])
            results.append(vacuity.check_row(repo, inv, oracle_bytes, blob, runner, _bar(ident)))
    lines = (
        [runner_safe_json(json.dumps([_json(r) for r in results], indent=2))]
        if args.format == "json"
        else report_lines(results)
    )
    for line in lines:
        print(line if args.format == "json" else visible(line))
    return errors.OK


def _json(result: RowResult) -> dict[str, object]:
    """One row of the JSON report."""
    r = result
    return {
        "id": r.id,
        "entry": r.entry,
        "mutants": r.mutants,
        "survived": len(r.survived),
        "vacuous": r.vacuous,
        "verdict": r.verdict,
        "problem": r.problem,
        "no_mutants": r.no_mutants,
        "missed": [{"line": m.line, "change": m.description} for m in r.survived],
        "killed": [{"line": m.line, "change": m.description} for m in r.killed],
    }


def report_lines(results: Sequence[RowResult]) -> list[str]:
    """The text report of `results` (RowResults, in the order the rows ran): one line per row with
    its verdict (a failing row's problem; NO MUTANTS OF ITS OWN and why; killed N of M and ok or
    CHECKS NOTHING), the survivors under it, and a summary line. Lines are not yet `visible`."""
    lines: list[str] = []
    for r in results:
        if r.problem:
            lines.append(f"{r.id}: {r.problem}")
            continue
        if r.verdict == "no_mutants":
            lines.append(f"{r.id} ({r.entry}): NO MUTANTS OF ITS OWN: {r.no_mutants}; not judged")
            continue
        verdict = "CHECKS NOTHING: passes on every mutant" if r.vacuous else "ok"
        lines.append(f"{r.id} ({r.entry}): killed {r.mutants - len(r.survived)} of {r.mutants} mutant(s); {verdict}")
        lines.extend(f"    survived: line {m.line}: {m.description}" for m in r.survived)
    vacuous = [r.id for r in results if r.vacuous]
    unjudged = [r.id for r in results if r.verdict == "no_mutants"]
    summary = f"{len(results)} row(s); {len(vacuous)} check nothing" + (f": {', '.join(vacuous)}" if vacuous else "")
    if unjudged:
        summary += f"; {len(unjudged)} with no mutants of its own: {', '.join(unjudged)}"
    return lines + [summary]
