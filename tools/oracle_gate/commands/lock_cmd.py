"""`lock [--requirements FILE]`: refreshes the repository's requirements_lock.txt (authoring/lock.py)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.lock.lock_check import parse_lock
from tools.oracle_gate import errors
from tools.oracle_gate.authoring.lock import LOCK_NAME, LockError, lock_text, requirements_path, resolve, source_of
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import exit_codes_help
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "lock"
DESCRIPTION = f"""\
Resolves the production packages' third-party requirements with pip's
configured index (wheels only) and writes {LOCK_NAME} at the repository's root:
every distribution pinned with its wheel's sha256, nothing else (no index, no
path). The requirements file is --requirements, else the one the lock names on
its `# source:` line (init --requirements writes it), else requirements.in.
Prints what changed. Exits 0, or 1 when the requirements cannot be locked or
the lock cannot be written."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `lock` and its option."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help=f"refresh {LOCK_NAME} from the requirements",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--requirements",
        default=None,
        metavar="FILE",
        help="the requirements file, a file of the repository (a relative path is read from its root; "
        "default: the lock's source, else requirements.in)",
    )


def run(args: argparse.Namespace, context: Context) -> int:
    """Writes the lock and prints one line per distribution added, removed or changed.

    Raises:
        LockError: (exit 1) when the requirements file is missing or cannot be locked.
        GateError: (exit 1) when the lock cannot be written.
    """
    repo = context.repo()
    target = os.path.join(repo, LOCK_NAME)
    old = ""
    if os.path.exists(target):
        with open(target, encoding="utf-8") as f:
            old = f.read()
    if os.path.islink(target):
        raise LockError(f"lock: {LOCK_NAME} is a symbolic link; the lock must be a regular file of the repository")
    named = source_of(old)
    if (
        named is not None
        and not args.requirements
        and (
            os.path.isabs(named)
            or ".." in named.split("/")
            or not os.path.realpath(os.path.join(repo, named)).startswith(os.path.realpath(repo) + os.sep)
        )
    ):
        raise LockError(
            f"lock: {LOCK_NAME} names the source {named!r}, which is not a file of the repository; "
            "pass --requirements FILE"
        )
    source = requirements_path(repo, args.requirements or named or "requirements.in")
    if not os.path.isfile(source):
        raise LockError(f"lock: no requirements file {source}; pass --requirements FILE")
    rel = os.path.relpath(os.path.realpath(source), os.path.realpath(repo))
    new = lock_text(resolve(source, context.environ), rel)
    if new == old:
        print(f"lock: {LOCK_NAME} is up to date with {rel}")
        return errors.OK
    try:
        if os.path.lexists(target):
            os.unlink(target)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(new)
    except OSError as exc:
        raise errors.GateError(f"lock: cannot write {target}: {exc}") from None
    before, after = parse_lock(old)[0], parse_lock(new)[0]
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            print(visible(f"lock: {name} {before.get(name, '-')} -> {after.get(name, '-')}"))
    print(f"lock: wrote {LOCK_NAME} from {rel}")
    return errors.OK
