"""`compare A B`: two runs must report the same ids with the same outcomes and observation digests."""

from __future__ import annotations

import argparse

from tools.oracle_gate import errors
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.results import differences, load_observed
from tools.oracle_gate.text import visible


def run(args: argparse.Namespace) -> int:
    """Compares two result sources (JUnit XML files or Bazel test-log directories).

    Returns:
        0 when the id -> (outcome, observation digest) maps are equal, 6 otherwise (a table of
        differences is printed). A digest is compared only when both runs recorded one.
    """
    a, b = load_observed([args.a]).observed, load_observed([args.b]).observed
    if not a and not b:
        raise GateError("neither run reports any invariant id (no `[<id>]` test cases of an oracle test); nothing to compare")
    diff = differences(a, b)
    if not diff:
        print(f"runs agree: {len(a)} id(s), same outcomes and observation digests")
        return errors.OK
    width = max(len("id"), *(len(d.id) for d in diff))
    print(f"{'id'.ljust(width)}  {'A':8}  {'B':8}  why (result file of each side)")
    for d in diff:
        sources = "; ".join(f"{side}: {visible(found.source)}" for side, found in (("A", a.get(d.id)), ("B", b.get(d.id)))
                            if found is not None)
        print(f"{d.id.ljust(width)}  {d.left:8}  {d.right:8}  {d.reason} ({sources})")
    print(f"[{errors.RUNS_DISAGREE}] runs disagree on {len(diff)} id(s): A={visible(args.a)} B={visible(args.b)}")
    return errors.RUNS_DISAGREE
