"""One module per subcommand, all of one shape, wired by cli.py:

NAME: the subcommand's name on the command line.
DESCRIPTION: what it does, for its `--help` (wrapped to 79 columns by hand).
add_parser(subparsers, parents) -> None: adds the subcommand's parser, with a one-line help, a
    description, and the options of `parents` (the top-level options, repeatable after it).
run(args, context) -> int: runs it; returns the exit code (docs/design.md section 6) or raises
    GateError, which cli.py prints as one line and turns into its code.

The modules, one per subcommand:

- `check_cmd.py`: `check`, every gate check of HEAD against a base revision, and its report.
- `verify_cmd.py`: `verify`, a statement `check --attest` wrote checked against a commit and its claims.
- `guard_cmd.py`: `guard install|hook`, the agent-side guard's files and its decision on a tool call.
- `clean_run_cmd.py`: `clean-run`, the oracle test and the harness on a pristine tree.
- `compare_cmd.py`: `compare A B`, two runs with the same ids, outcomes and digests.
- `manifest_cmd.py`: `manifest --write|--check`, `oracles/MANIFEST.sha256` regenerated or verified.
- `pin_cmd.py`: `pin`, the wrong `blob_sha256` pins, set in place with `--write`.
- `promote_cmd.py`: `promote`, a run's failing generated samples appended to the row's blob.
- `record_cmd.py`: `record`, rows' samples observed on approved code, written as their blobs with `--write`.
- `propose_cmd.py`: `propose`, candidate rows for the functions a change added or changed.
- `vacuity_cmd.py`: `vacuity`, rows that pass on every mutant of their entry.
- `init_cmd.py`: `init`, adding the gate to a repository.
- `lock_cmd.py`: `lock`, the repository's `requirements_lock.txt` refreshed.
- `hidden_cmd.py`: `hidden add`, a blob put into the hidden store.
- `gitlab_labels_cmd.py`: `gitlab-labels`, the labels of a GitLab merge request given on the head.
- `engine_cmd.py`: `engine start|status|stop`, the loopback REAPI engine as a service.
- `stop_cmd.py`: `stop`, every workspace run's kept root of this user ended.
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
