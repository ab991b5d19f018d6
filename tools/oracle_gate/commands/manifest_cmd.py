"""`manifest --write|--check`: regenerate or verify `oracles/MANIFEST.sha256` in the work tree
(docs/design.md section 4)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import error_line, exit_codes_help
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.suite.manifest import MANIFEST_PATH, manifest_problems, write_manifest

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "manifest"
DESCRIPTION = """\
Regenerates (--write) or verifies (--check) oracles/MANIFEST.sha256 from the
files under oracles/ in the work tree: one sha256sum line per file and one
`# invariant <id> <file>` line per id. Writing it is part of a labelled, human
change of the oracles. --check exits 0 when the manifest is current, 5 when it
is stale or an oracle file is invalid."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `manifest` and its two modes."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="regenerate or verify oracles/MANIFEST.sha256",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the manifest (a labelled, human change)")
    mode.add_argument("--check", action="store_true", help="verify the manifest is current")


def run(args: argparse.Namespace, context: Context) -> int:
    """Writes (`--write`) or verifies (`--check`) the manifest of the work tree at the repository.

    Returns:
        0 when written or current, 5 when stale or when an oracle file is invalid (one error line
        per problem on stderr).

    Raises:
        OracleError: (exit 5) from `--write` when the manifest cannot be generated (manifest.render).
        GateError: (exit 1) when the repository or a file cannot be read.
    """
    tree = WorkTree(context.repo())
    if args.write:
        print(f"wrote {MANIFEST_PATH} ({write_manifest(tree)} lines)")
        return errors.OK
    problems = manifest_problems(tree)
    for problem in problems:
        print(error_line(problem.code, str(problem)), file=sys.stderr)
    if problems:
        return errors.INVALID_ORACLE
    print(f"{MANIFEST_PATH} is current")
    return errors.OK
