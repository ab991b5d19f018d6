"""`compare A B`: two harness runs must report the same ids with the same per-id outcomes."""

from __future__ import annotations

import argparse

from tools.oracle_gate import errors
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.results import differences, load_results


def run(args: argparse.Namespace) -> int:
    """Compares two result sources (JUnit XML files or Bazel test-log directories).

    Returns:
        0 when the id -> outcome maps are equal, 6 otherwise (a table of differences is printed).
    """
    a, b = load_results([args.a]), load_results([args.b])
    if not a and not b:
        raise GateError("neither run reports any invariant id (no `[<id>]` test cases); nothing to compare")
    diff = differences(a, b)
    if not diff:
        print(f"runs agree: {len(a)} id(s), same outcomes")
        return errors.OK
    width = max(len("id"), *(len(d[0]) for d in diff))
    print(f"{'id'.ljust(width)}  {'A':8}  B")
    for ident, left, right in diff:
        print(f"{ident.ljust(width)}  {left:8}  {right}")
    print(f"[{errors.RUNS_DISAGREE}] runs disagree on {len(diff)} id(s): A={args.a} B={args.b}")
    return errors.RUNS_DISAGREE
