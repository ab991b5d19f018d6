"""`pin [FILE...] [--write]`: show which `blob_sha256` pins are wrong; with `--write`, set them to the
blobs' sha256 in place and regenerate the manifest (docs/oracles.md, "Blobs and pinning")."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.authoring.pin import Pin, read_pins, rewrite
from tools.oracle_gate.commands import Context, Parser, valid_oracles
from tools.oracle_gate.errors import UsageError, error_line, exit_codes_help
from tools.oracle_gate.files import replace_file
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.spec.schema import is_oracle_path
from tools.oracle_gate.suite.manifest import checkout_rewrites, write_manifest
from tools.oracle_gate.text import columns, visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "pin"
DESCRIPTION = """\
Hashes the blob of every row of the oracle files (all of oracles/*.toml, or the
FILEs given) in the work tree and shows, per row, whether its blob_sha256 is
right. With --write, sets each wrong blob_sha256 to the blob's sha256 in place,
leaving every other byte of the file as it was (comments, order, spacing), and
regenerates oracles/MANIFEST.sha256. Changing pins is an oracle change: the
pull request needs the policy's label. Exits 0 when every pin is right (or
was written), 5 when a pin is wrong without --write or a blob cannot be
pinned (missing, not a regular file, rewritten at checkout), or when the pins
are right but an oracle file is not valid (each problem printed, as the build's
pin check would refuse it)."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `pin` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="show wrong blob_sha256 pins; --write fixes them in place",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="oracle files (default: every oracles/*.toml)")
    parser.add_argument("--write", action="store_true", help="rewrite the wrong pins and regenerate the manifest")


def oracle_files(repo: str, given: Sequence[str], tree: WorkTree) -> list[str]:
    """The repository-relative oracle files to pin: `given` (paths relative to the current
    directory or absolute), else every `oracles/*.toml` but the policy.

    Raises:
        UsageError: (exit 1) for a path that is not an oracle file of this repository.
    """
    if not given:
        return sorted(p for p, e in tree.files("oracles").items() if is_oracle_path(p) and e.is_regular)
    found = []
    for name in given:
        rel = os.path.relpath(os.path.realpath(name), os.path.realpath(repo)).replace(os.sep, "/")
        if not is_oracle_path(rel) or not os.path.isfile(os.path.join(repo, rel)):
            raise UsageError(f"{name}: not an oracle file of {repo} (oracles/NAME.toml, not the policy)")
        found.append(rel)
    return sorted(dict.fromkeys(found))


def state(pin: Pin) -> str:
    """One word or phrase for the table."""
    if pin.problem:
        return "CANNOT PIN: " + pin.problem
    if pin.ok:
        return "ok"
    if not pin.pinned:  # a new row: nothing is wrong yet, `--write` adds its pin
        return f"NOT PINNED YET: blob is {pin.actual}"
    return f"WRONG: pinned {pin.pinned[:12]}, blob is {pin.actual}"


def run(args: argparse.Namespace, context: Context) -> int:
    """Shows (and with `--write` fixes) the pins; returns 0 or 5 as DESCRIPTION says.

    Raises:
        OracleError: (exit 5) for an oracle file that is not TOML with `[[invariant]]` rows.
        GateError: (exit 1) when a pin cannot be rewritten in place, or a file cannot be read or written.
    """
    repo = context.repo()
    tree = WorkTree(repo)
    rewrites = checkout_rewrites(tree)
    pins: list[Pin] = []
    contents: dict[str, bytes] = {}
    for path in oracle_files(repo, args.files, tree):
        with open(os.path.join(repo, path), "rb") as f:
            contents[path] = f.read()
        pins.extend(read_pins(tree, path, contents[path], rewrites))
    rows = [(f"{p.path}:{p.line}", p.id or f"row {p.index + 1}", p.blob or "-", state(p)) for p in pins]
    for line in columns(
        rows,
        (
            max([len(r[0]) for r in rows] + [4]),
            max([len(r[1]) for r in rows] + [2]),
            max([len(r[2]) for r in rows] + [4]),
        ),
        indent="",
    ):
        print(visible(line))
    wrong = [p for p in pins if not p.problem and not p.ok]
    blocked = [p for p in pins if p.problem]
    for p in blocked:
        print(
            error_line(errors.INVALID_ORACLE, f"{p.path}:{p.line}: {p.id or f'row {p.index + 1}'}: {p.problem}"),
            file=sys.stderr,
        )
    if not args.write:
        print(
            visible(
                f"{len(pins)} pin(s): {len(pins) - len(wrong) - len(blocked)} ok, {len(wrong)} wrong, "
                f"{len(blocked)} cannot be pinned" + ("; `pin --write` sets the wrong ones" if wrong else "")
            )
        )
        if wrong or blocked:
            return errors.INVALID_ORACLE
        return _validated(tree)
    for path in sorted({p.path for p in wrong}):
        updated = rewrite(contents[path], path, {p.index: str(p.actual) for p in wrong if p.path == path})
        target = os.path.join(repo, path)
        replace_file(target, updated)
        print(visible(f"updated {sum(1 for p in wrong if p.path == path)} pin(s) in {path}"))
    if blocked:
        print(visible(f"{len(blocked)} pin(s) cannot be set; the manifest was not regenerated"))
        return errors.INVALID_ORACLE
    lines = write_manifest(tree)
    print(
        visible(
            f"wrote oracles/MANIFEST.sha256 ({lines} lines); commit it: the pull request needs the policy's label "
            "(locally: `check --label NAME`)"
        )
    )
    return _validated(tree)


def _validated(tree: WorkTree) -> int:
    """0 when the work tree's oracle files, pins now right, are valid as the build's pin check
    reads them; else 5 after printing each problem (`valid_oracles`): right pins on a row the build
    refuses are no success."""
    sys.stdout.flush()  # what was written comes before the problems, which go to stderr
    if valid_oracles(tree) is not None:
        return errors.OK
    print(
        visible(
            "oracle-gate: the pins are right, but the oracle files have the problems above: the build "
            "refuses them (exit 5)"
        ),
        file=sys.stderr,
    )
    return errors.INVALID_ORACLE
