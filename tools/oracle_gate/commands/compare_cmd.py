"""`compare A B`: two runs must report the same ids with the same outcomes and observation digests
(docs/design.md sections 5 and 9)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import GateError, exit_codes_help
from tools.oracle_gate.report import failing_lines, id_table
from tools.oracle_gate.runs.results import FAILED, differences, load_observed
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "compare"
DESCRIPTION = """\
Compares the results of two runs of the oracle test, each a JUnit XML file or a Bazel
test-log directory: both must report the same invariant ids with the same
outcomes and, where both recorded one, the same observation digests. Needs no
repository. Exits 0 when they agree, 6 with a table of the differences when
they do not."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `compare` and its arguments."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="two runs of the oracle test report the same ids, outcomes and digests",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("a", help="JUnit XML file or Bazel test-log directory of run A")
    parser.add_argument("b", help="JUnit XML file or Bazel test-log directory of run B")


def run(args: argparse.Namespace, context: Context) -> int:
    """Compares two result sources (JUnit XML files or Bazel test-log directories); `context` is
    not used (no repository is needed).

    Returns:
        0 when the id -> (outcome, observation digest) maps are equal, 6 otherwise (a table of
        differences is printed). A digest is compared only when both runs recorded one.

    Raises:
        GateError: (exit 1) when a source cannot be read, or neither reports any invariant id.
    """
    del context
    a, b = load_observed([args.a]).observed, load_observed([args.b]).observed
    if not a and not b:
        raise GateError(
            "neither run reports any invariant id (no `[<id>]` test cases of an oracle test); nothing to compare"
        )
    diff = differences(a, b)
    if not diff:
        print(f"runs agree: {len(a)} id(s), same outcomes and observation digests")
        return errors.OK
    rows: list[tuple[str, str, str, str]] = []
    for d in diff:
        sources = "; ".join(
            f"{side}: {visible(found.source)}"
            for side, found in (("A", a.get(d.id)), ("B", b.get(d.id)))
            if found is not None
        )
        rows.append((d.id, d.left, d.right, f"{d.reason} ({sources})"))
    header = ("id", "A", "B", "why (result file of each side)")
    for line in id_table(rows, (8, 8), header=header, min_width=len("id")):
        print(line)
    # The failing samples of each side that failed where the runs disagree (never compared).
    blocks = [
        (f"{d.id} ({side})", found.failing)
        for d in diff
        for side, found in (("A", a.get(d.id)), ("B", b.get(d.id)))
        if found is not None and found.outcome == FAILED and found.failing.count
    ]
    for line in failing_lines(blocks):
        print(visible(line))
    print(f"[{errors.RUNS_DISAGREE}] runs disagree on {len(diff)} id(s): A={visible(args.a)} B={visible(args.b)}")
    return errors.RUNS_DISAGREE
