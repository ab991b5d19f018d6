"""The behaviour phase of `check`: the judged commit's code and the base tip's, run side by side on the
same samples (docs/oracles.md, "Behaviour kept" and "The behaviour diff"; docs/design.md section 10).

Two kinds of comparison share it. A `back_to_back` row of the claims in force (the kind that needs
no expected value) passes only when its entry returns, or raises, on every stored and generated
sample what the base tip's version returns or raises. The behaviour diff takes every module-level
function the change modified (the coverage signal's list) whose parameters the gate can generate
from their annotations (spec/annotations.py), draws DIFF_SAMPLES inputs and reports those whose
results differ, a note unless the policy says `behaviour_changes = "fail"`.

Each side runs in the probe (runs/probe.py): a tree written from that commit's git objects, sealed
like the clean run, with the gate's caller and every limit of a row; the base tip's code never runs
beside the change's, and neither sees the other's results. The phase starts after the runs.
"""

from __future__ import annotations

import ast
import json
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate.check.inputs import Inputs, Side
from tools.oracle_gate.git.functions import Found, functions
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.annotations import drawn
from tools.oracle_gate.spec.generate import draw
from tools.oracle_gate.spec.judgement import compact, cut
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import Invariant, parse_oracle
from tools.oracle_gate.spec.toml_text import row_table
from tools.oracle_gate.suite.probe_files import ProbeRow, inputs_sample, probe_fields

# Inputs drawn per function of the behaviour diff, and the seconds its calls may take on each side:
# the fixed budget that keeps the diff a small part of a check.
DIFF_SAMPLES = 200
DIFF_TIMEOUT_S = 20
# Differing samples a line shows before `...`.
SHOWN = 3
# The id prefix of the behaviour diff's rows in the probe (never an id of the claims: ids of the
# probe's tree are its rows alone).
DIFF_ID = "behaviour_diff_"
# (repo, commit, oracles files, environ) -> the probe's replies: runs/probe.py `probe`.
ProbeRunner = Callable[[str, str, Mapping[str, bytes], Mapping[str, str]], Mapping[str, Any]]


@dataclass(frozen=True)
class Compared:
    """One row or function, run on both sides.

    Attributes:
        name: the row's id, or the function's `module:qualname`.
        source: the row's oracle file, or the function's file.
        total: samples run.
        differing: how many gave different results.
        shown: the first SHOWN of them: `inputs -> judged result, base tip base result`.
        failure: why it could not be compared ("" when it was).
    """

    name: str
    source: str
    total: int = 0
    differing: int = 0
    shown: tuple[str, ...] = ()
    failure: str = ""


@dataclass
class Plan:
    """What the phase runs: (row or function, its probe row) pairs and the functions it cannot."""

    rows: list[tuple[Invariant, ProbeRow]] = field(default_factory=list)
    functions: list[tuple[Found, ProbeRow]] = field(default_factory=list)
    not_measured: list[str] = field(default_factory=list)

    @property
    def probe_rows(self) -> list[ProbeRow]:
        """Every probe row, rows first."""
        return [row for _, row in self.rows] + [row for _, row in self.functions]


def kept_rows(inputs: Inputs, side: Side, salt: str) -> list[tuple[Invariant, ProbeRow]]:
    """The `back_to_back` rows of the claims in force (`side`, the commit whose `oracles/` the runs
    use), each with its stored samples' inputs then the samples drawn with `salt` (those the runs
    drew). Raises nothing for valid oracles (they were validated before the runs)."""
    out = []
    raw_rows: dict[str, dict[str, Any]] = {}
    for inv in side.oracles.invariants:
        if not kinds.kind(inv.kind).base_judged:
            continue
        if inv.source not in raw_rows:
            doc = tomllib.loads(side.tree.read(side.listing[inv.source]).decode("utf-8"))
            raw_rows.update({str(r.get("id")): r for r in doc.get("invariant", [])})
        stored = load_samples(side.tree.read(side.listing[inv.blob]))
        samples = [inputs_sample(inv.kind, s) for s in [*stored, *draw(inv, salt)]]
        out.append((inv, ProbeRow(probe_fields(raw_rows[inv.id]), samples)))
    return out


