"""Text from outside the gate, made safe to print: one value stays on one line of output.

Paths, ids, labels, messages and test output come from the repository, result files or the
environment, any of which the change may have written. Printed raw, a newline would let one value
forge a line of the gate's own (`gate ok (exit 0)`), and a terminal escape sequence could rewrite
lines already shown. Every such value is printed through `visible` (docs/design.md section 6).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def visible(text: str) -> str:
    """`text` with every character that is not printable shown as a Python escape.

    Escaped: control characters (line feed `\\n`, carriage return `\\r`, tab `\\t`, ESC `\\x1b`,
    DEL `\\x7f`, C1 controls), line and paragraph separators (`\\u2028`), format characters such
    as bidirectional overrides (`\\u202e`), unpaired surrogates left by undecodable bytes
    (`\\udcff`), and spaces other than U+0020. "Printable" is `str.isprintable` (Unicode general
    categories other than C* and Z*, plus the ASCII space). The result never contains a line break.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


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
    return [indent + "  ".join([cell.ljust(width) for cell, width in zip(row[:-1], widths)] + [row[-1]]) for row in rows]
