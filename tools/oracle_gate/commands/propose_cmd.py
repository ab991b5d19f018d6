"""`propose [--base REV] [--model-command CMD]`: candidate oracle rows for the public production
functions a change added or changed, as TOML comments (propose.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import error_line, exit_codes_help
from tools.oracle_gate.git.gitio import changed_paths, default_base, git, merge_base, resolve_commit
from tools.oracle_gate.suite.loader import load_policy
from tools.oracle_gate.approval.policy import POLICY_PATH
from tools.oracle_gate.authoring.propose import candidates, model_rows, render
from tools.oracle_gate.text import visible
from tools.oracle_gate.git.tree import GitTree

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "propose"
DESCRIPTION = """\
Reads the production diff between the merge base of REV and HEAD (files of
the policy's production_packages only; never harness/, oracles/ or the gate)
and prints, as TOML comments, a candidate row for each public function that
was added or changed: an id suggestion, the entry, a suggested kind with the
reason, a blob path and a one-line rationale. It writes nothing: a human
turns a candidate into a row, writes its blob, runs `pin --write` and labels
the change. With --model-command CMD, CMD gets an instruction and the diff on
stdin; the rows it answers are printed only when they pass the oracle schema
and carry no blob_sha256. Exits 0, or 1 when git, the policy or the command
fails."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `propose` and its options."""
    parser = subparsers.add_parser(NAME, parents=parents, help="print candidate oracle rows for changed production functions",
                                   description=DESCRIPTION, epilog=exit_codes_help(),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="base revision (default: origin/main, else main)")
    parser.add_argument("--model-command", metavar="CMD",
                        help="an external command that answers the diff with TOML rows (checked against the schema)")


def run(args: argparse.Namespace, context: Context) -> int:
    """Prints the candidates (and the model's accepted rows); returns 0.

    Raises:
        GateError: (exit 1) when git fails, HEAD's policy names no production package, or the
            model command fails (propose.model_rows).
    """
    repo = context.repo()
    head = resolve_commit(repo, "HEAD")
    base = merge_base(repo, resolve_commit(repo, default_base(repo) if args.base is None else args.base), head)
    tree = GitTree(repo, head)
    policy = load_policy(tree, tree.files("oracles").get(POLICY_PATH))
    packages = policy.production_packages if policy is not None else ()
    if not packages:
        print(error_line(errors.UNDECIDED, f"{POLICY_PATH} at HEAD names no production_packages; nothing to propose"),
              file=sys.stderr)
        return errors.UNDECIDED
    paths = sorted({c.path for c in changed_paths(repo, base, head) if c.status != "D" and c.path.endswith(".py")
                    and c.path.split("/", 1)[0] in packages})
    found = candidates(repo, base, head, paths)
    print(visible(f"# propose: {len(found)} candidate row(s) for {len(paths)} changed production file(s) "
                  f"(merge base {base[:12]}, HEAD {head[:12]}); review each, then write its blob and `pin --write`"))
    print()
    for candidate in found:
        for line in render(candidate):
            print(visible(line))
    if args.model_command:
        diff = git(repo, "diff", "--no-ext-diff", "--no-textconv", base, head, "--", *paths).decode("utf-8", "replace")
        accepted, rejected = model_rows(args.model_command, diff, packages)
        count = sum(1 for line in accepted if line.startswith("# [[invariant]]"))
        print(visible(f"# --model-command: {count} row(s) accepted, {len(rejected)} rejected"))
        for line in accepted:
            print(visible(line))
        for reason in rejected:
            print(visible(f"propose: rejected a row of --model-command: {reason}"), file=sys.stderr)
    return errors.OK
