"""`propose [--base REV] [--model-command CMD]`: candidate oracle rows for the public production
functions a change added or changed, as TOML comments (propose.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import POLICY_PATH, load_policy
from tools.oracle_gate.authoring.propose import explain, head_rows, model_rows, render, survey
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import error_line, exit_codes_help
from tools.oracle_gate.git.gitio import changed_paths, default_base, git, merge_base, resolve_commit
from tools.oracle_gate.git.tree import GitTree
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
`pin --write` and labels the change. With --model-command CMD, CMD gets an
instruction and the diff on stdin; the rows it answers are printed only when
they pass the oracle schema and carry no blob_sha256. Exits 0 (also with no
candidate), or 1 when git, the policy or the command fails."""


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
        "--model-command",
        metavar="CMD",
        help="an external command that answers the diff with TOML rows (checked against the schema)",
    )


def run(args: argparse.Namespace, context: Context) -> int:
    """Prints what the production diff holds, the candidates (and the model's accepted rows);
    returns 0, or 1 when HEAD's policy names no production package.

    Raises:
        GateError: (exit 1) when git fails or the model command fails (propose.model_rows).
        OracleError: (exit 5) when HEAD's policy is invalid.
    """
    repo = context.repo()
    head = resolve_commit(repo, "HEAD")
    base = merge_base(repo, resolve_commit(repo, default_base(repo) if args.base is None else args.base), head)
    tree = GitTree(repo, head)
    policy = load_policy(tree, tree.files("oracles").get(POLICY_PATH))
    packages = policy.production_packages if policy is not None else ()
    if not packages:
        print(
            error_line(errors.UNDECIDED, f"{POLICY_PATH} at HEAD names no production_packages; nothing to propose"),
            file=sys.stderr,
        )
        return errors.UNDECIDED
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
    return errors.OK


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
