"""`check`: every gate check of HEAD against a base revision; prints the report that report.py
renders (text, JSON, GitHub or Markdown), writes the JUnit and Markdown report files it is asked
for, and returns the gate's exit code (docs/design.md sections 5-7)."""

from __future__ import annotations

import argparse
import os
import re
import secrets
import stat
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tools.oracle_gate.approval.labels import collect_labels
from tools.oracle_gate.attest.statement import Approval, statement_lines
from tools.oracle_gate.check import run_check
from tools.oracle_gate.check.behaviour_phase import probe_runner
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import GateError, UsageError, exit_codes_help
from tools.oracle_gate.git.gitio import default_base
from tools.oracle_gate.progress import configure_check
from tools.oracle_gate.report import FORMATS, junit_xml, render, render_markdown
from tools.oracle_gate.runs.blocks import runs_dir
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "check"
DESCRIPTION = """\
Runs every gate check of a change against a base revision, on what would land:
the merge result of HEAD into the base tip, with the tip's claims (HEAD itself
when it contains the tip). The checks: protected paths, the oracle files and
blob pins, the manifest, the invariant ids kept, and the oracle test's per-id
outcomes, from a Bazel run of //oracles/... and //harness/... or from
--results. With --clean, a second run on a pristine tree must agree with the
first. Prints one line per check, the per-id outcomes and one line per
violation, and exits with the lowest code that applies."""

# A salt goes into `--define=oracle_salt=...`; keep it to characters no shell or Bazel treats specially.
SALT_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def choose_salt(given: str | None) -> str:
    """The run salt: `given` (a replay) when set, else 16 fresh hex digits from `secrets`.

    Raises:
        UsageError: (exit 1) for a salt outside SALT_PATTERN.
    """
    if given is None:
        return secrets.token_hex(8)
    if not SALT_PATTERN.fullmatch(given):
        raise UsageError("--salt must be 1-64 characters of letters, digits, '_', '.' and '-'")
    return given


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `check` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="all gate checks of HEAD against a base revision",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_input_options(parser)
    _add_report_options(parser)
    _add_run_options(parser)
    _add_console_options(parser)
    _add_verification_options(parser)


def _add_input_options(parser: Parser) -> None:
    """Adds what the check judges: --base, --results and --label."""
    parser.add_argument("--base", help="base revision (default: origin/main, else main)")
    parser.add_argument(
        "--results",
        nargs="+",
        default=[],
        metavar="FILE",
        help="JUnit XML files or Bazel test-log directories (default: run bazel test //oracles/... //harness/...)",
    )
    parser.add_argument(
        "--label", action="append", default=[], help="a pull-request label (repeatable, or comma-separated)"
    )


