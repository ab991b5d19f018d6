"""The probe's `oracles/` (runs/probe.py): rows the gate wrote, each with a blob of the samples it
chose, in place of the oracle files of the tree (docs/design.md section 10, "The probe").

A probe row keeps everything of its row that says how the caller reaches the code (entry, receiver,
build, project, args, ...) and its limits, and drops what only a judge or a draw needs: its blob and
pin (the probe writes its own, under PROBE_BLOB_DIR), `generate` (the gate drew the samples), a
`reference` (no reference runs in the probe) and a hidden pin. A kind whose rows cannot stand so is
written as its `Kind.probe` says. The first oracle file of the tree holds the rows, the others are
left out (`probe_oracles`). A sample keeps its inputs; a kind that stores an expected value
gets `null` there, which nothing judges. Pure: no file is read or written here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.schema import is_oracle_path
from tools.oracle_gate.spec.toml_text import row_table

# Where the probe's blobs lie in its tree: a folder of no oracle file's own (docs/oracles.md, "Many
# oracle files": blobs/<stem>/ belong to <stem>.toml alone, the rest are shared by every file).
PROBE_BLOB_DIR = "oracles/blobs/_probe"
# The keys of a row the probe leaves out (see the module docstring).
DROPPED = ("blob", "blob_sha256", "generate", "reference", "hidden_sha256")
# Sample keys that only a judge reads: the expected value and the expected exception.
EXPECTED_KEYS = ("expected", "raises")
# The oracle file the probe writes when the tree holds none (a BUILD file's glob finds it).
FALLBACK_FILE = "oracles/probe.toml"


@dataclass(frozen=True)
class ProbeRow:
    """One row the probe runs.

    Attributes:
        fields: the row's keys as the probe writes them (`probe_fields`).
        samples: its blob's samples, inputs only (`inputs_sample` of each).
    """

    fields: Mapping[str, Any]
    samples: Sequence[Any]

    @property
    def id(self) -> str:
        """The row's id."""
        return str(self.fields["id"])


def probe_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of the row `raw` (a `[[invariant]]` table as `tomllib` reads it, of a known kind)
    the probe writes: all but DROPPED, its kind replaced as `Kind.probe` says. Raises nothing for a
    row of a known kind; KeyError for an unknown one."""
    found = kinds.kind(str(raw["kind"]))
    fields = {k: v for k, v in raw.items() if k not in DROPPED}
    if found.probe is not None:
        name, extra = found.probe
        fields = {**fields, "kind": name, **extra}
    return fields


def inputs_sample(kind_name: str, sample: Mapping[str, Any], args_names: Sequence[str] = ()) -> dict[str, Any]:
    """A blob sample of a row of `kind_name` with only its inputs: a stored sample without its
    EXPECTED_KEYS (and `expected: null` for a kind that stores one), or a drawn sample (an object
    of the generated fields) in the stored shape: for a TABLE kind `{"args": [the `args_names`
    fields in order]}`, with its `receiver` when it has one. Raises KeyError for an unknown kind."""
    found = kinds.kind(kind_name)
    out = {k: v for k, v in sample.items() if k not in EXPECTED_KEYS}
    if found.sample == kinds.TABLE and "args" not in out:
        table: dict[str, Any] = {"args": [out[name] for name in args_names]}
        if "receiver" in out:
            table["receiver"] = out["receiver"]
        out = table
    if found.expected_stored:
        out["expected"] = None
    return out


def probe_oracles(base: Mapping[str, bytes], rows: Sequence[ProbeRow]) -> dict[str, bytes]:
    """The probe tree's `oracles/`: the files of `base` (path -> bytes of a tree's `oracles/`: its
    BUILD file, policy, reference code, blobs) without its oracle files but the first, which holds
    `rows` alone (an oracle file without rows is invalid, and another's rows could repeat their
    ids), and one blob per row under PROBE_BLOB_DIR. A BUILD file that lists its oracle files by
    name, not by a glob, then names a missing file: the probe's build fails, exit 1.

    Raises:
        ValueError: for a row value TOML cannot hold (`toml_text.value_text`), or a sample JSON
            cannot (NaN).
    """
    out = {p: data for p, data in base.items() if not is_oracle_path(p) and not p.startswith(PROBE_BLOB_DIR + "/")}
    files = sorted(p for p in base if is_oracle_path(p)) or [FALLBACK_FILE]
    tables = []
    for row in rows:
        blob = f"{PROBE_BLOB_DIR}/{row.id}.json"
        # ASCII with escapes: a lone surrogate a sample may hold (a code unit text handling meets)
        # stays a JSON escape instead of bytes UTF-8 cannot encode.
        data = (json.dumps(list(row.samples), sort_keys=True, allow_nan=False, ensure_ascii=True) + "\n").encode()
        out[blob] = data
        fields = {**row.fields, "blob": blob, "blob_sha256": hashlib.sha256(data).hexdigest()}
        tables.append(row_table(fields))
    out[files[0]] = ("schema = 1\n\n" + "\n".join(tables)).encode("utf-8")
    return out
