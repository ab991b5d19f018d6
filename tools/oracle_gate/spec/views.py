"""The views of an oracle suite that the build writes: inputs (for the caller), reference inputs
(for the reference action) and expectations (for the judge).

`oracle_suite`'s pin-check action splits every verified blob at build time
(docs/design.md section 8):

- the **inputs view** holds, per row, what the entry is called with and nothing it is judged by:
  the keyword kinds' samples as keyword arguments; idempotent samples as `{"state", "kwargs"}` plus
  the row's `repeat`; exact_table samples as their `args` list (never a sample's `expected` or
  `raises`); the fields that say how to reach
  the code (`receiver`, `build`, `args_names`, `project`, `inverse`, `over`, `entries`); and the
  policy's `production_packages`, whose functions the caller records as run. It is the only oracle
  file the `OracleCall` action (production code) gets.
- the **reference inputs view** holds, for each row with a `reference`, the reference's name and
  the stored samples it gives the expected value of (`reference_row`). Only the `OracleReference`
  action (the reference implementation, never the change's code) gets it.
- the **expectations view** holds what the judge needs: kind, bounds, expected values, the class
  each stored sample must raise (`raises`, spec/raised.py), and how many samples the blob and the
  generator give. Only the oracle test (the judge) gets it. For the
  failure report alone it also holds what the judge never judges by: each blob sample's caller
  inputs (`inputs`), and the row's seed and generator (`seed`, `generate`), so that the judge can
  show the inputs of a failing sample, generated ones included (drawn again for the salt).

All are JSON, rows sorted by id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.generate import draw, spec_to_json
from tools.oracle_gate.spec.raised import RAISES
from tools.oracle_gate.spec.schema import Invariant, parse_oracle

VIEW_SCHEMA = 1


def input_samples(inv: Invariant, samples: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The caller's view of a row's samples (blob or generated, already shape-checked)."""
    return caller_inputs(inv.kind, inv.args, samples, inv.receiver is not None, inv.over, inv.args_names)


def caller_inputs(
    kind: str,
    args: Sequence[str],
    samples: Sequence[Mapping[str, Any]],
    receiver: bool = False,
    over: str | None = None,
    names: Sequence[str] = (),
) -> list[Any]:
    """What the caller calls the entry with, per sample of a row of `kind` (one of schema.KINDS),
    by its `Kind.sample`: KEYWORDS the sample as keyword arguments (for an OVER `sample_rule`, the
    `over` values sorted ascending: numbers by value, strings by code point); STATE `{"state": S,
    "kwargs": {name: value}}` for each name of `args`; TABLE the sample's `args` list, or
    `{"args": [...], "receiver": R}` for a row with a `receiver`; PAIR the two values, in
    `args_names` order: read by `names` (a blob sample's keys may come in any order), else in the
    sample's key order (a drawn sample's, which the generator keeps in `args_names` order). A
    KEYWORDS sample's `raises` (the class the call must raise) is an expected value, never an input.
    The samples must have that kind's shape (blob samples after `check_shape`, or drawn ones): a
    missing key raises KeyError, as does an unknown kind."""
    found = kinds.kind(kind)
    if found.sample == kinds.STATE:
        return [{"state": s["state"], "kwargs": {name: s[name] for name in args}} for s in samples]
    if found.sample == kinds.TABLE:
        if receiver:
            return [{"args": list(s["args"]), "receiver": s["receiver"]} for s in samples]
        return [list(sample["args"]) for sample in samples]
    if found.sample == kinds.PAIR:
        return [[sample[n] for n in names] if names else list(sample.values()) for sample in samples]
    if found.sample_rule == kinds.OVER and over is not None:
        return [dict(sample, **{over: sorted(sample[over])}) for sample in samples]
    return [{key: value for key, value in sample.items() if key != RAISES} for sample in samples]


# The fields of a row the caller needs to reach the code (docs/design.md section 8), when set.
_CALL_FIELDS = ("receiver", "project", "inverse", "over", "element")


