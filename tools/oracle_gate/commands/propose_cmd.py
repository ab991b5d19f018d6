"""`propose [--base REV] [--all [PACKAGE...]] [--write] [--model-command CMD]`: candidate oracle rows
for the public production functions a change added or changed (propose.py), whole rows for every
public function of the production packages and a behaviour-kept row for each changed one
(propose_rows.py), as TOML comments or, with `--write`, appended to the oracle files
(propose_write.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import POLICY_PATH, load_policy
from tools.oracle_gate.authoring.propose import HeadRows, explain, head_rows, model_rows, render, skip_reason, survey
from tools.oracle_gate.authoring.propose_rows import KEPT_COUNT, PROPOSED_COUNT, Proposed, kept_rows, survey_all
from tools.oracle_gate.authoring.propose_write import plan, write
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import UsageError, error_line, exit_codes_help
from tools.oracle_gate.git.gitio import changed_paths, default_base, git, merge_base, resolve_commit
from tools.oracle_gate.git.tree import GitTree, WorkTree
from tools.oracle_gate.spec.toml_text import row_table
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "propose"
DESCRIPTION = """\
Reads the production diff between the merge base of REV and HEAD (files of
the policy's production_packages only; never harness/, oracles/ or the gate:
a changed .py file outside them is named, not read) and lists, as TOML
comments, every function and method whose code was added, changed or
removed, each with its candidate row or why it has none: a nested function
or a method of a nested class (a row names a module-level function, or a
method or constructor of a module-level class), a def inside a module-level
block, a private name, an entry the schema refuses, a removed function, or
one that already has a row in HEAD's oracle files. A candidate has an id
suggestion (unique among HEAD's rows), the entry, a suggested kind with the
reason, the oracle file it goes in (the one holding rows of its module, else
of its package, else oracles/<package>.toml), a blob path in that file's own
folder (oracles/blobs/<file name>/<id>.json) and a one-line rationale. It
writes nothing: a human turns a candidate into a row, writes its blob, runs
`pin --write` and labels the change. Each function the change modified also
gets a whole behaviour-kept row (its version must return what the base tip's
returns) when its arguments can be drawn from its annotations.

With --all [PACKAGE...], it reads every public function and method of those
production packages (default: all of them) at HEAD instead of the diff and
proposes whole rows a reviewer can take as they are, each with generators
drawn from the annotations: round_trip for two functions that undo each other
by name and signature (format/parse, dumps/loads, encode/decode, to_X/from_X,
X/un_X, ...), idempotent for a canonical form (normalize, canonical, sort,
dedupe, ...), and commutative, associative and identity for a binary
operation on one type. With --write, the whole rows are appended to their
oracle files in the work tree (existing rows untouched; a row whose entry
already has a row of its kind is not proposed again) with a blob of a few
drawn samples each, and no blob_sha256: run `pin --write` (or `record
--write`) next and commit under the label. Nothing is written when anything
stands in the way: a blob already there with other samples or a link where a
file goes (exit 1), an oracle file that is not readable TOML (exit 5).

With --model-command CMD, CMD gets an instruction and the diff on stdin; the
rows it answers are printed only when they pass the oracle schema and carry
no blob_sha256. Exits 0 (also with no candidate), or 1 when git, the policy
or the command fails."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `propose` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="print candidate oracle rows for changed production functions",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base", help="base revision (default: origin/main, else main)")
    parser.add_argument(
        "--all",
        nargs="*",
        metavar="PACKAGE",
        help="whole rows for every public function of these production packages (default: all of them)",
    )
    parser.add_argument(
        "--write", action="store_true", help="append the whole rows to their oracle files, with their blobs"
    )
    parser.add_argument(
        "--model-command",
        metavar="CMD",
        help="an external command that answers the diff with TOML rows (checked against the schema)",
    )


def run(args: argparse.Namespace, context: Context) -> int:
    """Prints what the production diff holds (or, with `--all`, every public function), the
    candidates (and the model's accepted rows); with `--write` appends the whole rows to their
    oracle files. Returns 0, or 1 when HEAD's policy names no production package.

    Raises:
        UsageError: (exit 1) for a package of `--all` that is not a production package.
        GateError: (exit 1) when git fails, the model command fails (propose.model_rows) or a file
            of `--write` stands in the way (propose_write.plan).
        OracleError: (exit 5) when HEAD's policy, or an oracle file `--write` appends to, is invalid.
    """
    repo = context.repo()
    head = resolve_commit(repo, "HEAD")
    tree = GitTree(repo, head)
    policy = load_policy(tree, tree.files("oracles").get(POLICY_PATH))
    packages = policy.production_packages if policy is not None else ()
    if not packages:
        print(
            error_line(
                errors.UNDECIDED,
                f"{POLICY_PATH} at HEAD names no production_packages; nothing to propose"
                if policy is not None
                else f"HEAD has no {POLICY_PATH}: propose reads committed content; commit init's files first",
            ),
            file=sys.stderr,
        )
        return errors.UNDECIDED
    work_rows = head_rows(WorkTree(repo))
    if args.all is not None:
        proposed = _all(args.all, tree, packages, work_rows)
    else:
        proposed = _diff(args, repo, head, tree, packages, work_rows)
    if args.write:
        _write(repo, proposed)
    else:
        for candidate in proposed:
            for line in _comment(candidate):
                print(visible(line))
    return errors.OK


