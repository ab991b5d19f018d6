"""`promote`: failing generated samples of one run become stored samples of the row's blob
(docs/oracles.md, "Promoting failing samples").

The row is run on the work tree's code with the run's salt (`vacuity.run_row`: the oracle test's
own caller action, built by Bazel on a copy of the work tree, and the judge's functions); every generated
sample that fails is drawn again (`generate.draw`, the same samples for the same row and salt) and appended to
the row's blob: an `exact_table` sample with its expected value from the row's reference (the reference view),
the other kinds' samples as inputs only (their expected values come from the row itself: bounds, a pattern, a
relation, a reference). Appending changes the blob, so it is an oracle change a human labels.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.oracle_gate.authoring.reference_local import run_references
from tools.oracle_gate.authoring.vacuity import RowRunner, run_row
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.generate import draw
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.spec.views import generated_view


@dataclass(frozen=True)
class Promotion:
    """What `promote` found for one row and salt.

    Attributes:
        indices: the 0-based indices, among the row's generated samples, of those that failed.
        samples: the samples to append, in blob shape, one per index.
    """

    indices: tuple[int, ...]
    samples: tuple[dict[str, Any], ...]


def failing_samples(
    repo: str, inv: Invariant, oracle_bytes: bytes, blob: bytes, runner: RowRunner, salt: str
) -> Promotion:
    """Runs the row with `salt` and returns its failing generated samples in blob shape.

    Args:
        repo: the work tree; inv: the row, which must have a `generate` table.
        oracle_bytes, blob: the bytes of the row's oracle file and blob.
        runner: runs the row's oracle file (`vacuity.open_runner`).
        salt: the salt of the run whose failures are promoted (`check` prints it).

    Raises:
        GateError: (exit 1) when the row has no `generate` table, or failed as a whole (no
            observations, or an error for the whole row), so no sample can be named.
        OracleError: (exit 5) when the row's reference is broken.
    """
    if inv.generate is None:
        raise GateError(f"row {inv.id} has no generate table: it has no generated samples to promote")
    stored = load_samples(blob)
    with tempfile.TemporaryDirectory(prefix="promote-") as tmp:
        judged = run_row(repo, inv, oracle_bytes, blob, runner, None, Path(tmp), salt)
        if judged is None or (not judged.ok and not judged.failed):
            why = judged.reasons[0] if judged is not None and judged.reasons else "the caller wrote no observations"
            raise GateError(f"row {inv.id} failed as a whole ({why}); no sample can be promoted")
        indices = tuple(i - len(stored) for i in judged.failed if i >= len(stored))
        drawn = draw(inv, salt)
        picked = [dict(drawn[i]) for i in indices]
        if kinds.kind(inv.kind).expected_stored and picked:
            generated, _ = generated_view({inv.source: oracle_bytes}, salt)
            reference, problems = run_references(Path(tmp) / "reference", Path(repo), [(inv, stored)], generated)
            if problems:
                raise problems[0]
            values = (reference or {}).get("rows", {}).get(inv.id, [])
            for sample, index in zip(picked, indices, strict=True):
                sample["expected"] = values[index]
    return Promotion(indices, tuple(picked))


def blob_text(samples: Sequence[Any]) -> bytes:
    """A blob's bytes: a JSON array, one sample per line, keys as given, UTF-8, ending in a newline."""
    if not samples:
        return b"[]\n"
    body = ",\n".join("  " + _json_line(s) for s in samples)
    return f"[\n{body}\n]\n".encode()


def _json_line(sample: Any) -> str:
    """One sample as JSON text: characters as they are, or all escaped when it holds a lone
    surrogate, which UTF-8 cannot encode (JSON's `\\udXXX` escape can)."""
    text = json.dumps(sample, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(sample, ensure_ascii=True)
    return text
