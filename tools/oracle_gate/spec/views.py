"""The two views of an oracle suite that the build writes: inputs (for the caller) and expectations.

`oracle_suite`'s pin-check action splits every verified blob at build time
(docs/design.md section 8):

- the **inputs view** holds, per row, what the entry is called with and nothing it is judged by:
  bound samples as keyword arguments; idempotent samples as `{"state", "kwargs"}` plus the row's
  `repeat`; exact_table samples as their `args` list; and the policy's `production_packages`, whose
  functions the caller records as run. It is the only oracle file the `OracleCall` action
  (production code) gets.
- the **expectations view** holds what the judge needs: kind, bounds, expected values, and how many
  samples the blob and the generator give. Only the oracle test (the judge) gets it. For the
  failure report alone it also holds what the judge never judges by: each blob sample's caller
  inputs (`inputs`), and the row's seed and generator (`seed`, `generate`), so that the judge can
  show the inputs of a failing sample, generated ones included (drawn again for the salt).

Both are JSON, rows sorted by id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tools.oracle_gate.spec.generate import draw, spec_to_json
from tools.oracle_gate.spec.schema import Invariant, parse_oracle

VIEW_SCHEMA = 1


def input_samples(inv: Invariant, samples: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The caller's view of a row's samples (blob or generated, already shape-checked)."""
    return caller_inputs(inv.kind, inv.args, samples)


def caller_inputs(kind: str, args: Sequence[str], samples: Sequence[Mapping[str, Any]]) -> list[Any]:
    """What the caller calls the entry with, per sample of a row of `kind` (one of schema.KINDS):
    `bound` the sample as keyword arguments; `idempotent` `{"state": S, "kwargs": {name: value}}`
    for each name of `args`; `exact_table` the sample's `args` list. The samples must have that
    kind's shape (blob samples after `check_shape`, or drawn ones): a missing key raises KeyError."""
    if kind == "bound":
        return [dict(sample) for sample in samples]
    if kind == "idempotent":
        return [{"state": s["state"], "kwargs": {name: s[name] for name in args}} for s in samples]
    return [list(sample["args"]) for sample in samples]


def input_row(inv: Invariant, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One row of the inputs view: everything the caller needs and no bound or expected value."""
    row: dict[str, Any] = {
        "id": inv.id,
        "entry": inv.entry,
        "kind": inv.kind,
        "seed": inv.seed if inv.seed is not None else 0,
        "timeout_s": inv.timeout_s,
        "memory_mib": inv.memory_mib,
        "samples": input_samples(inv, samples),
    }
    if inv.kind == "idempotent":
        row["args"] = list(inv.args)
        row["repeat"] = inv.repeat
    return row


def expectation_row(inv: Invariant, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One row of the expectations view: the judge's side of a row. `inputs` (the caller's view of
    each blob sample), `args`, `seed` and `generate` (`generate.spec_to_json`, rows with one only)
    serve the failure report: the judge shows a failing sample's inputs and judges by none of them."""
    row: dict[str, Any] = {
        "id": inv.id,
        "entry": inv.entry,
        "kind": inv.kind,
        "source": inv.source,
        "blob": inv.blob,
        "blob_samples": len(samples),
        "generated": inv.generate.count if inv.generate is not None else 0,
        "inputs": input_samples(inv, samples),
        "seed": inv.seed if inv.seed is not None else 0,
    }
    if inv.generate is not None:
        row["generate"] = spec_to_json(inv.generate)
    if inv.kind == "bound":
        row["min"], row["max"] = inv.min, inv.max
    elif inv.kind == "idempotent":
        row["repeat"] = inv.repeat
        row["args"] = list(inv.args)
    else:
        row["expected"] = [sample["expected"] for sample in samples]
    return row


def split(rows: Sequence[tuple[Invariant, Sequence[Mapping[str, Any]]]],
          packages: Sequence[str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Returns (inputs view, expectations view) for (row, parsed blob samples) pairs.

    `packages`, the policy's production packages when the pin check was given the policy, goes into
    the inputs view as `production_packages`: the packages whose functions the caller records as
    run (docs/design.md section 12). Without it the view has no such key, and the caller takes the
    packages of the rows' entries. Raises nothing for rows of valid invariants."""
    ordered = sorted(rows, key=lambda pair: pair[0].id)
    inputs: dict[str, Any] = {"schema": VIEW_SCHEMA, "rows": [input_row(inv, samples) for inv, samples in ordered]}
    if packages is not None:
        inputs["production_packages"] = sorted(set(packages))
    expectations = {"schema": VIEW_SCHEMA, "rows": [expectation_row(inv, samples) for inv, samples in ordered]}
    return inputs, expectations


def generated_view(oracles: dict[str, bytes], salt: str) -> tuple[dict[str, Any], list[str]]:
    """Returns (the generated-samples document, problems) for oracle files given as path -> bytes."""
    rows: dict[str, Any] = {}
    problems: list[str] = []
    for path, data in sorted(oracles.items()):
        oracle = parse_oracle(data, path)
        problems.extend(str(p) for p in oracle.problems)
        for inv in oracle.invariants:
            samples = draw(inv, salt)
            if samples:
                rows[inv.id] = input_samples(inv, samples)
    # The salt only where it drew something: a suite without generators then gets the same view in
    # every run, and Bazel keeps its caller action and oracle test cached (docs/performance.md).
    return {"schema": VIEW_SCHEMA, "salt": salt if rows else "", "rows": dict(sorted(rows.items()))}, problems
