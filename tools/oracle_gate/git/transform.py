"""Checkout-time byte transformations: recognising pinned bytes that git rewrote in the work tree.

Git may write a file's bytes differently from the committed blob: end-of-line conversion
(`core.autocrlf`, the `text` and `eol` attributes), `$Id$` expansion (`ident`), re-encoding
(`working-tree-encoding`), or any clean/smudge `filter`. The repository's `.gitattributes` turns
all of them off under `oracles/`, but a clone's `.git/info/attributes` or `core.attributesFile`
can still override it. A pinned file rewritten that way must not be re-pinned (that would pin the
converted bytes); the person needs to hear which transformation it was and how to restore the
committed bytes (docs/design.md section 4). Sources: gitattributes(5) and git-config(1),
`core.autocrlf`, `core.eol`.
"""

from __future__ import annotations

import codecs
import re
import shlex
from collections.abc import Callable

# `$Id$` expanded by the `ident` attribute: `$Id: <40 or 64 hex digits> $`.
_IDENT = re.compile(rb"\$Id: [0-9a-f]{40}(?:[0-9a-f]{24})? \$")
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _undo_crlf(data: bytes) -> bytes | None:
    return data.replace(b"\r\n", b"\n") if b"\r\n" in data else None


def _undo_lf(data: bytes) -> bytes | None:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") if b"\n" in data else None


def _undo_ident(data: bytes) -> bytes | None:
    return _IDENT.sub(b"$Id$", data) if _IDENT.search(data) else None


def _undo_encoding(data: bytes) -> bytes | None:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec).encode("utf-8")
            except UnicodeError:
                return None
    return None


# (undo, what happened at checkout), tried in this order; the first whose undo gives the committed
# bytes names the transformation.
_TRANSFORMATIONS: tuple[tuple[Callable[[bytes], bytes | None], str], ...] = (
    (
        _undo_crlf,
        "line endings converted from LF to CRLF (core.autocrlf=true, core.eol=crlf, or a `text`/`eol=crlf` attribute)",
    ),
    (_undo_lf, "line endings converted from CRLF to LF (a `text` or `eol=lf` attribute)"),
    (_undo_ident, "`$Id$` expanded (the `ident` attribute)"),
    (_undo_encoding, "re-encoded (a `working-tree-encoding` attribute)"),
    (
        lambda data: _undo_crlf(_undo_encoding(data) or b""),
        "re-encoded and given CRLF line endings (`working-tree-encoding` with `eol=crlf`)",
    ),
)


def explain(data: bytes, is_committed: Callable[[bytes], bool]) -> str | None:
    """Names the checkout transformation that turned the committed bytes into `data`, or None.

    Args:
        data: the bytes found in the work tree (or a build's input).
        is_committed: True for the committed bytes (e.g. their sha256 equals the pin).

    Returns:
        e.g. "line endings converted from LF to CRLF (core.autocrlf=true, ...)", when
        undoing that transformation gives bytes `is_committed` accepts; None when none does (an
        unknown filter, or a real edit).
    """
    for undo, what in _TRANSFORMATIONS:
        original = undo(data)
        if original is not None and original != data and is_committed(original):
            return what
    return None


def restore_command(path: str) -> str:
    """A shell command that writes the committed bytes of `path` (repository-relative) back to the
    work tree, with no filter or conversion applied; the path is shell-quoted (`shlex.quote`), so
    pasting the command never runs anything a file name holds."""
    return f"git cat-file blob {shlex.quote('HEAD:' + path)} > {shlex.quote(path)}"


def rewritten(what: str, committed: bool) -> str:
    """The sentence for pinned bytes found rewritten by `what` (`explain`): in a commit (`committed`)
    or in the work tree at checkout."""
    return (
        f"they are the pinned bytes as committed after a rewrite: {what}"
        if committed
        else f"they are the pinned bytes, rewritten at checkout: {what}"
    )


def rewrite_fix(path: str, committed: bool) -> str:
    """What to do about rewritten pinned bytes of `path`: never re-pin them. In the work tree,
    restore the committed bytes (`restore_command`) and remove the setting that rewrites them; in a
    commit, commit the pinned bytes instead."""
    if committed:
        return (
            f"do not re-pin: commit the pinned bytes instead of this converted copy, e.g. "
            f"`git cat-file blob {shlex.quote('BASE:' + path)} > {shlex.quote(path)}` from the base that pinned "
            "them, then commit it with the conversion turned off"
        )
    return (
        f"do not re-pin: restore the committed bytes with `{restore_command(path)}` and remove the setting that "
        "rewrites them (core.autocrlf, .git/info/attributes, core.attributesFile); the repository's "
        ".gitattributes keeps oracles/ byte-exact"
    )
