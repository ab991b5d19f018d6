"""The spec-change report: what a change does to the oracle rows, row by row and field by field,
with the changes that weaken a claim marked, and the changelog rule for those (docs/oracles.md,
"Reviewing an oracle change").

A labelled change that widens a bound, draws fewer generated samples, removes a row's reference,
changes a stored expected value (or the exception a sample must raise), lets a row count both
sides raising as agreement (`raises_agree`), removes a row or retires one must add a
line to `oracles/CHANGELOG.md` that names the row's id (exit 5 otherwise): a human approved the
label, and the changelog says why the claim got weaker.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tools.oracle_gate import errors
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.spec.kinds import ALL as KINDS
from tools.oracle_gate.spec.samples import SampleError, load_samples
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.suite.loader import Oracles
from tools.oracle_gate.suite.sample_changes import SampleChanges, changed_lines, sample_changes

# Reads a blob of one side by its repository path: its bytes, or None when it is not a regular file.
BlobReader = Callable[[str], "bytes | None"]

CHANGELOG_PATH = "oracles/CHANGELOG.md"
# Marks of a change that weakens a claim; each needs a changelog line under the label: those of
# every row, then those of some kinds (`Kind.weakened_by`: "bound widened", "expected value changed").
WEAKENING = tuple(
    dict.fromkeys(
        (
            "fewer generated samples",
            "row removed",
            "row retired",
            "reference removed",
            "stored samples removed",
            "kind changed",
            "reference code changed",
            "hidden samples removed",
            "hidden samples changed",
            "raises agree",
        )
        + tuple(mark for kind in KINDS for mark in kind.weakened_by)
    )
)
# Where the reference implementations live: a change to any file there may change the expected
# value of every row with a reference (a reference may import any module of the package).
REFERENCE_DIR = "oracles/reference/"
# The fields compared, in the order the report lists them.
FIELDS = (
    "source",
    "kind",
    "entry",
    "min",
    "max",
    "blob",
    "blob_sha256",
    "seed",
    "args",
    "repeat",
    "timeout_s",
    "memory_mib",
    "generate",
    "receiver",
    "build",
    "args_names",
    "project",
    "pattern",
    "reference",
    "inverse",
    "over",
    "direction",
    "entries",
    "hidden_sha256",
    "element",
    "raises_agree",
)


@dataclass(frozen=True)
class FieldChange:
    """One field of a row: its old and new value as shown (`-` when absent)."""

    field: str
    old: str
    new: str


@dataclass(frozen=True)
class RowChange:
    """One row that was added, removed or changed.

    Attributes:
        id: the row's id.
        status: "added", "removed" or "changed".
        source: the oracle file holding the row (at HEAD; at the base when removed).
        kind: the row's kind (at HEAD; at the base when removed).
        fields: the fields that differ, in FIELDS order (empty for added and removed rows).
        marks: what the change means for the claim, e.g. "bound widened", "entry renamed".
        samples: what a changed blob does to the row's samples (sample_changes.py), or None when
            the blob did not change or was not compared.
    """

    id: str
    status: str
    source: str
    kind: str
    fields: tuple[FieldChange, ...] = ()
    marks: tuple[str, ...] = ()
    samples: SampleChanges | None = None

    @property
    def weakens(self) -> bool:
        """True when a mark is one of WEAKENING."""
        return any(m in WEAKENING for m in self.marks)


def _shown(inv: Invariant, name: str) -> str:
    value = getattr(inv, name)
    if name == "generate":
        return f"{value.count} sample(s) a run" if value is not None else "-"
    if value is None or value == ():
        return "-"
    return repr(list(value)) if isinstance(value, tuple) else repr(value) if isinstance(value, str) else str(value)


def _marks(old: Invariant, new: Invariant) -> tuple[str, ...]:
    marks = []
    if None not in (old.min, old.max, new.min, new.max) and (old.min, old.max) != (new.min, new.max):
        assert old.min is not None and old.max is not None and new.min is not None and new.max is not None
        wider = new.min < old.min or new.max > old.max
        narrower = new.min > old.min or new.max < old.max
        marks.append("bound widened" if wider else "bound narrowed" if narrower else "bound moved")
    if old.kind != new.kind:
        marks.append("kind changed")
    if old.entry != new.entry or old.entries != new.entries:
        marks.append("entry renamed")
    if (old.receiver, old.build, old.args_names, old.project) != (new.receiver, new.build, new.args_names, new.project):
        marks.append("call changed")
    if old.reference is not None and new.reference is None:
        marks.append("reference removed")
    elif old.reference != new.reference:
        marks.append("reference changed")
    if (old.pattern, old.inverse, old.over, old.direction, old.element) != (
        new.pattern,
        new.inverse,
        new.over,
        new.direction,
        new.element,
    ):
        marks.append("relation changed")
    if new.raises_agree and not old.raises_agree:
        marks.append("raises agree")  # a raise of both sides passes now: docs/oracles.md, "Expected exceptions"
    if old.seed != new.seed:
        marks.append("seed retargeted")
    if old.blob != new.blob:
        marks.append("blob retargeted")
    elif old.blob_sha256 != new.blob_sha256:
        marks.append("blob content changed")
    # A hidden blob's bytes are in no commit: a reviewer cannot see what a new digest holds, so any
    # change of it, like its removal, needs a changelog line.
    if old.hidden_sha256 is not None and new.hidden_sha256 is None:
        marks.append("hidden samples removed")
    elif old.hidden_sha256 is not None and old.hidden_sha256 != new.hidden_sha256:
        marks.append("hidden samples changed")
    elif old.hidden_sha256 is None and new.hidden_sha256 is not None:
        marks.append("hidden samples added")
    before = old.generate.count if old.generate is not None else 0
    after = new.generate.count if new.generate is not None else 0
    if after < before:
        marks.append("fewer generated samples")
    elif old.generate != new.generate:
        marks.append("generated samples changed")
    return tuple(marks)


def spec_changes(
    base: Oracles, head: Oracles, read_base: BlobReader | None = None, read_head: BlobReader | None = None
) -> list[RowChange]:
    """Every row added, removed or changed between the base's and HEAD's valid rows, by id:
    changed rows first in HEAD's order, then added ones, then removed ones; a removed row that
    HEAD retires (`[[retired]]`) is marked "row retired" and shows the entry as field `retired`.

    Args:
        base, head: the two sides' oracles.
        read_base, read_head: read a blob of each side by path; when both are given, a row whose
            blob changed gets its per-sample changes (`RowChange.samples`), and the mark
            "expected value changed" when a sample kept its inputs and changed its expected value.
    """
    before = {inv.id: inv for inv in base.invariants}
    after = {inv.id: inv for inv in head.invariants}
    changed, added = [], []
    for inv in head.invariants:
        old = before.get(inv.id)
        if old is None:
            added.append(RowChange(inv.id, "added", inv.source, inv.kind, marks=("row added",)))
            continue
        fields = tuple(
            FieldChange(name, _shown(old, name), _shown(inv, name))
            for name in FIELDS
            if getattr(old, name) != getattr(inv, name)
        )
        if not fields:
            continue
        marks = _marks(old, inv)
        samples = None
        if read_base is not None and read_head is not None and old.blob_sha256 != inv.blob_sha256:
            samples = _compare_blobs(old, inv, read_base, read_head)
            if samples.changed_count:
                marks += ("expected value changed",)
            if samples.removed_count:
                marks += ("stored samples removed",)
        changed.append(RowChange(inv.id, "changed", inv.source, inv.kind, fields, marks, samples))
    retired = head.retired
    removed = []
    for inv in base.invariants:
        if inv.id in after:
            continue
        entry = retired.get(inv.id)
        if entry is None:
            removed.append(RowChange(inv.id, "removed", inv.source, inv.kind, marks=("row removed",)))
        else:
            shown = f"since {entry.since.isoformat()} in {entry.source}: {entry.reason}"
            removed.append(
                RowChange(
                    inv.id, "removed", inv.source, inv.kind, (FieldChange("retired", "-", shown),), ("row retired",)
                )
            )
    return changed + added + removed


def with_reference_code(changes: list[RowChange], head: Oracles, paths: Sequence[str]) -> list[RowChange]:
    """`changes` with every HEAD row that has a `reference` marked "reference code changed" when
    `paths` (the change's changed paths) holds a file under REFERENCE_DIR; the files are shown as
    the field `reference code`. A row already in `changes` gets the mark added; another gets a new
    "changed" entry; an added row gets neither, since it makes no earlier claim the code could
    weaken."""
    touched = sorted(p for p in paths if p.startswith(REFERENCE_DIR))
    if not touched:
        return changes
    shown = FieldChange(
        "reference code", "-", ", ".join(touched[:5]) + (f" and {len(touched) - 5} more" if len(touched) > 5 else "")
    )
    by_id = {c.id: i for i, c in enumerate(changes)}
    out = list(changes)
    for inv in head.invariants:
        if inv.reference is None:
            continue
        if inv.id in by_id:
            c = out[by_id[inv.id]]
            if c.status == "added":
                continue
            out[by_id[inv.id]] = RowChange(
                c.id, c.status, c.source, c.kind, c.fields + (shown,), c.marks + ("reference code changed",), c.samples
            )
        else:
            out.append(RowChange(inv.id, "changed", inv.source, inv.kind, (shown,), ("reference code changed",)))
    return out


def _compare_blobs(old: Invariant, new: Invariant, read_base: BlobReader, read_head: BlobReader) -> SampleChanges:
    """The per-sample changes between a row's blob at the base and at HEAD."""
    parsed = []
    for side, read, inv in (("the base's", read_base, old), ("HEAD's", read_head, new)):
        data = read(inv.blob)
        if data is None:
            return SampleChanges(problem=f"{side} blob {inv.blob} is not a regular file")
        try:
            parsed.append(load_samples(data))
        except SampleError as exc:
            return SampleChanges(problem=f"{side} blob {inv.blob} {exc}")
    return sample_changes(new.kind, parsed[0], parsed[1])


def report_lines(changes: Sequence[RowChange]) -> list[str]:
    """The report as text lines: `+ id`, `- id`, `~ id`, each changed field indented below, then
    the row's sample changes (`sample_changes.changed_lines`)."""
    lines = []
    for change in changes:
        sign = {"added": "+", "removed": "-", "changed": "~"}[change.status]
        marks = f"  [{', '.join(change.marks)}]" if change.marks else ""
        where = "from" if change.status == "removed" else "in"
        lines.append(f"  {sign} {change.id} ({change.kind}) {where} {change.source}{marks}")
        lines.extend(f"      {f.field}: {f.old} -> {f.new}" for f in change.fields)
        if change.samples is not None:
            lines.extend(changed_lines(change.samples, "      "))
    return lines


def added_lines(base_text: str | None, head_text: str | None) -> list[str]:
    """The lines of HEAD's changelog that the base's does not have (counted, so a repeated line
    counts once per new copy)."""
    old = Counter((base_text or "").splitlines())
    new = []
    for line in (head_text or "").splitlines():
        if old[line]:
            old[line] -= 1
        else:
            new.append(line)
    return new


def changelog_violations(changes: Sequence[RowChange], base_text: str | None, head_text: str | None) -> list[Violation]:
    """Exit 5 for each weakening change whose id no added line of `oracles/CHANGELOG.md` names
    (as a whole word). Applies to labelled changes: without the label the edit is already exit 2."""
    added = added_lines(base_text, head_text)
    found = []
    for change in changes:
        if not change.weakens:
            continue
        named = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(change.id)}(?![A-Za-z0-9_])")
        if any(named.search(line) for line in added):
            continue
        what = ", ".join(m for m in change.marks if m in WEAKENING)
        found.append(
            Violation(
                errors.INVALID_ORACLE,
                CHANGELOG_PATH,
                change.id,
                f"{what} ({change.source}) needs a line in {CHANGELOG_PATH} naming {change.id} in this change, "
                f"e.g. `- {change.id}: {what}, because ...`; then run `manifest --write`",
            )
        )
    return found