def input_row(inv: Invariant, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One row of the inputs view: everything the caller needs and no bound, pattern, reference or
    expected value."""
    row: dict[str, Any] = {
        "id": inv.id,
        "entry": inv.entry,
        "kind": inv.kind,
        "seed": inv.seed if inv.seed is not None else 0,
        "timeout_s": inv.timeout_s,
        "memory_mib": inv.memory_mib,
        "samples": input_samples(inv, samples),
    }
    if kinds.kind(inv.kind).sample == kinds.STATE:
        row["args"] = list(inv.args)
        row["repeat"] = inv.repeat
    for name in _CALL_FIELDS:
        if getattr(inv, name) is not None:
            row[name] = getattr(inv, name)
    if inv.build:
        row["build"] = dict(inv.build)
    if inv.args_names:
        row["args_names"] = list(inv.args_names)
    if inv.entries:
        row["entries"] = list(inv.entries)
    return row


def reference_row(inv: Invariant, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One row of the reference inputs view (the reference action's own inputs), or None for a
    row without a reference: the reference's name as the entry, kind `reference`, the call style
    (`keywords`: the sample's fields, `receiver` included, as keyword arguments; `positional`, for a
    TABLE sample: the `args` list, and `receiver=R` when the row has one), `raises_agree` when the
    row has it (a raise of the reference is then an answer: actions/reference_check.py), and the stored samples
    whose expected value the reference gives (every one but those of a kind whose samples store
    their own, `Kind.expected_stored`); the
    generated samples join them from the generated view, as for the caller."""
    if inv.reference is None:
        return None
    kind = kinds.kind(inv.kind)
    stored = [] if kind.expected_stored else input_samples(inv, samples)
    return {
        "id": inv.id,
        "entry": inv.reference,
        "kind": "reference",
        "source": inv.source,
        "style": "positional" if kind.sample == kinds.TABLE else "keywords",
        "seed": inv.seed if inv.seed is not None else 0,
        "timeout_s": inv.timeout_s,
        "memory_mib": inv.memory_mib,
        "samples": stored,
        **({"raises_agree": True} if inv.raises_agree else {}),
    }


def expectation_row(inv: Invariant, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One row of the expectations view: the judge's side of a row. `inputs` (the caller's view of
    each blob sample), `args`, `seed` and `generate` (`generate.spec_to_json`, rows with one only)
    serve the failure report, and for `round_trip` and `monotonic` the judging too (the value x of
    each sample, how many values of `over` it has); `reference` is True for a row whose expected
    values (the generated ones of an `exact_table` row, every one of the others) come from the
    reference view; `raises` (only when a blob sample has one) is the `raises` name of each blob
    sample, None for one judged by its value, and `raises_agree` is True for a row that counts
    both raising the same class as agreement."""
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
    if inv.reference is not None:
        row["reference"] = True
    if inv.raises_agree:
        row["raises_agree"] = True
    if any(RAISES in sample for sample in samples):
        row["raises"] = [sample.get(RAISES) for sample in samples]
    if inv.receiver is not None:
        row["receiver"] = True
    for name in ("over", "direction", "pattern"):
        if getattr(inv, name) is not None:
            row[name] = getattr(inv, name)
    if inv.min is not None:
        row["min"], row["max"] = inv.min, inv.max
    kind = kinds.kind(inv.kind)
    if kind.sample == kinds.STATE:
        row["repeat"] = inv.repeat
        row["args"] = list(inv.args)
    elif kind.expected_stored:
        row["expected"] = [sample.get("expected") for sample in samples]
    return row


def split(
    rows: Sequence[tuple[Invariant, Sequence[Mapping[str, Any]]]], packages: Sequence[str] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Returns (inputs view, expectations view) for (row, parsed blob samples) pairs (the
    reference inputs view: `reference_view`).

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


def reference_view(rows: Sequence[tuple[Invariant, Sequence[Mapping[str, Any]]]]) -> dict[str, Any]:
    """The reference inputs view: one `reference_row` per row with a reference, sorted by id.
    It holds inputs only, and goes to the reference action alone."""
    found = [reference_row(inv, samples) for inv, samples in sorted(rows, key=lambda pair: pair[0].id)]
    return {"schema": VIEW_SCHEMA, "rows": [row for row in found if row is not None]}


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
