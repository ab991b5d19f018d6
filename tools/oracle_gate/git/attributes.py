"""The checkout conversions a commit's `.gitattributes` files ask for.

The gate judges committed bytes: its pristine trees and merge-result checkouts are written from git
objects, with no conversion and no filter. A checkout of the same commit writes the bytes its
attributes give: `ident` expands `$Id$`, `filter=NAME` runs the smudge command the checkout's git
configuration names, `working-tree-encoding` re-encodes, `eol=crlf` writes LF as CRLF. Every
`.gitattributes` is a protected path (`policy.ATTRIBUTES_GLOB`), so a human approved each such
line; `check` names them, so that the human knows which bytes differ from what the gate judged
(docs/design.md section 3).

Rules, from gitattributes(5) and git's attr.c: a line is a pattern (C-quoted when it starts with
`"`) and attributes separated by whitespace; `#` starts a comment line; a pattern starting with `!`
is ignored; `-NAME` unsets, `!NAME` leaves unspecified, `NAME=VALUE` gives a value, `NAME` sets; a
macro (`[attr]NAME ...`) counts only in the top-level `.gitattributes` and expands only when set;
`binary` is the built-in macro `-diff -merge -text`; `working-tree-encoding=UTF-8` (any case) is
no conversion. Not named: `text` and `text=auto`, which convert only where the checkout's
`core.eol` or `core.autocrlf` asks for CRLF, and which paths a pattern matches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tools.oracle_gate.git.tree import Entry, Tree

ATTRIBUTES_FILE = ".gitattributes"
_MACRO = "[attr]"
_BUILTIN_MACROS = {"binary": ("-diff", "-merge", "-text")}
_PLAIN = re.compile(r"(\S+)\s*(.*)", re.DOTALL)
_QUOTED = re.compile(r'("(?:[^"\\]|\\.)*")(.*)', re.DOTALL)
# At most this many conversions are named one by one; the rest are counted.
MAX_NOTES = 10


@dataclass(frozen=True)
class Conversion:
    """One attribute of one line that makes a checkout write other bytes than the committed ones.

    Attributes:
        path: the `.gitattributes` file, repository-relative.
        line: its 1-based line number.
        pattern: the line's pattern, as written (a C-quoted one with its quotes).
        attribute: `ident`, `filter=NAME`, `working-tree-encoding=NAME` or `eol=crlf`.
        macro: the macro the line set that gave the attribute, or "".
    """

    path: str
    line: int
    pattern: str
    attribute: str
    macro: str = ""

    def note(self) -> str:
        """The report line: which file, line and pattern, the attribute and what it does."""
        through = f", through the macro {self.macro!r}" if self.macro else ""
        return (
            f"checkout conversion: {self.path} line {self.line} gives {self.pattern!r} {self.attribute} "
            f"({_WHAT[self.attribute.split('=', 1)[0]]}{through}): a checkout writes other bytes than the "
            "committed ones the gate judged"
        )


_WHAT = {
    "ident": "$Id$ expanded",
    "filter": "the smudge command of the checkout's git configuration",
    "working-tree-encoding": "re-encoded from UTF-8",
    "eol": "LF written as CRLF",
}


def _split_pattern(line: str) -> tuple[str, str] | None:
    """(pattern, rest) of a stripped, non-comment line: the pattern ends at the first whitespace,
    or, when it starts with `"`, at the next unescaped `"` (kept quoted, as written). None when a
    quoted pattern is not closed."""
    found = _QUOTED.match(line) if line.startswith('"') else _PLAIN.match(line)
    return (found.group(1), found.group(2)) if found else None


def _lines(data: bytes) -> list[tuple[int, str, list[str]]]:
    """(line number, pattern, attribute tokens) of each line of a `.gitattributes` file that names
    a pattern (macros included, negative patterns left out)."""
    out = []
    for number, raw in enumerate(data.decode("utf-8", "surrogateescape").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        split = _split_pattern(line)
        if split is None or split[0].startswith("!") or not split[0]:
            continue
        out.append((number, split[0], split[1].split()))
    return out


def _macros(root: bytes | None) -> dict[str, tuple[str, ...]]:
    """The macros the top-level `.gitattributes` defines, over the built-in ones."""
    macros: dict[str, tuple[str, ...]] = dict(_BUILTIN_MACROS)
    for _, pattern, tokens in _lines(root or b""):
        if pattern.startswith(_MACRO) and len(pattern) > len(_MACRO):
            macros[pattern[len(_MACRO) :]] = tuple(tokens)
    return macros


def _converting(
    tokens: list[str], macros: Mapping[str, tuple[str, ...]], macro: str = "", seen: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """(attribute, macro it came through) of each token that asks for a checkout conversion; a
    set macro adds what its own tokens ask for (each macro once: git's expansion stops too)."""
    found = []
    for token in tokens:
        name, eq, value = token.partition("=")
        if name.startswith(("-", "!")):
            continue
        if not eq and name in macros and name not in seen:
            found += _converting(list(macros[name]), macros, macro or name, seen | {name})
        elif (
            (name == "ident" and not eq)
            or (name == "filter" and eq and value)
            or (name == "working-tree-encoding" and eq and value and value.casefold() != "utf-8")
            or (name == "eol" and value == "crlf")
        ):
            found.append((token, macro))
    return found


def conversions(files: Mapping[str, bytes]) -> list[Conversion]:
    """Every line of the given `.gitattributes` files that gives a pattern a checkout conversion.

    Args:
        files: repository-relative path of each `.gitattributes` file -> its committed bytes; the
            macros are those of the top-level one (`.gitattributes`), when given.

    Returns:
        One `Conversion` per attribute, in path, then line order. Raises nothing: what git would
        ignore or refuse is skipped.
    """
    macros = _macros(files.get(ATTRIBUTES_FILE))
    out = []
    for path in sorted(files):
        for number, pattern, tokens in _lines(files[path]):
            if pattern.startswith(_MACRO):
                continue
            out += [
                Conversion(path, number, pattern, attribute, macro) for attribute, macro in _converting(tokens, macros)
            ]
    return out


def checkout_notes(tree: Tree, listing: Mapping[str, Entry]) -> tuple[str, ...]:
    """The report lines naming each checkout conversion the `.gitattributes` files of `listing`
    ask for (`conversions`): at most MAX_NOTES, then one line counting the rest.

    Args:
        tree: the commit whose files `listing` lists (the commit judged).
        listing: its files; only regular `.gitattributes` entries are read (git opens no in-tree
            `.gitattributes` that is a symlink, gitattributes(5)).

    Raises:
        GitError: (exit 1) when git cannot read a file.
    """
    files = {
        path: tree.read(entry)
        for path, entry in listing.items()
        if entry.is_regular and path.rsplit("/", 1)[-1] == ATTRIBUTES_FILE
    }
    found = [c.note() for c in conversions(files)]
    if len(found) > MAX_NOTES:
        found = found[:MAX_NOTES] + [
            f"checkout conversion: {len(found) - MAX_NOTES} more line(s) of .gitattributes files ask for one"
        ]
    return tuple(found)
