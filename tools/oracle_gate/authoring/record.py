"""`record`: a row's samples observed on approved code, written as its blob (docs/oracles.md,
"Recording expected values").

For each row: its stored samples' inputs, `count` fresh samples drawn from its `generate` table and
its boundary samples (boundary.py) are run through the gate's own caller on the entry as committed
at the recorded commit, in the probe (runs/probe.py): a tree written from that commit's git objects,
so nothing of the work tree's code or of a change reaches the recording. The new blob holds, per
sample: for a kind that stores expected values, the inputs with the observed value as `expected`,
or the raised exception's class as `raises`; for the other kinds, the inputs of every sample the
approved code passes (the rest are left out and listed, with why). This module plans and reads;
commands/record_cmd.py prints and writes.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate.authoring.boundary import boundary_samples
from tools.oracle_gate.errors import OracleError, UsageError
from tools.oracle_gate.git.tree import Tree
from tools.oracle_gate.spec import kinds, raised
from tools.oracle_gate.spec.annotations import drawn
from tools.oracle_gate.spec.generate import GenerateSpec, draw, parse_generate
from tools.oracle_gate.spec.judgement import compact, cut, judge_row
from tools.oracle_gate.spec.samples import SampleError, check_shape, load_samples
from tools.oracle_gate.spec.schema import Invariant, is_oracle_path, parse_oracle
from tools.oracle_gate.spec.toml_text import row_table
from tools.oracle_gate.spec.views import caller_inputs, expectation_row
from tools.oracle_gate.suite.probe_files import ProbeRow, inputs_sample, probe_fields

# A pin that `parse_oracle` accepts, for validating a row whose blob `record` is about to write.
PLACEHOLDER_PIN = "0" * 64
# The marks of the table's lines (commands/record_cmd.py prints them in this order of columns).
NEW, CHANGED, KEPT, LEFT_OUT = "new", "changed", "kept", "left out"
# What `raised.outcome` says of a result that raised.
RAISES = "raises"
MARKS = (NEW, CHANGED, KEPT, LEFT_OUT)


@dataclass(frozen=True)
class Target:
    """A row to record.

    Attributes:
        invariant: the row, validated as if its blob were pinned.
        raw: its `[[invariant]]` table as `tomllib` reads it.
        index: its position among its file's rows (for the pin's rewrite).
        stored: its blob's samples today ([] when the blob does not exist yet).
    """

    invariant: Invariant
    raw: Mapping[str, Any]
    index: int
    stored: Sequence[Any]


@dataclass(frozen=True)
class Line:
    """One line of the table a reviewer reads: `mark inputs -> result` and a note."""

    mark: str
    inputs: str
    result: str
    note: str = ""


@dataclass
class Recorded:
    """What `record` observed for one row.

    Attributes:
        target: the row.
        samples: the new blob's samples, in order (stored ones first).
        lines: the table, one line per sample tried.
    """

    target: Target
    samples: list[Any] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)


def load_targets(tree: Tree, ids: Sequence[str], packages: Sequence[str] | None) -> list[Target]:
    """The rows `ids` of the work tree's oracle files, each validated with a placeholder pin.

    Raises:
        UsageError: (exit 1) for an id no oracle file declares, or one given twice.
        OracleError: (exit 5) for an oracle file that is not TOML, a row the schema refuses (the
            first problem, naming file, row and field), or a blob that is not a JSON array of
            samples of the row's kind.
    """
    if len(set(ids)) != len(ids):
        raise UsageError("an ID is given twice")
    listing = tree.files("oracles")
    found: dict[str, Target] = {}
    for path in sorted(p for p in listing if is_oracle_path(p)):
        try:
            rows = tomllib.loads(tree.read(listing[path]).decode("utf-8")).get("invariant", [])
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise OracleError(f"is not valid UTF-8 TOML: {exc}", path=path) from None
        for index, raw in enumerate(rows if type(rows) is list else []):
            if type(raw) is dict and raw.get("id") in ids:
                found[raw["id"]] = _target(tree, listing, path, index, raw, packages)
    missing = [i for i in ids if i not in found]
    if missing:
        raise UsageError(f"no oracle row has the id {missing[0]!r}")
    return [found[i] for i in ids]


def _target(
    tree: Tree, listing: Mapping[str, Any], path: str, index: int, raw: dict[str, Any], packages: Sequence[str] | None
) -> Target:
    """One Target: the row validated with PLACEHOLDER_PIN, and its blob's samples."""
    ident = str(raw["id"])
    if type(raw.get("blob")) is not str:
        raise OracleError("is required: the blob `record` writes", path=path, row=ident, field="blob")
    text = "schema = 1\n\n" + row_table({**raw, "blob_sha256": PLACEHOLDER_PIN})
    parsed = parse_oracle(text.encode("utf-8"), path, packages)
    if parsed.problems or not parsed.invariants:
        first = parsed.problems[0] if parsed.problems else OracleError("cannot be read", path=path, row=ident)
        raise first
    inv = parsed.invariants[0]
    stored: list[Any] = []
    entry = listing.get(inv.blob)
    if entry is not None:
        try:
            stored = _with_expected(inv, load_samples(tree.read(entry)))
            check_shape(inv, stored)
        except SampleError as exc:
            raise OracleError(f"blob {inv.blob}: {exc}", path=path, row=ident, field="blob") from None
    return Target(inv, raw, index, stored)