def _all(wanted: Sequence[str], tree: GitTree, packages: Sequence[str], rows: HeadRows) -> list[Proposed]:
    """Prints what `--all` read and returns its candidates."""
    unknown = [p for p in wanted if p not in packages]
    if unknown:
        raise UsageError(
            f"--all: {', '.join(unknown)} is not a production package of {POLICY_PATH} ({', '.join(packages)})"
        )
    result = survey_all(tree, list(wanted) or list(packages), rows, packages)
    print(
        f"# propose --all: {len(result.proposed)} whole row(s) for {len(result.listed)} public function(s) or "
        f"method(s) of {', '.join(wanted or packages)} at HEAD; each draws {PROPOSED_COUNT} samples "
        f"({KEPT_COUNT} for a behaviour-kept row) from its annotations"
    )
    for item in result.listed:
        print(visible(f"#   {item.entry} ({item.path}:{item.line}): {item.note}"))
    for note in result.notes:
        print(visible(f"# {note}"))
    print()
    return list(result.proposed)


def _diff(
    args: argparse.Namespace, repo: str, head: str, tree: GitTree, packages: Sequence[str], rows: HeadRows
) -> list[Proposed]:
    """Prints what the production diff holds, its candidates and the model's rows; returns the
    behaviour-kept rows of the changed functions."""
    base = merge_base(repo, resolve_commit(repo, default_base(repo) if args.base is None else args.base), head)
    changed = [c for c in changed_paths(repo, base, head) if c.path.endswith(".py")]
    paths = sorted({c.path for c in changed if c.path.split("/", 1)[0] in packages})
    others = sorted({c.path for c in changed if c.status != "D" and c.path.split("/", 1)[0] not in packages})
    oracles = head_rows(tree)
    result = survey(repo, base, head, paths, oracles)
    print(
        visible(
            f"# propose: {len(result.candidates)} candidate row(s) for {len(paths)} changed production file(s) "
            f"(merge base {base[:12]}, HEAD {head[:12]}); review each, then write its blob and `pin --write`"
        )
    )
    for line in explain(result, packages, others, oracles.notes):
        print(visible(line))
    print()
    for candidate in result.candidates:
        for line in render(candidate):
            print(visible(line))
    if args.model_command:
        _model(args.model_command, repo, base, head, paths, packages)
    modified = [o.found for o in result.outcomes if o.found.status == "changed" and not skip_reason(o.found, ())]
    kept, notes = kept_rows(tree, modified, rows, packages)
    for note in notes:
        print(visible(f"# {note}"))
    return kept


def _comment(candidate: Proposed) -> list[str]:
    """A whole candidate row as TOML comment lines, with its blob's samples."""
    return [
        f"# {candidate.row['entry']}: {candidate.why}",
        f"# goes in {candidate.oracle_file}; `propose --write` appends it",
        *(f"# {line}" if line else "#" for line in row_table(candidate.row).splitlines()),
        f"# blob {candidate.blob}: {len(candidate.samples)} sample(s) drawn from generate",
        "",
    ]


def _write(repo: str, proposed: Sequence[Proposed]) -> None:
    """Appends the rows to their oracle files and writes their blobs, all or nothing
    (propose_write.plan), and prints what was written and what must follow."""
    files = plan(repo, proposed)
    write(repo, files)
    rows = [f for f in files if f.rows]
    for item in rows:
        print(visible(f"appended {len(item.rows)} row(s) to {item.path}: {', '.join(item.rows)}"))
    print(f"wrote {len(files) - len(rows)} blob(s); {len(proposed)} row(s) in all")
    if proposed:
        print(
            "next: `pin --write` (or `record --write`) adds each blob_sha256 and the manifest; review the rows, "
            "then commit them under the `oracle-change` label"
        )


def _model(command: str, repo: str, base: str, head: str, paths: Sequence[str], packages: Sequence[str]) -> None:
    """Prints the rows `command` answers for the diff of `paths` that pass the schema; the
    rejected ones go to stderr."""
    diff = git(repo, "diff", "--no-ext-diff", "--no-textconv", base, head, "--", *paths).decode("utf-8", "replace")
    accepted, rejected = model_rows(command, diff, packages)
    count = sum(1 for line in accepted if line.startswith("# [[invariant]]"))
    print(visible(f"# --model-command: {count} row(s) accepted, {len(rejected)} rejected"))
    for line in accepted:
        print(visible(line))
    for reason in rejected:
        print(visible(f"propose: rejected a row of --model-command: {reason}"), file=sys.stderr)
