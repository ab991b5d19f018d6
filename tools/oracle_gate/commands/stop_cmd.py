"""`stop`: ends every kept root of this user (the workspace runs', the base tip's probes'), with
its Bazel server (runs/kept_root.py)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import exit_codes_help
from tools.oracle_gate.runs.blocks import runs_dir
from tools.oracle_gate.runs.kept_root import IDLE_S, stop_all

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "stop"
DESCRIPTION = f"""\
Ends the sealed roots that `check` keeps between checks for its workspace runs
(one per checkout) and its probes of the base tip (one per repository), each with its
Bazel server, in this user's runs folder
($XDG_CACHE_HOME/oracle-gate/runs, else ~/.cache/oracle-gate/runs). A kept root ends by
itself after {IDLE_S // 3600} hours without a check; the next check starts a new one. Prints
how many ran. Exits 0, or 1 when the runs folder cannot be used."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `stop`."""
    subparsers.add_parser(
        NAME,
        parents=parents,
        help="end the kept roots (workspace runs, base tip probes) and their Bazel servers",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def run(args: argparse.Namespace, context: Context) -> int:
    """Ends every kept root of the runs folder and prints how many ran.

    Raises:
        GateError: (exit 1) when the runs folder cannot be used (`blocks.runs_dir`).
    """
    print(f"stop: ended {stop_all(runs_dir(context.environ))} kept root(s)")
    return errors.OK
