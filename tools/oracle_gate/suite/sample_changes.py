"""The per-sample part of the spec-change report: what a changed blob does to a row's samples
(docs/oracles.md, "Reviewing an oracle change").

A sample is known by its inputs: the whole sample, less `expected` for a row of a kind whose
samples store it (`Kind.expected_stored`: `exact_table`) and less `raises`, the exception a sample
must raise (spec/raised.py), which is an expected value too, shown as `raises NAME`. Two
blobs are compared as multisets of inputs: an input in HEAD's blob and not in the base's is
added, the other way removed, and an input in both whose expected value differs is changed, with
its old and new expected value. A changed expected value and a removed sample weaken the claim: a
reviewer must see them, and the changelog must name the row (spec_changes.WEAKENING, "expected
value changed", "stored samples removed"). An added or removed sample shows its expected value
too, so a sample whose inputs were retyped (`1` to `1.0`) shows both answers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from tools.oracle_gate.spec.kinds import kind_of
from tools.oracle_gate.spec.raised import RAISES
from tools.oracle_gate.text import one_line

# How many samples of each part the report shows; the rest are counted.
MAX_SHOWN = 20
# Characters of one shown value, after which it is cut with "...".
MAX_SHOWN_CHARS = 300


@dataclass(frozen=True)
class ChangedSample:
    """One sample in both blobs whose expected value differs: its inputs, old and new expected
    value, each as canonical JSON text."""

    inputs: str
    old: str
    new: str


@dataclass(frozen=True)
class SampleChanges:
    """What a blob change does to a row's samples.

    Attributes:
        base_count, head_count: the number of samples in the base's and HEAD's blob.
        added, removed: the first MAX_SHOWN added (HEAD's order) and removed (the base's order)
            samples: their inputs as canonical JSON text, then `: expected V` for a sample that
            stores an expected value.
        changed: the first MAX_SHOWN changed samples, in HEAD's order.
        added_count, removed_count, changed_count: how many there are in all.
        problem: why the blobs could not be compared (one blob unreadable or not a list), or "".
    """

    base_count: int = 0
    head_count: int = 0
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[ChangedSample, ...] = ()
    added_count: int = 0
    removed_count: int = 0
    changed_count: int = 0
    problem: str = ""

    def summary(self) -> str:
        """One line: `2 added, 0 removed, 2 changed (10 at the base, 12 at HEAD)`."""
        if self.problem:
            return f"not compared: {self.problem}"
        return (
            f"{self.added_count} added, {self.removed_count} removed, {self.changed_count} with a changed "
            f"expected value ({self.base_count} at the base, {self.head_count} at HEAD)"
        )

    def lines(self) -> list[str]:
        """The shown samples as report lines (without indentation), then a count of the rest."""
        out = [f"changed {c.inputs}: expected {c.old} -> {c.new}" for c in self.changed]
        if self.changed_count > len(self.changed):
            out.append(f"... and {self.changed_count - len(self.changed)} more changed")
        out += [f"added {s}" for s in self.added]
        if self.added_count > len(self.added):
            out.append(f"... and {self.added_count - len(self.added)} more added")
        out += [f"removed {s}" for s in self.removed]
        if self.removed_count > len(self.removed):
            out.append(f"... and {self.removed_count - len(self.removed)} more removed")
        return out

    def as_json(self) -> dict[str, object]:
        """The `samples` object of a row in `check --format json`."""
        return {
            "base_count": self.base_count,
            "head_count": self.head_count,
            "added": self.added_count,
            "removed": self.removed_count,
            "changed": self.changed_count,
            "shown": {
                "added": list(self.added),
                "removed": list(self.removed),
                "changed": [{"inputs": c.inputs, "old": c.old, "new": c.new} for c in self.changed],
            },
            "problem": self.problem,
        }


def canonical(value: object) -> str:
    """A JSON value as one canonical line: sorted keys, no spaces, non-ASCII kept, cut after
    MAX_SHOWN_CHARS characters."""
    return one_line(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False), MAX_SHOWN_CHARS)


def _split(kind: str, sample: object) -> tuple[str, str | None]:
    """(inputs, expected) of one sample as canonical JSON; expected is `raises NAME` for a sample
    with `raises`, None for a sample of a kind without stored expected values."""
    found = kind_of(kind)
    if isinstance(sample, dict) and RAISES in sample:
        drop = (RAISES, "expected") if found is not None and found.expected_stored else (RAISES,)
        inputs = {k: v for k, v in sample.items() if k not in drop}
        return canonical(inputs), f"{RAISES} {canonical(sample[RAISES])}"
    if found is not None and found.expected_stored and isinstance(sample, dict) and "expected" in sample:
        inputs = {k: v for k, v in sample.items() if k != "expected"}
        return canonical(inputs), canonical(sample["expected"])
    return canonical(sample), None


def sample_changes(kind: str, old: object, new: object) -> SampleChanges:
    """Compares a row's samples at the base (`old`) and at HEAD (`new`), both parsed blobs.

    Args:
        kind: the row's kind at HEAD (`exact_table` samples carry an expected value: `Kind.expected_stored`).
        old, new: the parsed JSON of each blob: a list of samples; anything else is a `problem`.

    Returns:
        SampleChanges; inputs that occur n times at the base and m times at HEAD pair up in order,
        min(n, m) compared and the rest added or removed. Raises nothing.
    """
    if not isinstance(old, list) or not isinstance(new, list):
        side = "the base's" if not isinstance(old, list) else "HEAD's"
        return SampleChanges(problem=f"{side} blob is not a list of samples")
    before: dict[str, list[str | None]] = defaultdict(list)
    for sample in old:
        inputs, expected = _split(kind, sample)
        before[inputs].append(expected)
    used: dict[str, int] = defaultdict(int)
    added: list[str] = []

    def shown(inputs: str, expected: str | None) -> str:
        return inputs if expected is None else f"{inputs}: expected {expected}"  # `expected raises "X"` too

    changed: list[ChangedSample] = []
    for sample in new:
        inputs, expected = _split(kind, sample)
        index = used[inputs]
        if index >= len(before.get(inputs, ())):
            added.append(shown(inputs, expected))
            continue
        used[inputs] += 1
        was = before[inputs][index]
        if was != expected:
            changed.append(
                ChangedSample(inputs, was if was is not None else "-", expected if expected is not None else "-")
            )
    removed: list[str] = []
    seen: dict[str, int] = defaultdict(int)
    for sample in old:
        inputs, expected = _split(kind, sample)
        seen[inputs] += 1
        if seen[inputs] > used[inputs]:
            removed.append(shown(inputs, expected))
    return SampleChanges(
        len(old),
        len(new),
        tuple(added[:MAX_SHOWN]),
        tuple(removed[:MAX_SHOWN]),
        tuple(changed[:MAX_SHOWN]),
        len(added),
        len(removed),
        len(changed),
    )


def changed_lines(changes: SampleChanges, indent: str) -> Sequence[str]:
    """The report lines of one row's sample changes: the summary, then the shown samples."""
    return [f"{indent}samples: {changes.summary()}", *(f"{indent}  {line}" for line in changes.lines())]
