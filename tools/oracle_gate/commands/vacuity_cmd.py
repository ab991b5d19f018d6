"""`vacuity [ID...] [--format text|json]`: rows that pass on every mutant of their entry (vacuity.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import UsageError, exit_codes_help
from tools.oracle_gate.suite.loader import load_oracles
from tools.oracle_gate.text import runner_safe_json, visible
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.authoring.vacuity import RowResult, check_row

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "vacuity"
DESCRIPTION = """\
Runs each oracle row (all of them, or the IDs given) against mutants of its
entry function: one small change each (an operator, a comparison, a constant)
inside that function, run by the gate's own caller and judge. A row that
passes on every mutant checks nothing about that function; the report lists
it with the mutants it missed, so the oracle owner can tighten the bound or
add samples. Shows a progress bar on a terminal. Never run by `check`. Exits
0 (the report is information), 5 when the oracle files are invalid, 1 when an
entry cannot be mutated."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `vacuity` and its options."""
    parser = subparsers.add_parser(NAME, parents=parents, help="find rows that pass on every mutant of their entry",
                                   description=DESCRIPTION, epilog=exit_codes_help(),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
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
    """Checks the rows and prints the report; returns 0, or 5 for invalid oracle files.

    Raises:
        UsageError: (exit 1) for an ID no oracle file declares.
        GateError: (exit 1) when an entry's module cannot be read or parsed.
    """
    repo = context.repo()
    tree = WorkTree(repo)
    oracles = load_oracles(tree)
    if oracles.problems:
        for problem in oracles.problems:
            print(visible(f"oracle-gate: [5] {problem}"), file=sys.stderr)
        return errors.INVALID_ORACLE
    rows = {inv.id: inv for inv in oracles.invariants}
    unknown = [i for i in args.ids if i not in rows]
    if unknown:
        raise UsageError(f"no oracle row has the id {unknown[0]!r}")
    listing = tree.files("oracles")
    packages = oracles.policy.production_packages if oracles.policy is not None else ()
    results: list[RowResult] = []
    for ident in args.ids or list(rows):
        inv = rows[ident]
        oracle_bytes = tree.read(listing[inv.source])
        blob = tree.read(listing[inv.blob])
        results.append(check_row(repo, inv, oracle_bytes, blob, packages, _bar(ident)))
    if args.format == "json":
        print(runner_safe_json(json.dumps([{"id": r.id, "entry": r.entry, "mutants": r.mutants, "survived": len(r.survived),
                           "vacuous": r.vacuous, "problem": r.problem,
                           "missed": [{"line": m.line, "change": m.description} for m in r.survived],
                           "killed": [{"line": m.line, "change": m.description} for m in r.killed]}
                          for r in results], indent=2)))
        return errors.OK
    for r in results:
        if r.problem:
            print(visible(f"{r.id}: {r.problem}"))
            continue
        verdict = "CHECKS NOTHING: passes on every mutant" if r.vacuous else "ok"
        print(visible(f"{r.id} ({r.entry}): killed {r.mutants - len(r.survived)} of {r.mutants} mutant(s); {verdict}"))
        for m in r.survived:
            print(visible(f"    survived: line {m.line}: {m.description}"))
    vacuous = [r.id for r in results if r.vacuous]
    print(visible(f"{len(results)} row(s); {len(vacuous)} check nothing" + (f": {', '.join(vacuous)}" if vacuous else "")))
    return errors.OK
