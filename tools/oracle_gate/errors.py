"""The gate's one user-facing exception family, its exit codes and the one form of its error lines
(docs/design.md section 6)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from tools.oracle_gate.text import visible

# Exit codes, docs/design.md section 6. The process exits with the lowest code that applies.
OK = 0
UNDECIDED = 1
PROTECTED_PATH = 2
MISSING_ID = 3
NO_OUTCOME = 4
INVALID_ORACLE = 5
RUNS_DISAGREE = 6

# What each code means, as docs/design.md section 6 says; `--help` shows it (`exit_codes_help`).
EXIT_CODES = {
    OK: "gate ok",
    UNDECIDED: "the gate could not decide: bad usage, not a git repository, unknown base, unreadable results, "
    "Bazel error, a run that could not be set up (an external repository, a toolchain, Bazel itself)",
    PROTECTED_PATH: "a protected path changed without the label",
    MISSING_ID: "an invariant id present at the base is missing at HEAD",
    NO_OUTCOME: "an invariant has no executed outcome or failed; a target of the change did not build; "
    "a harness test failed; a spawn ran where the gate does not allow it",
    INVALID_ORACLE: "an oracle file, blob, policy or manifest is invalid; a labelled change weakens a claim "
    "without a line in oracles/CHANGELOG.md naming its id",
    RUNS_DISAGREE: "the two runs disagree on ids, per-id outcomes, observation digests or harness target results",
}

# Every error line the gate writes to stderr starts with this (`error_line`); Bazel's relayed output
# starts with `bazel| ` instead (runs/launch.py).
PREFIX = "oracle-gate:"


def error_line(code: int, message: str) -> str:
    """The one form of an error line on stderr: `oracle-gate: [CODE] MESSAGE`, the message passed
    through `text.visible` (a path or value from the change never breaks the line)."""
    return f"{PREFIX} [{code}] {visible(message)}"


def exit_codes_help() -> str:
    """The exit-code table for a `--help` epilog, one code per entry, wrapped to 79 columns."""
    lines = ["exit codes (the lowest that applies; docs/design.md section 6):"]
    for code, meaning in EXIT_CODES.items():
        lines.extend(textwrap.wrap(meaning, width=79, initial_indent=f"  {code}  ", subsequent_indent="     "))
    return "\n".join(lines)


class GateError(Exception):
    """An error the gate reports as one line and an exit code; never a traceback.

    Attributes:
        code: the exit code (1 unless a subclass says otherwise).
        path: repository-relative file the error is about, or None.
        row: the invariant id (or `row N` when the id is unreadable), or None.
        field: the key inside the row or file, or None.
        fix: what the user should do, appended to the message, or None.
    """

    code = UNDECIDED

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: str | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.row = row
        self.field = field
        self.fix = fix

    def __str__(self) -> str:
        where = []
        if self.path:
            where.append(self.path)
        if self.row:
            where.append(f"row {self.row}")
        if self.field:
            where.append(f"field {self.field}")
        text = ": ".join(where + [self.message])
        if self.fix:
            text += f"; {self.fix}"
        return visible(text)


class UsageError(GateError):
    """Bad command-line usage (exit 1)."""


class GitError(GateError):
    """Git could not answer: not a repository, unknown base, no merge base (exit 1)."""


class TakenError(GateError):
    """A file of the gate's own went missing or changed while the change's code ran, as an output
    that Bazel's server collected through a symlinked folder takes it (exit 4: the change did it)."""

    code = NO_OUTCOME


class OracleError(GateError):
    """An oracle file, blob, policy or manifest is invalid (exit 5)."""

    code = INVALID_ORACLE


@dataclass(frozen=True)
class Violation:
    """One failed gate check, printed as one line.

    Attributes:
        code: exit code of the check (docs/design.md section 6).
        path: repository-relative path the violation is about ("" when none).
        id: invariant id, or "" when the violation is not about one id.
        message: what is wrong and what to do.
    """

    code: int
    path: str
    id: str
    message: str

    def line(self) -> str:
        """Returns the one-line text form: `[code] path id: message`, every part passed through
        `text.visible` (a path or message from the change never breaks the line)."""
        parts = [f"[{self.code}]"]
        if self.path:
            parts.append(self.path)
        if self.id:
            parts.append(self.id)
        return visible(" ".join(parts) + f": {self.message}")

    @classmethod
    def from_error(cls, error: GateError) -> Violation:
        """Builds a violation from a GateError, keeping its code, path and row."""
        where = f"field {error.field}: " if error.field else ""
        fix = f"; {error.fix}" if error.fix else ""
        return cls(error.code, error.path or "", error.row or "", f"{where}{error.message}{fix}")
