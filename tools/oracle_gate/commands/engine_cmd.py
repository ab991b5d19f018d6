"""`engine start|status|stop`: the loopback REAPI engine as a service of this machine, for
`check --clean --remote` without a deployed engine (docs/remote-execution.md)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import GateError, exit_codes_help
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.engine.service import EngineState
    from tools.oracle_gate.commands import Subparsers

NAME = "engine"
DESCRIPTION = """\
Runs the loopback remote execution engine on this machine: PostgreSQL,
BuildGrid with execution and one worker that seals every action with
bubblewrap, all on 127.0.0.1 and started by this command, not by a service
manager.

  start   starts it unless it runs (BuildGrid is installed into its own
          virtual environment on first use) and prints the endpoint and the
          variable to export for `check --clean --remote`
  status  prints the endpoint and the pids; exits 1 when it does not run
  stop    stops every process it started, by pid

State, logs and the pids live in $ORACLE_GATE_ENGINE_DIR, else engine/ under
$ORACLE_GATE_CACHE, else under ~/.cache/oracle-gate."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `engine` and its action."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="start, inspect or stop the loopback REAPI engine for --clean --remote",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=("start", "status", "stop"), help="what to do")


def describe(state: EngineState) -> list[str]:
    """The lines `start` and `status` print for a running engine."""
    pids = ", ".join(f"{name} {pid}" for name, pid in sorted(state.pids.items()))
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.started))
    return [
        f"engine: running at {state.target} since {since} (supervisor pid {state.supervisor}; {pids})",
        f"export ORACLE_GATE_REMOTE_EXECUTOR={state.target}",
        "then: check --clean --remote",
    ]


def run(args: argparse.Namespace, context: Context) -> int:
    """Starts, reports or stops the engine; returns 0, or 1 for `status` when it does not run.

    Raises:
        GateError: (exit 1) when the engine cannot start or stop, or its state file is unreadable;
            the message has the log tail.
    """
    from tools.engine import service  # only this command needs the engine
    from tools.engine.engine import EngineError

    try:
        if args.action == "start":
            state, started = service.start(context.environ)
            print(
                visible(
                    f"engine: {'started' if started else 'already running'}; state in "
                    f"{service.state_dir(context.environ)}"
                )
            )
            for line in describe(state):
                print(visible(line))
            return errors.OK
        if args.action == "status":
            found = service.status(context.environ)
            if found is None:
                print(visible(f"engine: not running (state in {service.state_dir(context.environ)})"))
                return errors.UNDECIDED
            for line in describe(found):
                print(visible(line))
            return errors.OK
        stopped = service.stop(context.environ)
        print(visible(f"engine: stopped pids {', '.join(map(str, stopped))}" if stopped else "engine: not running"))
        return errors.OK
    except EngineError as exc:
        raise GateError(f"engine {args.action}: {' '.join(str(exc).split())[:2000]}") from None
