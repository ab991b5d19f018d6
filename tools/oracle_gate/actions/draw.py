"""The draw action: generated samples of every row, for one run salt.

Usage (from `oracle_suite`):

    draw.py --index INDEX (--salt SALT | --unsalted) --out GENERATED.json --oracle PATH=FILE...

Runs after the pin check (INDEX is its output, so a suite that fails its pins draws nothing). For
each row with a `generate` table it draws `count` samples with `tools.oracle_gate.spec.generate.draw`
from the row's id and seed and SALT, and writes them in the caller's input shape
(`spec/views.py`), rows keyed by id:

    {"schema": 1, "salt": SALT, "rows": {ID: [sample, ...]}}   (SALT is "" when no row drew a sample)

`--unsalted` is what `oracle_suite` passes when the gate named the files whose rows draw
(`--define=oracle_salted=...`, `flags.run_flags`) and this suite's are not among them: a row that
draws samples is then exit 1, so a gate that got the list wrong fails closed instead of drawing
predictable samples with an empty salt.

The file holds inputs only; generated samples are judged by the row's bounds or by idempotence,
never by a stored expected value. Exit 0, 5 when an oracle file is invalid, or 1 for `--unsalted`
with a row that draws.
The contract: docs/design.md sections 2 (generated samples) and 8.
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  # fmt: skip


import argparse
import json
from collections.abc import Sequence

from tools.oracle_gate import errors
from tools.oracle_gate.errors import error_line
from tools.oracle_gate.spec.views import generated_view


def main(argv: Sequence[str] | None = None) -> int:
    """Writes the generated samples; returns 0, 5 when an oracle file is invalid, or 1 when
    `--unsalted` was given and a row draws samples."""
    parser = argparse.ArgumentParser(prog="draw")
    parser.add_argument("--index", required=True)
    parser.add_argument("--salt", default="")
    parser.add_argument("--unsalted", action="store_true")
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
    if args.unsalted and document["rows"]:
        print(
            error_line(
                errors.UNDECIDED,
                f"{', '.join(sorted(oracles))}: rows {', '.join(document['rows'])} draw "
                "generated samples, but the gate's list of files that draw (--define=oracle_salted) does "
                "not name this suite's files, so they would be drawn without the run's salt",
            ),
            file=sys.stderr,
        )
        return errors.UNDECIDED
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(document, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n")  # the C encoder
    return errors.OK


if __name__ == "__main__":
    raise SystemExit(main())
