"""`verify FILE --commit C [--policy-from REV]`: a `check --attest` statement names C, was made with
the claims of REV and passed (docs/design.md section 14). The signature is checked by the
platform's tool before it (docs/ci.md, "Signed verdicts")."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate.attest.verify import MAX_BYTES, StatementRefused, verify_statement
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import UsageError
from tools.oracle_gate.git.gitio import git
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "verify"
DESCRIPTION = """\
Checks a statement `check --attest` wrote: two canonical in-toto statement
lines of the documented shape, the first naming the second by its sha256;
every id in it that git can recompute (the judged commit and its tree, the
claims' oracles/ tree, the policy's and manifest's blobs) as git computes it;
about commit C (or a commit with the same tree), made with the claims of REV
(default: the claims commit it records), with the clean run when
--require-clean says so, and PASSED. Check the platform's
signature first (docs/ci.md). Exits 0 when it holds; 5 for a malformed or
altered statement, 6 for another commit or other claims, 4 for a FAILED
verdict, 1 when it cannot decide."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `verify` and its arguments."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="a check --attest statement names a commit, its claims, and passed",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="the statement file check --attest wrote")
    parser.add_argument("--commit", required=True, help="the commit the statement must be about (any revision)")
    parser.add_argument(
        "--require-clean",
        action="store_true",
        help="the statement must record the clean run (check --clean); exit 6 otherwise",
    )
    parser.add_argument(
        "--policy-from",
        metavar="REV",
        help="the revision whose oracles/ the statement must have been made with (default: the "
        "claims commit it records, recomputed from git)",
    )


def run(args: argparse.Namespace, context: Context) -> int:
    """Verifies the statement and prints one line; returns 0.

    Raises:
        UsageError: (exit 1) when the file cannot be read, or --commit or --policy-from names no
            commit in the repository.
        StatementRefused: (exit 5, 6 or 4; attest/verify.py) when the statement is refused.
        GitError: (exit 1) when git cannot read what the check needs.
    """
    repo = context.repo()
    commit = _commit(repo, args.commit, "--commit")
    policy_from = _commit(repo, args.policy_from, "--policy-from") if args.policy_from is not None else None
    data = _read(args.file)
    try:
        accepted = verify_statement(data, repo, commit, policy_from, require_clean=args.require_clean)
    except StatementRefused as refused:
        refused.message = f"{args.file}: {refused.message}"
        refused.args = (refused.message,)
        raise
    print(
        visible(
            f"statement ok: {accepted.judged} PASSED with the claims of {accepted.claims} "
            f"(oracles/ tree {accepted.oracles_tree}), "
            f"{'workspace and clean runs' if accepted.clean else 'workspace run only'}, "
            f"oracle-gate {accepted.version}, {accepted.time}"
        )
    )
    return 0


def _commit(repo: str, rev: str, option: str) -> str:
    """The full commit id `rev` names.

    Raises:
        UsageError: (exit 1) when it is empty or names no commit.
    """
    if not rev.strip() or rev.startswith("-"):
        raise UsageError(f"{option} {rev!r} does not name a commit")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}").decode().strip()
    except UsageError:
        raise
    except Exception:  # noqa: BLE001 - GitError: one line naming the option
        raise UsageError(f"{option} {rev!r} is not a commit in this repository; fetch it first") from None


def _read(path: str) -> bytes:
    """The statement file's bytes.

    Raises:
        UsageError: (exit 1) when it cannot be read or is larger than MAX_BYTES.
    """
    try:
        if os.path.getsize(path) > MAX_BYTES:
            raise UsageError(f"{path}: larger than {MAX_BYTES} bytes; not a statement check --attest wrote")
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read the statement {path}: {exc.strerror or exc}") from None
