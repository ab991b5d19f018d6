"""`promote ID --salt S [--write]`: append a run's failing generated samples to the row's blob
(promote.py), then re-pin (`pin --write`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.authoring import vacuity
from tools.oracle_gate.authoring.promote import blob_text, failing_samples
from tools.oracle_gate.commands import Context, Parser, pin_cmd, valid_oracles
from tools.oracle_gate.errors import UsageError, exit_codes_help
from tools.oracle_gate.files import replace_file
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.suite.sample_changes import canonical
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "promote"
DESCRIPTION = """\
Runs the row ID on the work tree's code with the salt S of a run (the salt
`check` prints), and lists the generated samples that fail. With --write,
appends them to the row's blob (an exact_table sample with its expected value
from the row's reference; the other kinds' samples as inputs only), then sets
the pins and the manifest as `pin --write` does. The result is an oracle
change: commit it for a human to label. Writes nothing without --write.
Exits 0 (also when no sample fails), 5 when the oracle files are invalid or
the row's reference is broken, 1 for an unknown ID, a row without a generate
table, a row that fails as a whole, or a blob another row shares."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `promote` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="append a run's failing generated samples to a blob",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("id", metavar="ID", help="the row whose failing samples to promote")
    parser.add_argument("--salt", required=True, help="the salt of the run (check prints it)")
    parser.add_argument("--write", action="store_true", help="append them to the blob and re-pin")


def run(args: argparse.Namespace, context: Context) -> int:
    """Lists (and with `--write` appends) the failing samples; returns 0, or 5 for invalid oracle
    files.

    Raises:
        UsageError: (exit 1) for an ID no oracle file declares, or a blob another row shares.
        GateError: (exit 1) as `promote.failing_samples`; OracleError (exit 5) for a broken reference.
    """
    repo = context.repo()
    tree = WorkTree(repo)
    oracles = valid_oracles(tree)
    if oracles is None:
        return errors.INVALID_ORACLE
    rows = {inv.id: inv for inv in oracles.invariants}
    inv = rows.get(args.id)
    if inv is None:
        raise UsageError(f"no oracle row has the id {args.id!r}")
    sharing = sorted(i.id for i in oracles.invariants if i.blob == inv.blob and i.id != inv.id)
    if sharing and args.write:
        raise UsageError(
            f"{inv.blob} is also the blob of {', '.join(sharing)}; give {inv.id} a blob of its own "
            "before promoting samples into it"
        )
    listing = tree.files("oracles")
    blob = tree.read(listing[inv.blob])
    with vacuity.open_runner(repo, context.environ) as runner:
        found = failing_samples(repo, inv, tree.read(listing[inv.source]), blob, runner, args.salt)
    count = len(found.samples)
    print(
        visible(
            f"{inv.id}: {count} of {inv.generate.count if inv.generate else 0} generated sample(s) fail "
            f"with salt {args.salt}"
        )
    )
    for index, sample in zip(found.indices, found.samples, strict=True):
        print(visible(f"  generated sample {index}: {canonical(sample)}"))
    if not count:
        print("nothing to promote")
        return errors.OK
    if not args.write:
        print(visible(f"`promote {inv.id} --salt {args.salt} --write` appends them to {inv.blob}"))
        return errors.OK
    target = os.path.join(repo, inv.blob)
    replace_file(target, blob_text([*load_samples(blob), *found.samples]))
    print(visible(f"appended {count} sample(s) to {inv.blob}"))
    return pin_cmd.run(argparse.Namespace(files=[os.path.join(repo, inv.source)], write=True), context)
