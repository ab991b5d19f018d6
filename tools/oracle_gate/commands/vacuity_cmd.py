"""`vacuity [ID...] [--format text|json] [--suggest [--base REV] [--candidates N] [--seed S]]`: rows
that pass on every mutant of their entry (vacuity.py), and with `--suggest` a sample that kills each
surviving mutant (killing.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.authoring import killing, vacuity
from tools.oracle_gate.authoring.killing import RowSuggestions, Suggestion
from tools.oracle_gate.authoring.vacuity import RowResult
from tools.oracle_gate.commands import Context, Parser, valid_oracles
from tools.oracle_gate.errors import GateError, UsageError, exit_codes_help
from tools.oracle_gate.files import linked_folder, replace_file
from tools.oracle_gate.git.gitio import default_base, resolve_commit
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.spec.judgement import compact, cut
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.suite.loader import Oracles
from tools.oracle_gate.text import runner_safe_json, visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "vacuity"
MAX_CANDIDATES = 10_000
DESCRIPTION = """\
Runs each oracle row (all of them, or the IDs given) against mutants of its
entry function: one small change each (an operator, a comparison, a constant)
inside that function, run by the gate's own caller and judge. A row that
passes on every mutant checks nothing about that function; the report lists
it with the mutants it missed, so the oracle owner can tighten the bound or
add samples. An entry whose body has nothing those changes apply to (it only
delegates to another function) has no mutants of its own: its rows are
reported as such, neither ok nor checking nothing, since vacuity cannot tell.
With --suggest, each surviving mutant gets a killing sample: an input, in the
row's blob shape, on which the mutant's result differs from the code's (an
exact_table sample with the code's result as expected), searched among
candidates drawn from the seed (the stored samples with one value edited, the
row's generators, pairs of edits); the work tree outside oracles/ must be the
base tip's, so the result is the base tip's. With --suggest --write, the killing
samples are appended to their rows' blobs (each once; `pin --write` then sets
the pins, an oracle change under the policy's label). Shows a progress bar on
a terminal.
Never run by `check`. Exits 0 whatever the report says (it is information for
the oracle owner: rows that check nothing, rows with no mutants of their own
and rows that fail on the code as it is included), 5 when the oracle files are
invalid, 1 for an unknown ID, an entry that cannot be read or parsed, or with
--suggest a file outside oracles/ that differs from the base tip's."""


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
    parser.add_argument("--suggest", action="store_true", help="a sample that kills each surviving mutant")
    parser.add_argument("--base", help="with --suggest: the base revision (default: origin/main, else main)")
    parser.add_argument(
        "--write", action="store_true", help="with --suggest: append the killing samples to the rows' blobs"
    )
    parser.add_argument(
        "--candidates",
        type=int,
        metavar="N",
        help=f"with --suggest: candidate inputs per row, 1 to {MAX_CANDIDATES} (default: {killing.DEFAULT_CANDIDATES})",
    )
    parser.add_argument(
        "--seed", type=int, metavar="S", help=f"with --suggest: the candidates' seed (default: {killing.DEFAULT_SEED})"
    )


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
        UsageError: (exit 1) for an ID no oracle file declares, or a --suggest option without it.
        GateError: (exit 1) when an entry's module cannot be read or parsed, or with --suggest when
            a production file differs from the base tip's (`_base_tip`).
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
    count = killing.DEFAULT_CANDIDATES if args.candidates is None else args.candidates
    seed = killing.DEFAULT_SEED if args.seed is None else args.seed
    if not args.suggest and ((args.base, args.candidates, args.seed) != (None, None, None) or args.write):
        raise UsageError("--base, --candidates, --seed and --write go with --suggest")
    if not 1 <= count <= MAX_CANDIDATES:
        raise UsageError(f"--candidates must be from 1 to {MAX_CANDIDATES}, not {count}")
    base = _base_tip(args.base, repo, oracles) if args.suggest else ""
    listing = tree.files("oracles")
    sources = {inv.source: tree.read(listing[inv.source]) for inv in oracles.invariants}
    results: list[RowResult] = []
    found: dict[str, RowSuggestions] = {}
    with vacuity.open_runner(repo, context.environ) as runner:
        for ident in args.ids or list(rows):
            inv = rows[ident]
            blob = tree.read(listing[inv.blob])
            result = vacuity.check_row(repo, inv, sources[inv.source], blob, runner, _bar(ident))
            results.append(result)
            if args.suggest and result.survived and not result.problem:
                sharing = [i for i in oracles.invariants if i.blob == inv.blob and i.id != inv.id]
                found[ident] = killing.suggest_row(
                    repo, inv, load_samples(blob), sources, result.survived, runner, count, seed, sharing
                )
    written = _append(repo, tree, rows, found) if args.write else []
    if args.format == "json":
        print(runner_safe_json(json.dumps([_json(r, found.get(r.id), args.suggest) for r in results], indent=2)))
        return errors.OK
    lines = report_lines(results, found)
    if args.suggest:
        lines.insert(0, f"killing samples from the base tip {base}: seed {seed}, up to {count} candidate(s) per row")
    lines += written
    for line in lines:
        print(visible(line))
    return errors.OK


def _append(repo: str, tree: WorkTree, rows: Mapping[str, Invariant], found: Mapping[str, RowSuggestions]) -> list[str]:
    """Appends each row's killing samples to its blob (`killing.with_killing_samples`), all computed
    before the first write; returns the report's lines.

    Raises:
        GateError: (exit 1) for a symlinked folder on the way to a blob, before anything is written.
    """
    listing = tree.files("oracles")
    blobs: dict[str, bytes] = {}
    added: dict[str, int] = {}
    for ident, suggestions in found.items():
        path = rows[ident].blob
        current = blobs.get(path) or tree.read(listing[path])
        data, count = killing.with_killing_samples(current, suggestions)
        if count:
            blobs[path], added[path] = data, added.get(path, 0) + count
    for path in sorted(blobs):
        linked = linked_folder(repo, path)
        if linked is not None:
            raise GateError(f"{linked} is a symlink: vacuity writes {path} only inside the work tree; remove the link")
    for path, data in sorted(blobs.items()):
        replace_file(os.path.join(repo, *path.split("/")), data)
    if not blobs:
        return ["no killing sample to append"]
    return [
        *(f"appended {added[path]} killing sample(s) to {path}" for path in sorted(blobs)),
        "`pin --write` sets their pins; commit them: the pull request needs the policy's label",
    ]


def _base_tip(base: str | None, repo: str, oracles: Oracles) -> str:
    """The base tip's name and commit (`refs/heads/main 0123456789ab`) for --suggest, after
    checking that the work tree outside `oracles/` is the base tip's: vacuity builds and runs the
    work tree, and a suggested sample must carry the base tip's results. `base`: --base, or None
    for `default_base`.

    Raises:
        GateError: (exit 1) for an unknown base, or a file outside `oracles/` that differs from it.
    """
    name = default_base(repo) if base is None else base
    commit = resolve_commit(repo, name)
    differs = killing.base_difference(repo, commit)
    if differs:
        raise GateError(
            f"vacuity --suggest: {differs} differs from the base tip {name} ({commit[:12]}); the suggested "
            "samples must carry the base tip's results and vacuity runs the work tree: run it on a checkout "
            "of the base tip (commit or stash the change, then switch to the base)"
        )
    return f"{name} {commit[:12]}"


def _shown(observation: object) -> str:
    """One sample's observation (`{"value": V}`, `{"raised": M}`, `{"unplain": M}`) as the report shows it."""
    if type(observation) is dict and "value" in observation:
        return cut(compact(observation["value"]))
    if type(observation) is dict and type(observation.get("raised")) is str:
        return cut(f"raised {observation['raised']}")
    return cut(compact(observation))


def _suggestion_line(found: Suggestion, candidates: int) -> str:
    """The line under a survivor: its killing sample (in blob shape, whole) with the base tip's and
    the mutant's results, or why there is none."""
    if found.sample is not None:
        return (
            f"        killing sample: {compact(found.sample)} (base tip: {_shown(found.result)}; "
            f"mutant: {_shown(found.mutant_result)})"
        )
    if found.note:
        return f"        no killing input: {found.note}"
    return f"        no killing input found in {candidates} candidate(s)"


def _json(result: RowResult, found: RowSuggestions | None, suggest: bool) -> dict[str, object]:
    """One row of the JSON report; with --suggest, the row's `suggest` (seed, candidates, problem)
    and each missed mutant's `killing_sample`, `base_result`, `mutant_result` and `note`."""
    r = result
    suggestions = found.suggestions if found is not None else ()
    missed: list[dict[str, object]] = []
    for index, m in enumerate(r.survived):
        item: dict[str, object] = {"line": m.line, "change": m.description}
        if suggest:
            s = suggestions[index] if index < len(suggestions) else Suggestion(m)
            item.update(killing_sample=s.sample, base_result=s.result, mutant_result=s.mutant_result, note=s.note)
        missed.append(item)
    row: dict[str, object] = {
        "id": r.id,
        "entry": r.entry,
        "mutants": r.mutants,
        "survived": len(r.survived),
        "vacuous": r.vacuous,
        "verdict": r.verdict,
        "problem": r.problem,
        "no_mutants": r.no_mutants,
        "missed": missed,
        "killed": [{"line": m.line, "change": m.description} for m in r.killed],
    }
    if suggest and found is not None:
        row["suggest"] = {"seed": found.seed, "candidates": found.candidates, "problem": found.problem}
    return row


def report_lines(results: Sequence[RowResult], found: Mapping[str, RowSuggestions] | None = None) -> list[str]:
    """The text report of `results` (RowResults, in the order the rows ran): one line per row with
    its verdict (a failing row's problem; NO MUTANTS OF ITS OWN and why; killed N of M and ok or
    CHECKS NOTHING), the survivors under it, each followed by its killing sample when `found`
    (row id -> RowSuggestions, from --suggest) has one, and a summary line. Lines are not yet `visible`."""
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
        row = (found or {}).get(r.id)
        if row is not None and row.problem:
            lines.append(f"    killing samples: {row.problem}")
        for index, m in enumerate(r.survived):
            lines.append(f"    survived: line {m.line}: {m.description}")
            if row is not None and not row.problem and index < len(row.suggestions):
                lines.append(_suggestion_line(row.suggestions[index], row.candidates))
    vacuous = [r.id for r in results if r.vacuous]
    unjudged = [r.id for r in results if r.verdict == "no_mutants"]
    summary = f"{len(results)} row(s); {len(vacuous)} check nothing" + (f": {', '.join(vacuous)}" if vacuous else "")
    if unjudged:
        summary += f"; {len(unjudged)} with no mutants of its own: {', '.join(unjudged)}"
    return lines + [summary]
