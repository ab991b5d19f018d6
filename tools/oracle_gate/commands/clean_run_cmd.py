"""`clean-run`: the oracle test and the harness on a pristine tree; writes the per-id results as
JUnit XML (docs/design.md section 10)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.approval.change import approve_change
from tools.oracle_gate.approval.labels import collect_labels
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.commands.check_cmd import choose_salt
from tools.oracle_gate.errors import UsageError, error_line, exit_codes_help
from tools.oracle_gate.git.gitio import default_base, refuse_grafts, resolve_commit
from tools.oracle_gate.git.objects import Trust
from tools.oracle_gate.report import failing_lines, id_table, observed_failing
from tools.oracle_gate.runs.clean_run import clean_run
from tools.oracle_gate.runs.results import short_digest, to_junit
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "clean-run"
DESCRIPTION = """\
Runs the oracle test and the harness on a pristine tree written from git
objects: what would land (HEAD, or its merge result with the base tip when
HEAD does not contain the tip) with the base tip's oracles/ (the merge
result's when the change carries the policy's label). Writes the per-id
outcomes and observation digests to --out as JUnit XML, which `compare` and
`check --results` read. Exits 0, or 1 when Bazel could not build the run."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `clean-run` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="run the oracle test and the harness on a pristine tree of committed content; write per-id results",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base", help="base revision whose oracles/ is used (default: origin/main, else main)")
    parser.add_argument("--out", required=True, help="JUnit XML file to write")
    parser.add_argument("--remote", action="store_true", help="run through --config=remote (REAPI)")
    parser.add_argument("--label", action="append", default=[], help="a pull-request label (repeatable)")
    parser.add_argument("--salt", default="", help="the salt for generated samples (default: empty)")
    parser.add_argument(
        "--head-only",
        action="store_true",
        help="test HEAD with the merge base's oracles/, without merging the base tip (local use)",
    )


def run(args: argparse.Namespace, context: Context) -> int:
    """Runs the oracle test and the harness on a pristine tree and writes `--out`; returns 0, or 1
    when Bazel could not build it.

    The tree holds the committed code and harness of what would land (docs/design.md section 11:
    HEAD, or the merge result of HEAD into the base tip) with the tip's `oracles/` (the merge
    result's when the change carries the policy's label, as a human approved those); with
    `--head-only`, HEAD's code with the merge base's `oracles/`.

    Raises:
        UsageError: (exit 1) when the directory of `--out` does not exist or is not writable.
        GateError: (exit 1) for git errors (a change that does not merge cleanly into the tip
            included), an invalid policy in force (as `check`), or when the tree cannot be
            written or Bazel cannot run.
    """
    repo = context.repo()
    out = os.path.abspath(args.out)
    if not os.path.isdir(os.path.dirname(out)) or not os.access(os.path.dirname(out), os.W_OK):
        raise UsageError(f"--out {args.out}: its directory does not exist or is not writable")
    refuse_grafts(repo)
    base = default_base(repo) if args.base is None else args.base
    head = resolve_commit(repo, "HEAD")
    found = collect_labels(args.label, context.environ, repo, head=head)
    # check's approval step: the same commits, policy and label, an invalid base policy refused.
    approval = approve_change(repo, base, found.names, Trust(), head_only=args.head_only)
    judged, claims, tip = approval.judged.commit, approval.judged.claims, approval.tip
    labelled = approval.labelled
    for note in found.notes:  # why a CI label does not count
        print(note)
    if judged != head:
        print(visible(f"judged: the merge result {judged[:12]} of HEAD {head[:12]} into the base tip {tip[:12]}"))
    salt = choose_salt(args.salt) if args.salt else ""
    run_result = clean_run(repo, judged, judged if labelled else claims, context.environ, remote=args.remote, salt=salt)
    with open(out, "wb") as f:
        f.write(to_junit(run_result.observed, "clean-run"))
    for line in run_result.summary:
        print(visible(f"clean run: Bazel {line.removeprefix('INFO: ')}"))
    print(visible(f"clean run sealed by: {run_result.boundary}"))
    observed = run_result.observed
    for line in id_table(
        [(i, observed[i].outcome, short_digest(observed[i])) for i in sorted(observed)],
        (9,),
        ids=run_result.observed,
        min_width=2,
        indent="  ",
    ):
        print(line)
    for line in failing_lines(observed_failing(observed)):
        print(visible(line))
    for label, status in run_result.harness_failures().items():
        print(visible(f"  harness target {label}: {status}"))
    print(visible(f"wrote {out} ({len(run_result.observed)} id(s))"))
    if run_result.build_failed:
        print(error_line(errors.UNDECIDED, "the clean run did not build (bazel exit 1)"), file=sys.stderr)
        return errors.UNDECIDED
    return errors.OK
