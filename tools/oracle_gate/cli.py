"""Argument parsing and the one place errors become exit codes (docs/design.md sections 5-6)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence

from tools.oracle_gate import errors
from tools.oracle_gate.commands import check_cmd, clean_run_cmd, compare_cmd, manifest_cmd
from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.gitio import toplevel
from tools.oracle_gate.text import visible


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit 1) instead of exiting 2 (docs/design.md section 6)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message}; see `{self.prog} --help`")


def build_parser() -> argparse.ArgumentParser:
    """Returns the parser for `oracle_gate check|manifest|compare|clean-run`."""
    parser = _Parser(prog="oracle_gate", description="Merge gate that keeps oracles apart from harnesses.")
    parser.add_argument("--repo", help="repository root (default: $BUILD_WORKSPACE_DIRECTORY, else the current directory)")
    parser.add_argument("--debug", action="store_true", help="print a traceback for unexpected errors")
    # The same options after the subcommand; SUPPRESS keeps a value given before it.
    common = _Parser(add_help=False)
    common.add_argument("--repo", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    check = sub.add_parser("check", parents=[common], help="all gate checks of HEAD against a base revision")
    check.add_argument("--base", help="base revision (default: origin/main, else main)")
    check.add_argument("--results", nargs="+", default=[], metavar="FILE",
                       help="JUnit XML files or Bazel test-log directories (default: run bazel test //oracles/... //harness/...)")
    check.add_argument("--label", action="append", default=[], help="a pull-request label (repeatable, or comma-separated)")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.add_argument("--clean", action="store_true",
                       help="also run the harness on a pristine tree and require the same per-id outcomes (exit 6)")
    check.add_argument("--remote", action="store_true",
                       help="with --clean: run the clean harness through --config=remote (REAPI)")
    check.add_argument("--salt", help="replay a run: the salt for generated samples (default: a fresh one per check)")
    clean = sub.add_parser("clean-run", parents=[common],
                           help="run the harness on a pristine tree of committed content; write per-id results")
    clean.add_argument("--base", help="base revision whose oracles/ is used (default: origin/main, else main)")
    clean.add_argument("--out", required=True, help="JUnit XML file to write")
    clean.add_argument("--remote", action="store_true", help="run through --config=remote (REAPI)")
    clean.add_argument("--label", action="append", default=[], help="a pull-request label (repeatable)")
    clean.add_argument("--salt", default="", help="the salt for generated samples (default: empty)")
    manifest = sub.add_parser("manifest", parents=[common], help="regenerate or verify oracles/MANIFEST.sha256")
    mode = manifest.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the manifest (a labelled, human change)")
    mode.add_argument("--check", action="store_true", help="verify the manifest is current")
    compare = sub.add_parser("compare", parents=[common], help="two harness runs report the same ids with the same outcomes")
    compare.add_argument("a", help="JUnit XML file or Bazel test-log directory of run A")
    compare.add_argument("b", help="JUnit XML file or Bazel test-log directory of run B")
    return parser


def _repo(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    if args.repo is not None and not args.repo.strip():
        raise UsageError("--repo is empty (an unset variable?); pass the repository's directory")
    start = args.repo or environ.get("BUILD_WORKSPACE_DIRECTORY") or os.getcwd()
    return toplevel(start)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Runs the gate CLI.

    Args:
        argv: arguments without the program name (default: sys.argv[1:]).
        environ: the environment (default: os.environ).

    Returns:
        The exit code of docs/design.md section 6. Never raises except SystemExit from --help.
    """
    env = os.environ if environ is None else environ
    for stream in (sys.stdout, sys.stderr):
        # Paths may hold any bytes; a strict stream encoding must not turn a report into a crash.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    if environ is None and threading.current_thread() is threading.main_thread():
        # SIGTERM (a CI job cancelled, a test timeout) unwinds like Ctrl-C, so the Bazel child is
        # stopped and temporary trees are removed.
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        # `bazel run` starts the gate in its runfiles tree; relative paths the user typed are
        # relative to where they ran Bazel.
        if environ is None and env.get("BUILD_WORKING_DIRECTORY"):
            os.chdir(env["BUILD_WORKING_DIRECTORY"])
        args = build_parser().parse_args(args_list)
        if args.command == "compare":
            return compare_cmd.run(args)
        repo = _repo(args, env)
        if args.command == "manifest":
            return manifest_cmd.run(args, repo)
        if args.command == "clean-run":
            return clean_run_cmd.run(args, repo, env)
        return check_cmd.run(args, repo, env)
    except GateError as exc:
        print(f"oracle_gate: [{exc.code}] {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("oracle_gate: [1] interrupted", file=sys.stderr)
        return errors.UNDECIDED
    except Exception as exc:  # noqa: BLE001 - fail closed on anything unexpected
        if debug:
            traceback.print_exc()
        print(f"oracle_gate: [1] internal error: {type(exc).__name__}: {visible(str(exc))} (rerun with --debug for a traceback)",
              file=sys.stderr)
        return errors.UNDECIDED