def _add_report_options(parser: Parser) -> None:
    """Adds how the report is written: --format, --junit and --markdown."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="report format: text (default), json, github (the text plus workflow-command "
        "annotations per violation), markdown (for a pull-request comment or $GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument(
        "--junit",
        metavar="FILE",
        help="also write a JUnit XML report to FILE: one testcase per gate check and one per invariant id",
    )
    parser.add_argument(
        "--markdown", metavar="FILE", help="also append the markdown report to FILE (e.g. $GITHUB_STEP_SUMMARY)"
    )
    parser.add_argument(
        "--attest",
        metavar="FILE",
        help="also write the verdict to FILE as in-toto statements (a SLSA verification summary and the "
        "per-id results), for the CI platform to sign and `verify` to check (docs/design.md section 14)",
    )


def _add_run_options(parser: Parser) -> None:
    """Adds how the runs are made: --clean, --remote, --salt, --head-only, --quick and --unsealed-workspace."""
    parser.add_argument(
        "--clean",
        action="store_true",
        help="also run the oracle test and the harness on a pristine tree and require the same per-id "
        "outcomes and observation digests (exit 6)",
    )
    parser.add_argument(
        "--remote", action="store_true", help="with --clean: run the clean run through --config=remote (REAPI)"
    )
    parser.add_argument("--salt", help="replay a run: the salt for generated samples (default: a fresh one per check)")
    parser.add_argument(
        "--head-only",
        action="store_true",
        help="judge HEAD against the merge base, without merging the base tip: for local use "
        "on a branch that is behind; the report says so, and CI must not pass it",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="for an agent before it pushes (implies --head-only): the commit checks, the work tree's "
        "uncommitted protected paths, and the oracle test on the work tree as it is when the change "
        "reached a row's entry; no harness, clean run, hidden or behaviour phase",
    )
    parser.add_argument(
        "--unsealed-workspace",
        action="store_true",
        help="run the workspace run's Bazel on the host instead of in a sealed root, for a host "
        "where bubblewrap cannot make one (no user namespaces); the report's first line says so "
        "(docs/threat-model.md)",
    )


def _add_console_options(parser: Parser) -> None:
    """Adds what the check prints while it runs: --quiet and --verbose."""
    parser.add_argument("--quiet", action="store_true", help="print only the report: no phase lines on stderr")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also relay Bazel's output to stderr (it always goes to the log file the report names)",
    )


def _add_verification_options(parser: Parser) -> None:
    """Adds how many blobs are verified: --verify-all."""
    parser.add_argument(
        "--verify-all",
        action="store_true",
        help="hash and parse every blob, also those the merge base pinned the same way "
        "(default: those are vouched for by the base; docs/design.md section 4)",
    )


def run(args: argparse.Namespace, context: Context) -> int:
    """Runs `check` and prints its report to stdout; returns the exit code.

    Raises:
        UsageError: (exit 1) for options that contradict each other (`_refuse_contradictions`), a
            bad `--salt`, or a `--junit`, `--markdown` or `--attest` path that is empty, in a
            missing directory, a symbolic link or not writable (`write_report`).
        GateError: (exit 1) when the gate cannot decide (check.run_check), or when HEAD moved while
            it ran, after CI labels were checked against it.
    """
    repo = context.repo()
    environ = context.environ
    _refuse_contradictions(args)
    for option, path in (("--junit", args.junit), ("--markdown", args.markdown), ("--attest", args.attest)):
        if path is not None and not path:
            raise UsageError(f"{option} is empty (an unset variable?); pass a file")
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UsageError(f"{option} {path}: its directory does not exist")
    base = default_base(repo) if args.base is None else args.base
    labels = collect_labels(args.label, environ, repo)
    salt = "" if args.results else choose_salt(args.salt)
    bazel_log = configure_check(lambda: os.path.join(runs_dir(environ), "logs"), quiet=args.quiet, verbose=args.verbose)
    report = run_check(
        repo,
        base,
        results=args.results,
        labels=labels.names,
        environ=environ,
        clean=args.clean,
        remote=args.remote,
        salt=salt,
        verify_all=args.verify_all,
        head_only=args.head_only or args.quick,
        unsealed_workspace=args.unsealed_workspace,
        behaviour_runner=None if args.quick else probe_runner(),
        quick=args.quick,
    )
    if labels.head and labels.head != report.head:
        raise GateError(f"HEAD moved from {labels.head} to {report.head} while the gate ran; run it again")
    # Why a CI label does not count, first.
    report = replace(report, notes=[*labels.notes, *report.notes], bazel_log=bazel_log.path or "")
    out = render(report, args.format, repo)
    # The report files first: a file that cannot be written is exit 1 before any verdict is printed.
    if args.junit:
        write_report(args.junit, junit_xml(report), append=False)
    if args.markdown:
        # Appended: $GITHUB_STEP_SUMMARY collects every step's summary in one file.
        write_report(args.markdown, (render_markdown(report) + "\n").encode("utf-8"), append=True)
    if args.attest:
        approvals = (Approval(report.approved, labels.head or report.head),) if report.approved else ()
        write_report(args.attest, statement_lines(report, repo, environ, approvals=approvals), append=False)
        if not args.quiet:
            verdict = "PASSED" if report.exit_code == 0 else "FAILED"
            print(f"oracle-gate: wrote the statement {visible(args.attest)} ({verdict})", file=sys.stderr)
    sys.stdout.write(out + "\n")
    return report.exit_code


def _refuse_contradictions(args: argparse.Namespace) -> None:
    """Refuses options that contradict each other.

    Raises:
        UsageError: (exit 1) for `--remote` without `--clean`, `--clean` with `--results`, `--quiet`
            with `--verbose`, `--attest` with `--head-only`, `--quick` or `--results` (a statement
            speaks for what would land, from runs the gate made), or `--quick` with `--clean` or
            `--results`.
    """
    if args.remote and not args.clean:
        raise UsageError("--remote applies to the clean run; pass --clean --remote")
    if args.clean and args.results:
        raise UsageError("--clean runs the harness itself; it cannot be combined with --results")
    if args.quiet and args.verbose:
        raise UsageError("--quiet and --verbose contradict each other; pass one")
    if args.attest and (args.head_only or args.results or args.quick):
        raise UsageError(
            "--attest states what would land, from runs the gate made: it cannot be combined with "
            + ("--quick" if args.quick else "--head-only" if args.head_only else "--results")
        )
    if args.quick and (args.clean or args.results):
        raise UsageError(
            "--quick runs the oracle test on the work tree; it cannot be combined with "
            + ("--clean" if args.clean else "--results")
        )


def write_report(path: str, data: bytes, append: bool) -> None:
    """Writes (or appends) `data` to the regular file `path`, never through a symbolic link as its
    last component: a report path inside the checked repository may be a link the change
    committed, pointing at any file the CI user can write. A linked folder on the way is followed,
    so CI writes reports outside the checked repository (docs/ci.md).

    Raises:
        UsageError: (exit 1) when `path` is a symbolic link, not a regular file, or cannot be written.
    """
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | os.O_NOFOLLOW
        | os.O_CLOEXEC
        | os.O_NONBLOCK
        | (os.O_APPEND if append else os.O_TRUNC)
    )
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        why = "is a symbolic link" if os.path.islink(path) else (exc.strerror or str(exc))
        raise UsageError(f"cannot write the report {path}: {why}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"cannot write the report {path}: not a regular file")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise UsageError(f"cannot write the report {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
