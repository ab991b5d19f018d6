"""Text from outside the gate, made safe to print: one value stays on one line of output.

Paths, ids, labels, messages and test output come from the repository, result files or the
environment, any of which the change may have written. Printed raw, a newline would let one value
forge a line of the gate's own (`gate ok (exit 0)`), and a terminal escape sequence could rewrite
lines already shown. Every such value is printed through `visible` (docs/design.md section 6).
"""

from __future__ import annotations


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
