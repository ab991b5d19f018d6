"""`hidden add FILE --id ID [--store DIR]`: put a blob into the hidden store and print the row line
that names it (docs/oracles.md, "Hidden samples")."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser, valid_oracles
from tools.oracle_gate.errors import UsageError, exit_codes_help
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.spec.samples import SampleError, check_shape, load_samples
from tools.oracle_gate.suite.hidden_store import MAX_HIDDEN_BYTES, STORE_VARIABLE, add, check_folder
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "hidden"
DESCRIPTION = f"""\
`hidden add FILE --id ID` checks that FILE is a blob the row ID can take (the
same JSON and sample shape as its `blob`), copies it into the hidden store
(--store, else ${STORE_VARIABLE}) under its sha256, and prints the line
`hidden_sha256 = "..."` to add to the row: an oracle change for a human to
label. The store must lie outside the repository; keep FILE out of every
commit (delete it once it is in the store). Only `check --clean` reads the
store. Exits 0, 5 when FILE is not a blob of the row's shape or the oracle
files are invalid, 1 for an unknown ID, a missing store or a store inside
the repository."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `hidden add` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="put a blob into the hidden store",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    adding = actions.add_parser(
        "add",
        help="copy FILE into the store and print the row line",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    adding.add_argument("file", metavar="FILE", help="the hidden blob (a JSON array of samples, as a blob)")
    adding.add_argument("--id", required=True, help="the row that gets the hidden samples")
    adding.add_argument("--store", help=f"the store folder (default: ${STORE_VARIABLE})")


def run(args: argparse.Namespace, context: Context) -> int:
    """Adds FILE to the store; returns 0, or 5 as DESCRIPTION says.

    Raises:
        UsageError: (exit 1) for an unknown ID, no store, or a FILE that cannot be read.
        GateError: (exit 1) for a store that is not a folder, lies inside the repository, or holds a
            wrong file under FILE's digest.
    """
    repo = context.repo()
    folder = args.store or context.environ.get(STORE_VARIABLE, "")
    if not folder:
        raise UsageError(f"no hidden store: pass --store DIR or set {STORE_VARIABLE}")
    folder = os.path.abspath(folder)
    check_folder(folder, repo)
    oracles = valid_oracles(WorkTree(repo))
    if oracles is None:
        return errors.INVALID_ORACLE
    rows = {inv.id: inv for inv in oracles.invariants}
    if args.id not in rows:
        raise UsageError(f"{args.id}: no row of the oracle files has this id")
    row = rows[args.id]
    try:
        if os.path.getsize(args.file) > MAX_HIDDEN_BYTES:
            raise UsageError(f"{args.file}: larger than {MAX_HIDDEN_BYTES} bytes")
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UsageError(f"{args.file}: cannot read it: {exc.strerror}") from None
    try:
        check_shape(row, load_samples(data))
    except SampleError as exc:
        print(visible(f"oracle-gate: [5] {args.file}: not a blob row {row.id} can take: {exc}"), file=sys.stderr)
        return errors.INVALID_ORACLE
    digest, written = add(folder, data)
    print(visible(f"{'added' if written else 'already held'}: {os.path.join(folder, digest)}"))
    print(visible(f"add to row {row.id} in {row.source} (an oracle change; the pull request needs the label):"))
    print(f'hidden_sha256 = "{digest}"')
    real_file, real_repo = os.path.realpath(args.file), os.path.realpath(repo)
    if real_file.startswith(real_repo.rstrip(os.sep) + os.sep):
        print(visible(f"{args.file} lies inside the repository: delete it, and never commit it"), file=sys.stderr)
    return errors.OK