def diff_rows(inputs: Inputs, modified: Sequence[Found], packages: Sequence[str], salt: str) -> Plan:
    """The behaviour diff's probe rows: one per module-level function of `modified` that the change
    changed (not added) and whose parameters have annotations `annotations.drawn` generates from,
    each with DIFF_SAMPLES drawn inputs; the others in `not_measured`, with why. Raises nothing."""
    plan = Plan()
    for index, found in enumerate(modified):
        why = _unmeasurable(inputs, found)
        if not why and found.node is not None:
            tree = ast.parse(inputs.judged.tree.read(inputs.judged.listing[found.path]).decode("utf-8", "replace"))
            result = drawn(found.node, tree, found.module)
            row = (
                _diff_row(f"{DIFF_ID}{index}", found.entry, result, packages, salt)
                if type(result) is not str
                else result
            )
            if type(row) is ProbeRow:
                plan.functions.append((found, row))
                continue
            why = str(row)
        plan.not_measured.append(f"{found.entry}: {why}")
    return plan


def _unmeasurable(inputs: Inputs, found: Found) -> str:
    """Why `found` is not compared ("" when it can be): added, a method or nested, its parameters
    differ between the two sides."""
    if found.status != "changed":
        return "new in this change: the base tip has no version of it"
    if found.scope:
        return f"{found.scope}: the diff compares module-level functions"
    entry = inputs.claims.listing.get(found.path)
    try:
        source = inputs.claims.tree.read(entry).decode("utf-8", "replace") if entry is not None else ""
        before = {name: node for name, _, node in functions(source)}
    except (SyntaxError, ValueError):
        return "the base tip's version of its file does not parse"
    node = before.get(found.name)
    if node is None or found.node is None or ast.dump(node.args) != ast.dump(found.node.args):
        return "its parameters differ from the base tip's"
    return ""


def _diff_row(ident: str, entry: str, result: Any, packages: Sequence[str], salt: str) -> ProbeRow | str:
    """The probe row of one function with its drawn samples, or why the gate's schema refuses it."""
    raw: dict[str, Any] = {"id": ident, "entry": entry, "kind": kinds.BACK_TO_BACK, "timeout_s": DIFF_TIMEOUT_S}
    if result.build:
        raw["build"] = dict(result.build)
    raw["generate"] = {"count": DIFF_SAMPLES, **result.generate}
    text = "schema = 1\n\n" + row_table({**raw, "blob": "oracles/blobs/diff.json", "blob_sha256": "0" * 64})
    parsed = parse_oracle(text.encode("utf-8"), "oracles/diff.toml", packages)
    if parsed.problems or not parsed.invariants:
        return parsed.problems[0].message if parsed.problems else "its row cannot be read"
    samples = draw(parsed.invariants[0], salt)
    return ProbeRow({k: v for k, v in raw.items() if k != "generate"}, samples)


def _results(reply: Mapping[str, Any] | None, count: int) -> list[Any] | str:
    """The per-sample results of one probe reply, or why there are none."""
    if reply is None:
        return "no caller action ran it"
    if "error" in reply:
        return str(reply["error"])
    try:
        parsed = json.loads(str(reply.get("reply", "")))
    except ValueError:
        return "the caller's reply is not JSON"
    if type(parsed) is dict and type(parsed.get("error")) is str:
        return str(parsed["error"])
    results = parsed.get("results") if type(parsed) is dict else None
    if type(results) is not list or len(results) != count:
        return f"the caller did not answer one result per sample ({count} sent)"
    return results


def outcome(result: Any) -> str:
    """What one result means for the comparison, as text: the value's canonical JSON, `raises C`
    (the class, not the message, which may hold an address), or why it is not plain JSON."""
    if type(result) is not dict:
        return "malformed result"
    if "value" in result:
        return compact(result["value"])
    if "raised" in result:
        classes = result.get("classes")
        name = classes[0] if type(classes) is list and classes else str(result["raised"]).split(":", 1)[0]
        return f"raises {str(name).removeprefix('builtins:')}"
    return f"not plain JSON ({result.get('unplain', 'malformed result')})"


def compare(
    name: str, source: str, row: ProbeRow, judged: Mapping[str, Any] | None, base: Mapping[str, Any] | None
) -> Compared:
    """Compares one probe row's results on the judged commit and the base tip. Raises nothing."""
    count = len(row.samples)
    ours, theirs = _results(judged, count), _results(base, count)
    if type(ours) is str:
        return Compared(name, source, count, failure=f"the judged commit: {ours}")
    if type(theirs) is str:
        return Compared(name, source, count, failure=f"the base tip: {theirs}")
    shown: list[str] = []
    differing = 0
    for sample, a, b in zip(row.samples, ours, theirs, strict=True):
        left, right = outcome(a), outcome(b)
        if left != right or left.startswith("not plain"):
            differing += 1
            if len(shown) < SHOWN:
                inputs = {k: v for k, v in sample.items() if k != "expected"}
                shown.append(f"{cut(compact(inputs))} -> {cut(left)}, base tip {cut(right)}")
    return Compared(name, source, count, differing, tuple(shown))