def _with_expected(inv: Invariant, samples: Any) -> Any:
    """`samples` with `expected: null` in every object sample of a kind that stores expected values
    and that holds neither `expected` nor `raises`: inputs the owner wrote for `record` to fill."""
    if not kinds.kind(inv.kind).expected_stored or type(samples) is not list:
        return samples
    return [
        dict(s, expected=None) if type(s) is dict and "expected" not in s and "raises" not in s else s for s in samples
    ]


def tried_samples(target: Target, count: int, salt: str) -> list[tuple[str, dict[str, Any]]]:
    """(origin, sample) of every sample `record` tries for `target`, without repeats: each stored
    sample (`stored N`), `count` drawn with `salt` (`generated`), then the boundary samples of its
    generators (`boundary`). Samples keep their stored shape; a stored one keeps its expected value.

    Raises:
        OracleError: (exit 5) when the row has no stored sample and no `generate` table.
    """
    inv = target.invariant
    drawn: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    if inv.generate is not None:
        spec = dataclasses.replace(inv.generate, count=max(count, 1))
        first = draw(dataclasses.replace(inv, generate=spec), salt)
        drawn = first[:count]
        edges = boundary_samples(inv.generate, first[0])
    if not target.stored and not drawn and not edges:
        raise OracleError(
            "has no stored sample and no [invariant.generate] table: give it one, or samples in its blob, "
            "so that record has inputs to run",
            path=inv.source,
            row=inv.id,
            field="generate",
        )
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    tagged = [(f"stored {i}", s) for i, s in enumerate(target.stored)]
    for origin, sample in [*tagged, *[("generated", s) for s in drawn], *[("boundary", s) for s in edges]]:
        key = json.dumps(inputs_sample(inv.kind, sample, inv.args_names), sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append((origin, sample))
    return out


def probe_row(target: Target, tried: Sequence[tuple[str, Mapping[str, Any]]]) -> ProbeRow:
    """The probe's row for `target`: its fields (`probe_fields`) and the inputs of `tried`."""
    inv = target.invariant
    return ProbeRow(probe_fields(target.raw), [inputs_sample(inv.kind, s, inv.args_names) for _, s in tried])


def results_of(target: Target, reply: Mapping[str, Any] | None, where: str, count: int) -> list[Any]:
    """The caller's per-sample results of `target` from the probe's `reply` (runs/probe.py).

    Args:
        target: the row.
        reply: the probe's entry for the row, or None when no caller action ran it.
        where: the commit the probe ran, as the messages name it (`main 1a2b3c4d5e6f`).
        count: the samples sent.

    Raises:
        OracleError: (exit 5) when the row failed as a whole (its entry does not load at that
            commit, it hit a limit or timed out), or the reply is not one result per sample.
    """
    inv = target.invariant

    def failed(why: str) -> OracleError:
        return OracleError(f"the recording at {where} failed: {why}", path=inv.source, row=inv.id)

    if reply is None:
        raise failed("no caller action ran the row")
    if "error" in reply:
        raise failed(f"{reply['error']}; raise the row's timeout_s or memory_mib if a limit stopped it")
    try:
        parsed = json.loads(str(reply.get("reply", "")))
    except ValueError:
        parsed = None
    if type(parsed) is dict and type(parsed.get("error")) is str:
        raise failed(parsed["error"])
    results = parsed.get("results") if type(parsed) is dict else None
    if type(results) is not list or len(results) != count:
        raise failed(f"the caller did not answer one result per sample ({count} sent)")
    return results


def shown_inputs(inv: Invariant, sample: Mapping[str, Any]) -> str:
    """What the caller calls the entry with for `sample` (`views.caller_inputs`), as the table shows
    it: compact JSON, cut. Raises nothing for a sample of the row's shape."""
    plain = inputs_sample(inv.kind, sample, inv.args_names)
    called = caller_inputs(inv.kind, inv.args, [plain], inv.receiver is not None, inv.over, inv.args_names)
    return cut(compact(called[0]))


def recorded(
    target: Target, tried: Sequence[tuple[str, Mapping[str, Any]]], results: Sequence[Any], salt: str
) -> Recorded:
    """The new blob and the table of `target`, from the results of `tried` (one per sample), `salt`
    the salt the samples were drawn with (for the judge's messages).

    Raises:
        OracleError: (exit 5) for a result that is not plain JSON (the row needs a `project`).
    """
    inv = target.invariant
    found = kinds.kind(inv.kind)
    out = Recorded(target)
    pairs: list[tuple[str, str, dict[str, Any], Any]] = []
    for index, ((origin, sample), result) in enumerate(zip(tried, results, strict=True)):
        shown = shown_inputs(inv, sample)
        try:
            how, what = raised.outcome(result)
        except ValueError as exc:
            raise OracleError(
                f"sample {index} ({origin}): {exc}; give the row a `project`",
                path=inv.source,
                row=inv.id,
                field="project",
            ) from None
        problem = raised.name_problem(what, inv.entry or inv.entries[0]) if how == RAISES else None
        if found.base_judged:
            # Compared with the base tip, an exception included: every sample is an input.
            pairs.append((origin, shown, inputs_sample(inv.kind, sample, inv.args_names), result))
        elif how == RAISES and (problem or not (found.takes_raises and inv.reference is None)):
            why = problem or "the row's kind stores no exception"
            out.lines.append(Line(LEFT_OUT, shown, f"raises {what}", why))
        elif found.expected_stored or how == RAISES:
            _record_expected(out, origin, sample, (how, what), shown)
        else:
            kept = dict(sample) if origin.startswith("stored") else inputs_sample(inv.kind, sample, inv.args_names)
            pairs.append((origin, shown, kept, result))
    for (origin, shown, kept, result), why in zip(pairs, _held(inv, [p[1:] for p in pairs], salt), strict=True):
        value = cut(compact(result["value"])) if "value" in result else f"raises {raised.outcome(result)[1]}"
        if why:
            out.lines.append(Line(LEFT_OUT, shown, value, f"the approved code fails the row here: {why}"))
            continue
        out.samples.append(kept)
        out.lines.append(Line(KEPT if origin.startswith("stored") else NEW, shown, value))
    return out


def _record_expected(out: Recorded, origin: str, sample: Mapping[str, Any], seen: tuple[str, Any], shown: str) -> None:
    """Adds one sample whose answer is stored: a value as `expected` (a kind that stores expected
    values), an exception as `raises` (any kind that takes one), and its line (changed when a
    stored sample said otherwise)."""
    inv = out.target.invariant
    base = {k: v for k, v in inputs_sample(inv.kind, sample, inv.args_names).items() if k not in ("expected",)}
    how, what = seen
    if how == RAISES:
        new = {**base, "raises": what}
        text = f"raises {what}"
    else:
        new = {**base, "expected": what}
        text = cut(compact(what))
    out.samples.append(new)
    old = {k: sample[k] for k in ("expected", "raises") if k in sample}
    now = {k: new[k] for k in ("expected", "raises") if k in new}
    if not origin.startswith("stored") or (old == {"expected": None} and now != old):
        # Drawn, or a stored sample's inputs the owner wrote for record to answer.
        out.lines.append(Line(NEW, shown, text))
        return
    same = json.dumps(old, sort_keys=True) == json.dumps(now, sort_keys=True)
    out.lines.append(Line(KEPT if same else CHANGED, shown, text, "" if same else f"was {cut(compact(old))}"))


def _held(inv: Invariant, pairs: Sequence[tuple[str, Any, Any]], salt: str) -> list[str]:
    """For (inputs shown, sample, result) of a row whose kind stores no expected value: "" for
    each sample the row's own judge passes on the approved code's result, else why it fails. A
    kind the probe replaced (`Kind.probe`) or one judged against the base tip passes every sample.
    Raises nothing."""
    found = kinds.kind(inv.kind)
    if found.probe is not None or found.base_judged or not pairs:
        return ["" for _ in pairs]
    samples = [sample for _, sample, _ in pairs]
    expect = expectation_row(dataclasses.replace(inv, generate=None, reference=None), samples)
    reply = json.dumps({"id": inv.id, "results": [result for _, _, result in pairs]})
    judged = judge_row(expect, {"id": inv.id, "reply": reply}, salt)
    if not judged.failed and not judged.ok:
        return [judged.reasons[0] if judged.reasons else "the row fails as a whole" for _ in pairs]
    why = dict(zip(judged.failed, judged.reasons, strict=False))
    return [why.get(index, "") for index in range(len(pairs))]


def annotated_generate(target: Target, sources: Mapping[str, str]) -> GenerateSpec | str:
    """The generators of an `exact_table` row without a `generate` table, from its entry's
    annotations at the recorded commit (spec/annotations.py), as a spec whose samples are packed in
    parameter order; or why there are none.

    Args:
        target: the row.
        sources: repository path -> source text of the commit's Python files that could hold the
            entry's module (`module_paths`).

    Raises nothing.
    """
    inv = target.invariant
    module, _, name = inv.entry.partition(":")
    if inv.receiver is not None or "." in name:
        return "its entry is a method: give the row samples in its blob"
    text = next((sources[p] for p in module_paths(module) if p in sources), None)
    if text is None:
        return f"no file of {module} at the recorded commit"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return f"{module} does not parse at the recorded commit"
    node = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name), None
    )
    if node is None:
        return f"{inv.entry} is no module-level function at the recorded commit"
    found = drawn(node, tree, module)
    if isinstance(found, str):
        return found
    if found.build:
        return f"its parameters need builders the row does not name ({', '.join(sorted(found.build))})"
    names = list(inv.args_names) or list(found.generate)
    if set(names) - set(found.generate):
        return f"its args_names are not all annotated parameters: {', '.join(sorted(set(names) - set(found.generate)))}"
    table = {"count": 1, **{n: found.generate[n] for n in names}}
    spec, problems = parse_generate(
        table, inv.kind, None, path=inv.source, row=inv.id, positional=names, entry=inv.entry
    )
    return spec if spec is not None else problems[0].message


def module_paths(module: str) -> list[str]:
    """The repository paths a module may be read from: `pkg/mod.py`, `pkg/mod/__init__.py`, and the
    same under `src/`. Raises nothing."""
    base = module.replace(".", "/")
    return [f"{prefix}{base}{suffix}" for prefix in ("", "src/") for suffix in (".py", "/__init__.py")]
