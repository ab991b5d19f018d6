"""The gate's one user-facing exception family and its exit codes (docs/design.md section 6)."""

from __future__ import annotations

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

MANIFEST_FIX = "run `bazel run //tools:oracle_gate -- manifest --write` in a change labelled oracle-change"


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
    def from_error(cls, error: GateError) -> "Violation":
        """Builds a violation from a GateError, keeping its code, path and row."""
        where = f"field {error.field}: " if error.field else ""
        fix = f"; {error.fix}" if error.fix else ""
        return cls(error.code, error.path or "", error.row or "", f"{where}{error.message}{fix}")
