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
import hashlib
import itertools
import json
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate.check.inputs import Inputs, Side
from tools.oracle_gate.git.functions import Found, FunctionNode
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.annotations import drawn
from tools.oracle_gate.spec.generate import draw
from tools.oracle_gate.spec.judgement import canonical, compact, cut
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
# How `outcome` begins for a result that is not plain JSON: on both sides, the sample is not compared.
NOT_PLAIN = "not plain JSON"
# The id prefix of the behaviour diff's rows in the probe (never an id of the claims: ids of the
# probe's tree are its rows alone).
DIFF_ID = "behaviour_diff_"
# (repo, commit, oracles files, environ, side: "base" or "judged") -> the probe's replies: runs/probe.py
# `probe` (the base tip's in its kept root, the judged commit's in a fresh one).
ProbeRunner = Callable[[str, str, Mapping[str, bytes], Mapping[str, str], str], Mapping[str, Any]]


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
        digest: the observation digest of the judged commit's results (spec/judgement.py
            `canonical`, as a run's judge computes it), or "" when there are none.
    """

    name: str
    source: str
    total: int = 0
    differing: int = 0
    shown: tuple[str, ...] = ()
    failure: str = ""
    digest: str = ""


@dataclass(frozen=True)
class Unmeasured:
    """A modified function the diff does not compare.

    Attributes:
        found: the function.
        why: the reason, one line.
        change: True when the reason is itself a change of what callers see (its parameters
            changed, it was removed): with `behaviour_changes = "fail"`, such a public function
            fails like a differing one.
    """

    found: Found
    why: str
    change: bool = False


@dataclass
class Plan:
    """What the phase runs: (row or function, its probe row) pairs and the functions it cannot."""

    rows: list[tuple[Invariant, ProbeRow]] = field(default_factory=list)
    functions: list[tuple[Found, ProbeRow]] = field(default_factory=list)
    not_measured: list[Unmeasured] = field(default_factory=list)

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
    read: set[str] = set()
    for inv in side.oracles.invariants:
        if not kinds.kind(inv.kind).base_judged:
            continue
        if inv.source not in read:
            read.add(inv.source)
            doc = tomllib.loads(side.tree.read(side.listing[inv.source]).decode("utf-8"))
            raw_rows.update({str(r.get("id")): r for r in doc.get("invariant", [])})
        stored = load_samples(side.tree.read(side.listing[inv.blob]))
        samples = [inputs_sample(inv.kind, s) for s in [*stored, *draw(inv, salt)]]
        out.append((inv, ProbeRow(probe_fields(raw_rows[inv.id]), samples)))
    return out


def diff_rows(inputs: Inputs, modified: Sequence[Found], packages: Sequence[str], salt: str) -> Plan:
    """The behaviour diff's probe rows: one per module-level function of `modified` that the change
    changed (not added or removed) with its parameters unchanged, on the inputs the claims already
    give it (`known_samples`) and DIFF_SAMPLES drawn from the BASE TIP's annotations of it (which a
    human approved; the change's cannot narrow them), when it has either; the others in
    `not_measured`, with why. Raises nothing."""
    plan = Plan()
    for index, found in enumerate(modified):
        base = _base_version(inputs, found)
        if isinstance(base, Unmeasured):
            plan.not_measured.append(base)
            continue
        node, module = base
        result = drawn(node, module, found.module)
        # Only the first DIFF_SAMPLES known inputs are compared unless the annotations give
        # generators of their own (`_diff_row`): the blobs past those are not read.
        whole = not isinstance(result, str) and not result.build
        known = list(itertools.islice(known_samples(inputs, found, salt), None if whole else DIFF_SAMPLES))
        row = _diff_row(f"{DIFF_ID}{index}", found.entry, result, known, packages, salt)
        if type(row) is ProbeRow:
            plan.functions.append((found, row))
        else:
            plan.not_measured.append(Unmeasured(found, str(row)))
    return plan


def known_samples(inputs: Inputs, found: Found, salt: str) -> Iterator[dict[str, Any]]:
    """The inputs the claims in force already give `found` as keyword arguments, one at a time (a
    row's blob is read only when its samples are wanted): the stored and generated samples (drawn
    with `salt`) of each row whose entry it is, that calls it once per sample with no receiver,
    builder or projection, and passes keyword arguments (a keyword kind) or positional ones (a
    table kind, named by the function's parameters), in row order. Raises nothing."""
    side = inputs.judged if inputs.labelled else inputs.claims
    assert found.node is not None
    names = [a.arg for a in (*found.node.args.posonlyargs, *found.node.args.args)]
    for inv in side.oracles.invariants:
        kind = kinds.kind(inv.kind)
        plain = inv.receiver is None and not inv.build and inv.project is None
        if inv.entry != found.entry or kind.calls not in (kinds.ONCE, kinds.POSITIONAL) or not plain:
            continue
        entry = side.listing.get(inv.blob)
        stored = load_samples(side.tree.read(entry)) if entry is not None else []
        for sample in itertools.chain(stored, draw(inv, salt)):
            if kind.sample == kinds.TABLE:
                args = sample.get("args", [])
                if len(args) <= len(names):
                    yield dict(zip(names, args, strict=False))
            elif kind.sample == kinds.KEYWORDS:
                yield {k: v for k, v in sample.items() if k not in ("expected", "raises")}


def _base_version(inputs: Inputs, found: Found) -> tuple[FunctionNode, ast.Module] | Unmeasured:
    """The base tip's `def` of `found` and its module's syntax tree; or why it is not compared:
    added, removed, a method or nested, its parameters differ between the two sides."""
    public = not any(part.startswith("_") for part in found.name.split("."))
    if found.status == "removed":
        return Unmeasured(found, "removed by this change", change=public)
    if found.status != "changed":
        return Unmeasured(found, "new in this change: the base tip has no version of it")
    if found.scope:
        return Unmeasured(found, f"{found.scope}: the diff compares module-level functions")
    entry = inputs.claims.listing.get(found.path)
    try:
        module = ast.parse(inputs.claims.tree.read(entry).decode("utf-8", "replace") if entry is not None else "")
    except (SyntaxError, ValueError):
        return Unmeasured(found, "the base tip's version of its file does not parse")
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    node = next((n for n in defs if n.name == found.name), None)
    if node is None or found.node is None or ast.dump(node.args) != ast.dump(found.node.args):
        return Unmeasured(found, "its parameters differ from the base tip's", change=public)
    return node, module


def _diff_row(
    ident: str, entry: str, result: Any, known: Sequence[Mapping[str, Any]], packages: Sequence[str], salt: str
) -> ProbeRow | str:
    """The probe row of one function: the `known` samples, then those drawn from its annotations
    (`result`, a `Drawn` or why there is none; drawn ones only when they need no builder, or when
    nothing is known); or why it has none."""
    raw: dict[str, Any] = {"id": ident, "entry": entry, "kind": kinds.BACK_TO_BACK, "timeout_s": DIFF_TIMEOUT_S}
    if isinstance(result, str):
        return ProbeRow(raw, list(known)[:DIFF_SAMPLES]) if known else result
    if result.build and known:
        return ProbeRow(raw, list(known)[:DIFF_SAMPLES])
    if result.build:
        raw["build"] = dict(result.build)
    table = {"count": DIFF_SAMPLES, **result.generate}
    text = "schema = 1\n\n" + row_table(
        {**raw, "generate": table, "blob": "oracles/blobs/d.json", "blob_sha256": "0" * 64}
    )
    parsed = parse_oracle(text.encode("utf-8"), "oracles/diff.toml", packages)
    if parsed.problems or not parsed.invariants:
        return parsed.problems[0].message if parsed.problems else "its row cannot be read"
    return ProbeRow(raw, [*known, *draw(parsed.invariants[0], salt)][: DIFF_SAMPLES + len(known)])


def _results(reply: Mapping[str, Any] | None, count: int) -> list[Any] | str:
    """The per-sample results of one probe reply, or why there are none."""
    if reply is None:
        return "no caller action ran it"
    if "error" in reply:
        return str(reply["error"])
    try:
        # Strict JSON: NaN and Infinity are no result a run's judge would take.
        parsed = json.loads(str(reply.get("reply", "")), parse_constant=_not_json)
    except (ValueError, RecursionError):
        return "the caller's reply is not JSON"
    if type(parsed) is dict and type(parsed.get("error")) is str:
        return str(parsed["error"])
    results = parsed.get("results") if type(parsed) is dict else None
    if type(results) is not list or len(results) != count:
        return f"the caller did not answer one result per sample ({count} sent)"
    return results


def _not_json(name: str) -> Any:
    """`json.loads`'s hook for NaN, Infinity and -Infinity: refused."""
    raise ValueError(f"{name} is not JSON")


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
    return f"{NOT_PLAIN} ({result.get('unplain', 'malformed result')})"


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
    differing = unplain = 0
    for sample, a, b in zip(row.samples, ours, theirs, strict=True):
        left, right = outcome(a), outcome(b)
        if left == right and left.startswith(NOT_PLAIN):
            unplain += 1
        elif left != right:
            differing += 1
            if len(shown) < SHOWN:
                inputs = {k: v for k, v in sample.items() if k != "expected"}
                shown.append(f"{cut(compact(inputs))} -> {cut(left)}, base tip {cut(right)}")
    digest = hashlib.sha256(canonical(ours)).hexdigest()
    if unplain and unplain == count:
        why = "no result is plain JSON on either side; give it a `project`"
        return Compared(name, source, count, failure=why, digest=digest)
    return Compared(name, source, count, differing, tuple(shown), digest=digest)
