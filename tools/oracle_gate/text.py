"""Text from outside the gate, made safe to print: one value stays on one line of output.

Paths, ids, labels, messages and test output come from the repository, result files or the
environment, any of which the change may have written. Printed raw, a newline would let one value
forge a line of the gate's own (`gate ok (exit 0)`), and a terminal escape sequence could rewrite
lines already shown. Every such value is printed through `visible` (docs/design.md section 6).

A CI runner also reads commands from its job's log. GitHub Actions' runner takes a workflow command
from a line that starts with `::` after its leading whitespace (`ActionCommand.TryParseV2`) and,
failing that, from `##[` anywhere in the line (`ActionCommand.TryParse`, which begins at
`message.IndexOf("##[")`): actions/runner, src/Runner.Worker/ActionCommandManager.cs
`TryProcessCommand`, and src/Runner.Common/ActionCommand.cs. `##[add-mask]`, `##[set-output ...]`
or `::stop-commands::` printed by the change could hide the gate's lines or set a step output.
GitLab's collapsible sections need a carriage return and ESC (`section_start:T:NAME\\r\\e[0K`),
which `visible` escapes. So `visible` also shows the `#` of every `##[` and the first `:` of a
leading `::` as escapes, and `RunnerSafe` rewrites every `##[` of whatever the gate writes (the
gate's own workflow commands use only the `::` form, at the start of its own lines).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TextIO

# The legacy GitHub Actions command marker, and what it is shown as.
LEGACY_COMMAND = "##["
LEGACY_SHOWN = "#\\x23["


def visible(text: str) -> str:
    """`text` with every character that is not printable shown as a Python escape.

    Escaped: control characters (line feed `\\n`, carriage return `\\r`, tab `\\t`, ESC `\\x1b`,
    DEL `\\x7f`, C1 controls), line and paragraph separators (`\\u2028`), format characters such
    as bidirectional overrides (`\\u202e`), unpaired surrogates left by undecodable bytes
    (`\\udcff`), and spaces other than U+0020. "Printable" is `str.isprintable` (Unicode general
    categories other than C* and Z*, plus the ASCII space). The result never contains a line break,
    and holds no CI runner command: every `##[` is shown as `#\\x23[`, and a leading `::` (after
    spaces) as `\\x3a:` (see the module docstring).
    """
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    if LEGACY_COMMAND in text:
        text = text.replace(LEGACY_COMMAND, LEGACY_SHOWN)
    stripped = text.lstrip(" ")
    if stripped.startswith("::"):
        text = text[: len(text) - len(stripped)] + "\\x3a" + stripped[1:]
    return text


def runner_safe_json(document: str) -> str:
    """A JSON text with every `##[` written as `##\\u005b`: the same JSON once parsed, and no CI
    runner command in the log (`RunnerSafe` would otherwise make it `#\\x23[`, which is not JSON)."""
    return document.replace(LEGACY_COMMAND, "##\\u005b")


class RunnerSafe:
    """A text stream that writes through to `stream` with every `##[` shown as `#\\x23[`.

    Lines are written whole, so a `##[` split across two writes is still caught; `flush` writes
    a partial line, but keeps back its trailing `#` characters until more text or `close_line`.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        """Buffers `text` and writes every complete line; returns len(text)."""
        self._pending += text
        if "\n" in self._pending:
            done, self._pending = self._pending.rsplit("\n", 1)
            self.stream.write((done + "\n").replace(LEGACY_COMMAND, LEGACY_SHOWN))
        return len(text)

    def flush(self) -> None:
        """Writes the partial line but its trailing `#`s, then flushes `stream`."""
        part = self._pending.rstrip("#")
        if part:
            self.stream.write(part.replace(LEGACY_COMMAND, LEGACY_SHOWN))
            self._pending = self._pending[len(part) :]
        self.stream.flush()

    def close_line(self) -> None:
        """Writes whatever is pending and flushes `stream`."""
        if self._pending:
            self.stream.write(self._pending.replace(LEGACY_COMMAND, LEGACY_SHOWN))
            self._pending = ""
        self.stream.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def one_line(text: str, limit: int = 200) -> str:
    """`visible(text)`, cut to at most `limit` characters (then ending in `...`)."""
    shown = visible(text)
    return shown if len(shown) <= limit else shown[:limit] + "..."


def columns(rows: Iterable[Sequence[str]], widths: Sequence[int], indent: str = "") -> list[str]:
    """The lines of a plain-text table, the one renderer of the per-id tables of `check`,
    `clean-run` and `compare`.

    Args:
        rows: the cells of each line, a header line included; at most len(widths) + 1 cells each.
        widths: the width of each column but the last; every cell of a row but its last is
            left-justified to its column's width (never cut), so a row's last cell may span the
            columns after it.
        indent: what each line starts with.

    Returns:
        One line per row: `indent`, then the cells two spaces apart. Cells are not escaped: pass
        the values, or the lines, through `visible`.
    """
    # A row may have fewer cells than there are widths: zip stops at the shorter.
    return [
        indent + "  ".join([cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)] + [row[-1]])
        for row in rows
    ]
