"""`propose --write`: the candidate rows appended to their oracle files in the work tree, each with
its blob (docs/oracles.md, "Proposing rows").

Everything is planned first and written only when the whole plan holds: an existing row or byte of
an oracle file is never touched (rows are appended), a blob already present with other bytes, a
link where a file goes or an oracle file that is not readable TOML stops the write before any
byte. A row goes without `blob_sha256`: `pin --write` (or `record --write`) adds it.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass

from tools.oracle_gate.authoring.propose_rows import Proposed
from tools.oracle_gate.errors import GateError, OracleError
from tools.oracle_gate.files import replace_file
from tools.oracle_gate.spec.toml_text import row_table


@dataclass(frozen=True)
class Planned:
    """One file `propose --write` writes.

    Attributes:
        path: repository-relative.
        data: its whole new bytes.
        rows: the ids of the rows it gains (an oracle file), or () for a blob.
    """

    path: str
    data: bytes
    rows: tuple[str, ...] = ()


def blob_bytes(samples: Sequence[object]) -> bytes:
    """A blob's bytes: a JSON array of the samples, one per line, UTF-8, ending in a newline."""
    return ("[\n" + ",\n".join(json.dumps(s, ensure_ascii=False, sort_keys=False) for s in samples) + "\n]\n").encode()


def _existing(root: str, path: str) -> bytes | None:
    """The bytes of a regular file of the work tree, or None when there is none.

    Raises:
        GateError: (exit 1) for a link, a folder or another non-regular file there, or one that
            cannot be read.
    """
    full = os.path.join(root, path)
    if not os.path.lexists(full):
        return None
    if os.path.islink(full) or not os.path.isfile(full):
        raise GateError("is not a regular file; nothing written", path=path, fix="move it away and run again")
    try:
        with open(full, "rb") as f:
            return f.read()
    except OSError as exc:
        raise GateError(f"cannot be read ({exc.strerror}); nothing written", path=path) from None


def plan(root: str, proposed: Sequence[Proposed]) -> list[Planned]:
    """The files to write for `proposed`: each oracle file with its rows appended (a new one begins
    with `schema = 1`), and each row's blob.

    Args:
        root: the work tree.
        proposed: the candidates (their ids distinct and new to the oracle files).

    Returns:
        The files in write order: blobs first, then the oracle files.

    Raises:
        GateError: (exit 1) when a blob path holds other bytes or is not a regular file, or an
            oracle file is not a regular file.
        OracleError: (exit 5) when an oracle file is not readable UTF-8 TOML, before or after the rows.
    """
    files: list[Planned] = []
    by_file: dict[str, list[Proposed]] = {}
    for candidate in proposed:
        by_file.setdefault(candidate.oracle_file, []).append(candidate)
        data = blob_bytes(candidate.samples)
        there = _existing(root, candidate.blob)
        if there is not None and there != data:
            raise GateError(
                f"already exists with other samples; nothing written (row {candidate.id})",
                path=candidate.blob,
                fix="remove it, or write the row by hand",
            )
        if there is None:
            files.append(Planned(candidate.blob, data))
    for path, rows in sorted(by_file.items()):
        before = _existing(root, path)
        text = "".join("\n" + row_table(c.row) for c in rows)
        new = (before.decode("utf-8", "replace") if before is not None else "schema = 1\n") + text
        checks: list[tuple[str, bytes | None]] = [("is not", before), ("would not be", new.encode())]
        for label, text_bytes in checks:
            if text_bytes is None:
                continue
            try:
                tomllib.loads(text_bytes.decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise OracleError(f"{label} readable TOML ({exc}); nothing written", path=path) from None
        files.append(Planned(path, new.encode(), tuple(c.id for c in rows)))
    return files


def write(root: str, files: Sequence[Planned]) -> None:
    """Writes the planned files (`files.replace_file`), creating their folders.

    Raises:
        GateError: (exit 1) when a file cannot be written; the files written before it stay.
    """
    for item in files:
        target = os.path.join(root, item.path)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            replace_file(target, item.data)
        except OSError as exc:
            raise GateError(f"cannot be written: {exc.strerror}", path=item.path) from None
