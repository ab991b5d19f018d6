"""`pin`: each row's `blob_sha256` against the sha256 of its blob in the work tree, and the in-place
rewrite of exactly those values (docs/oracles.md, "Blobs and pinning").

The rewrite edits text, not a parsed document: only the quoted value of each `blob_sha256 = "..."`
line that needs it changes, so comments, order, spacing and every other byte stay as they were.
It then parses the old and the new text with `tomllib` and refuses to write unless the two
documents differ in exactly those values.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError, OracleError
from tools.oracle_gate.git.tree import Tree
from tools.oracle_gate.spec.schema import check_blob_path

# A row header of an oracle file (the TOML array of tables `invariant`), comment allowed.
_HEADER = re.compile(r"[ \t]*\[\[[ \t]*invariant[ \t]*\]\][ \t]*(#.*)?\Z")
# A row's `blob = "..."` line, after which a missing pin line is inserted.
_BLOB_LINE = re.compile(r'(?P<indent>[ \t]*)blob[ \t]*=[ \t]*"[^"]*"[ \t]*(#.*)?\Z')
# A `blob_sha256` line with a basic-string value of hex digits (or empty), comment allowed.
_PIN_LINE = re.compile(r'(?P<head>[ \t]*blob_sha256[ \t]*=[ \t]*")(?P<value>[0-9A-Fa-f]*)(?P<tail>"[ \t]*(#.*)?)\Z')


@dataclass(frozen=True)
class Pin:
    """One row's pin.

    Attributes:
        path: the oracle file, repository-relative.
        line: 1-based line of the row's `blob_sha256`; of its `blob` line when the row has no pin
            line (the pin goes after it), else of its `[[invariant]]` header; 0 when unknown.
        index: the row's position in the file, from 0.
        id: the row's id ("" when it has none).
        blob: the row's blob path ("" when it has none).
        pinned: the value in the file ("" when absent or not a string).
        actual: sha256 hex of the blob's bytes in the work tree, None when unreadable.
        problem: why the pin cannot be checked or written ("" when it can).
    """

    path: str
    line: int
    index: int
    id: str
    blob: str
    pinned: str
    actual: str | None
    problem: str = ""

    @property
    def ok(self) -> bool:
        """True when the blob was read and the pin is its sha256."""
        return not self.problem and self.actual == self.pinned


def row_lines(text: str) -> list[tuple[int, int]]:
    """(first, end) 0-based line spans of each `[[invariant]]` row, in file order."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line.rstrip("\r"))]
    return [(start, starts[k + 1] if k + 1 < len(starts) else len(lines)) for k, start in enumerate(starts)]


def _pin_line(lines: Sequence[str], span: tuple[int, int]) -> int | None:
    """The 0-based line of a span's `blob_sha256 = "..."`, or None."""
    found = [i for i in range(*span) if _PIN_LINE.match(lines[i].rstrip("\r"))]
    return found[0] if len(found) == 1 else None


def _blob_line(lines: Sequence[str], span: tuple[int, int]) -> int | None:
    """The 0-based line of a span's `blob = "..."`, or None."""
    found = [i for i in range(*span) if _BLOB_LINE.match(lines[i].rstrip("\r"))]
    return found[0] if len(found) == 1 else None


def read_pins(tree: Tree, path: str, data: bytes, rewrites: Sequence[str] = ()) -> list[Pin]:
    """The pins of one oracle file.

    Args:
        tree: the work tree the blobs are read from.
        path: the oracle file, repository-relative.
        data: its bytes.
        rewrites: `manifest.checkout_rewrites` lines: a blob rewritten at checkout is not re-pinned.

    Raises:
        OracleError: (exit 5) when the file is not UTF-8 TOML with an array of `[[invariant]]` tables.
    """
    try:
        text = data.decode("utf-8")
        doc = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise OracleError(f"is not valid UTF-8 TOML: {exc}", path=path) from None
    rows = doc.get("invariant")
    if type(rows) is not list or not all(type(r) is dict for r in rows):
        raise OracleError("has no array of [[invariant]] tables", path=path, field="invariant")
    lines = text.split("\n")
    spans = row_lines(text)
    listing = tree.files("oracles")
    pins = []
    for index, row in enumerate(rows):
        span = spans[index] if len(spans) == len(rows) else None
        at = _pin_line(lines, span) if span else None
        # Without a pin line, the row's `blob` line: `pin --write` adds the pin after it.
        shown = at if at is not None or not span else _blob_line(lines, span)
        line = shown + 1 if shown is not None else (span[0] + 1 if span else 0)
        ident = row.get("id") if type(row.get("id")) is str else ""
        blob = row.get("blob") if type(row.get("blob")) is str else ""
        pinned = row.get("blob_sha256") if type(row.get("blob_sha256")) is str else ""
        problem, actual = "", None
        bad_path = check_blob_path(blob)
        entry = listing.get(blob)
        if bad_path:
            problem = f"blob {bad_path}"
        elif entry is None:
            problem = f"blob {blob} does not exist"
        elif not entry.is_regular:
            problem = f"blob {blob} is not a regular file (a symlink or submodule)"
        elif any(r.startswith(blob + " (") for r in rewrites):
            problem = (
                f"blob {blob} was rewritten at checkout ({next(r for r in rewrites if r.startswith(blob + ' ('))}); "
                "restore the committed bytes instead of re-pinning"
            )
        else:
            actual = tree.digest(entry)
        writable = at is not None or (
            "blob_sha256" not in row and span is not None and _blob_line(lines, span) is not None
        )
        if not problem and not writable and actual != pinned:
            problem = (
                'neither a `blob_sha256 = "..."` line nor a `blob = "..."` line to add one after, so '
                'it cannot be written in place: add `blob_sha256 = ""` to the row'
            )
        pins.append(Pin(path, line, index, ident, blob, pinned, actual, problem))
    return pins


def rewrite(data: bytes, path: str, new: Mapping[int, str]) -> bytes:
    """The oracle file with the `blob_sha256` of each row index in `new` set to its value; every
    other byte unchanged. A row without a `blob_sha256` key gets the line after its `blob` line.

    Raises:
        GateError: (exit 1) when a row's pin line cannot be found, or the result would differ
            from the intended change in anything but those values (checked by parsing both).
    """
    text = data.decode("utf-8")
    lines = text.split("\n")
    spans = row_lines(text)
    # From the last row up, so an inserted line does not move the rows still to do.
    for index, value in sorted(new.items(), reverse=True):
        span = spans[index] if index < len(spans) else None
        at = _pin_line(lines, span) if span else None
        if at is not None:
            cr = "\r" if lines[at].endswith("\r") else ""
            match = _PIN_LINE.match(lines[at].rstrip("\r"))
            assert match is not None
            lines[at] = match.group("head") + value + match.group("tail") + cr
            continue
        blob_at = _blob_line(lines, span) if span else None
        if blob_at is None:
            raise GateError(f'{path}: row {index + 1} has no `blob_sha256 = "..."` line of its own; edit it by hand')
        blob_match = _BLOB_LINE.match(lines[blob_at].rstrip("\r"))
        assert blob_match is not None
        cr = "\r" if lines[blob_at].endswith("\r") else ""
        lines.insert(blob_at + 1, f'{blob_match.group("indent")}blob_sha256 = "{value}"{cr}')
    result = "\n".join(lines)
    expected = tomllib.loads(text)
    for index, value in new.items():
        expected["invariant"][index]["blob_sha256"] = value
    if tomllib.loads(result) != expected:
        raise GateError(f"{path}: rewriting the pins in place would change more than the pins; edit it by hand")
    return result.encode("utf-8")
