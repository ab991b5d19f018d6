"""Argument parsing and the one place errors become exit codes (docs/design.md section 6)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence

from tools.oracle_gate import __version__, errors
from tools.oracle_gate.commands import (
    Command,
    Context,
    Parser,
    check_cmd,
    clean_run_cmd,
    compare_cmd,
    engine_cmd,
    gitlab_labels_cmd,
    guard_cmd,
    hidden_cmd,
    init_cmd,
    lock_cmd,
    manifest_cmd,
    pin_cmd,
    promote_cmd,
    propose_cmd,
    record_cmd,
    stop_cmd,
    vacuity_cmd,
    verify_cmd,
)
from tools.oracle_gate.errors import GateError, error_line
from tools.oracle_gate.progress import configure_default
from tools.oracle_gate.text import RunnerSafe

# The subcommands, in the order `--help` lists them; each module has the shape commands/__init__.py describes.
COMMANDS: tuple[Command, ...] = (
    check_cmd,
    verify_cmd,
    clean_run_cmd,
    manifest_cmd,
    pin_cmd,
    propose_cmd,
    vacuity_cmd,
    promote_cmd,
    record_cmd,
    hidden_cmd,
    compare_cmd,
    gitlab_labels_cmd,
    init_cmd,
    lock_cmd,
    engine_cmd,
    guard_cmd,
    stop_cmd,
)
DESCRIPTION = """\
Merge gate that keeps human-owned oracles apart from agent-written harnesses:
a change may touch the protected paths (oracles/ first) only under the
policy's label, and every invariant under oracles/ must pass."""


def build_parser() -> argparse.ArgumentParser:
    """Returns the parser for `oracle_gate [--repo DIR] [--debug] <command> ...`: one subparser per
    module of COMMANDS (`oracle_gate --help` lists them). Its `parse_args` raises UsageError
    (exit 1) for bad arguments instead of exiting 2 (`commands.Parser`)."""
    parser = Parser(
        prog="oracle_gate",
        description=DESCRIPTION,
        epilog=errors.exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--repo", help="repository root (default: $BUILD_WORKSPACE_DIRECTORY, else the current directory)"
    )
    parser.add_argument("--debug", action="store_true", help="print a traceback for unexpected errors")
    # The same options after the subcommand; SUPPRESS keeps a value given before it.
    common = Parser(add_help=False)
    common.add_argument("--repo", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub, [common])
    return parser


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Runs the gate CLI.

    Args:
        argv: arguments without the program name (default: sys.argv[1:]).
        environ: the environment (default: os.environ).

    Returns:
        The exit code of docs/design.md section 6. Never raises except SystemExit from --help and
        --version (exit 0).
    """
    env = os.environ if environ is None else environ
    for stream in (sys.stdout, sys.stderr):
        # Paths may hold any bytes; a strict stream encoding must not turn a report into a crash.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    # No `##[` reaches a CI runner's log from anything the gate writes (text.RunnerSafe).
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RunnerSafe(sys.stdout), RunnerSafe(sys.stderr)
    configure_default()
    try:
        return _main(argv, env, environ is None)
    finally:
        configure_default()  # a command's log file is closed; output is as at the start
        for safe in (sys.stdout, sys.stderr):
            if isinstance(safe, RunnerSafe):
                safe.close_line()
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None, env: Mapping[str, str], own_process: bool) -> int:
    """`main` inside its streams: `own_process` when the environment is the process's own."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    if own_process and threading.current_thread() is threading.main_thread():
        # SIGTERM (a CI job cancelled, a test timeout) unwinds like Ctrl-C, so the Bazel child is
        # stopped and temporary trees are removed.
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        # `bazel run` starts the gate in its runfiles tree; relative paths the user typed are
        # relative to where they ran Bazel.
        if own_process and env.get("BUILD_WORKING_DIRECTORY"):
            os.chdir(env["BUILD_WORKING_DIRECTORY"])
        args = build_parser().parse_args(args_list)
        command = next(c for c in COMMANDS if args.command == c.NAME)
        return command.run(args, Context(env, args.repo))
    except GateError as exc:
        print(error_line(exc.code, str(exc)), file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print(error_line(errors.UNDECIDED, "interrupted"), file=sys.stderr)
        return errors.UNDECIDED
    except Exception as exc:  # noqa: BLE001 - fail closed on anything unexpected
        if debug:
            traceback.print_exc()
        print(
            error_line(
                errors.UNDECIDED, f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)"
            ),
            file=sys.stderr,
        )
        return errors.UNDECIDED
