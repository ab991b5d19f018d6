"""The draw action: generated samples of every row, for one run salt.

Usage (from `oracle_suite`):

    draw.py --index INDEX --salt SALT --out GENERATED.json --oracle PATH=FILE...

Runs after the pin check (INDEX is its output, so a suite that fails its pins draws nothing). For
each row with a `generate` table it draws `count` samples with `tools.oracle_gate.generate.draw`
from the row's id and seed and SALT, and writes them in the caller's input shape
(`runner/views.py`), rows keyed by id:

    {"schema": 1, "salt": SALT, "rows": {ID: [sample, ...]}}   (SALT is "" when no row drew a sample)

The file holds inputs only; generated samples are judged by the row's bounds or by idempotence,
never by a stored expected value. Exit 0, or 5 when an oracle file is invalid.
The contract: docs/design.md sections 2 (generated samples) and 8.
"""

from __future__ import annotations

import os
import sys

# Python puts this script's real folder (the source tree, not the runfiles) first on sys.path; an
# untracked file there must not shadow a module this process imports. os and sys are loaded already.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != _HERE]

import argparse
import json
from collections.abc import Sequence
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.errors import error_line
from tools.oracle_gate.generate import draw
from tools.oracle_gate.runner.views import VIEW_SCHEMA, input_samples
from tools.oracle_gate.schema import parse_oracle


def generated_view(oracles: dict[str, bytes], salt: str) -> tuple[dict[str, Any], list[str]]:
    """Returns (the generated-samples document, problems) for oracle files given as path -> bytes."""
    rows: dict[str, Any] = {}
    problems: list[str] = []
    for path, data in sorted(oracles.items()):
        oracle = parse_oracle(data, path)
        problems.extend(str(p) for p in oracle.problems)
        for inv in oracle.invariants:
            samples = draw(inv, salt)
            if samples:
                rows[inv.id] = input_samples(inv, samples)
    # The salt only where it drew something: a suite without generators then gets the same view in
    # every run, and Bazel keeps its caller action and oracle test cached (docs/performance.md).
    return {"schema": VIEW_SCHEMA, "salt": salt if rows else "", "rows": dict(sorted(rows.items()))}, problems


def main(argv: Sequence[str] | None = None) -> int:
    """Writes the generated samples; returns 0, or 5 when an oracle file is invalid."""
    parser = argparse.ArgumentParser(prog="draw")
    parser.add_argument("--index", required=True)
    parser.add_argument("--salt", default="")
    parser.add_argument("--out", required=True)
    parser.add_argument("--oracle", action="append", default=[])
    args = parser.parse_args(argv)
    oracles = {}
    for value in args.oracle:
        path, _, file = value.partition("=")
        with open(file, "rb") as f:
            oracles[path] = f.read()
    document, problems = generated_view(oracles, args.salt)
    for problem in problems:
        print(error_line(errors.INVALID_ORACLE, problem), file=sys.stderr)
    if problems:
        return errors.INVALID_ORACLE
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(document, f, sort_keys=True, allow_nan=False, separators=(",", ":"))
        f.write("\n")
    return errors.OK


if __name__ == "__main__":
    raise SystemExit(main())
