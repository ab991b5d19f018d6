"""One module per subcommand, all of one shape, wired by cli.py:

NAME: the subcommand's name on the command line.
DESCRIPTION: what it does, for its `--help` (wrapped to 79 columns by hand).
add_parser(subparsers, parents) -> None: adds the subcommand's parser, with a one-line help, a
    description, and the options of `parents` (the top-level options, repeatable after it).
run(args, context) -> int: runs it; returns the exit code (docs/design.md section 6) or raises
    GateError, which cli.py prints as one line and turns into its code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tools.oracle_gate.errors import UsageError
from tools.oracle_gate.git.gitio import toplevel
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.suite.loader import Oracles, load_oracles
from tools.oracle_gate.text import visible


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit 1) instead of exiting 2 (docs/design.md section 6);
    the class of the main parser and of every subcommand's."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message}; see `{self.prog} --help`")


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[Parser]


class Command(Protocol):
    """The shape of a command module (see above)."""

    NAME: str
    DESCRIPTION: str

    def add_parser(self, subparsers: Subparsers, parents: Sequence[Parser]) -> None: ...

    def run(self, args: argparse.Namespace, context: Context) -> int: ...


@dataclass(frozen=True)
class Context:
    """What a command gets besides its own arguments.

    Attributes:
        environ: the environment (os.environ, or the one a test passes).
        repo_option: `--repo` as given, or None.
    """

    environ: Mapping[str, str]
    repo_option: str | None

    def repo(self) -> str:
        """The repository's root: `--repo`, else $BUILD_WORKSPACE_DIRECTORY (set by `bazel run`),
        else the current directory, resolved to the root of its work tree (`gitio.toplevel`).

        Raises:
            UsageError: (exit 1) for an empty `--repo`.
            GitError: (exit 1) when the directory is not inside a git work tree.
        """
        if self.repo_option is not None and not self.repo_option.strip():
            raise UsageError("--repo is empty (an unset variable?); pass the repository's directory")
        start = self.repo_option or self.environ.get("BUILD_WORKSPACE_DIRECTORY") or os.getcwd()
        return toplevel(start)


def valid_oracles(tree: WorkTree) -> Oracles | None:
    """The work tree's oracles (`loader.load_oracles`), or None after printing each problem to
    stderr as `oracle-gate: [5] ...`: the caller then exits 5 (errors.INVALID_ORACLE)."""
    oracles = load_oracles(tree)
    if not oracles.problems:
        return oracles
    for problem in oracles.problems:
        print(visible(f"oracle-gate: [5] {problem}"), file=sys.stderr)
    return None
