"""Checks 1-4 of `check`: what the commits alone say (docs/design.md sections 5 and 7), and the
spec-change report with its changelog rule. Each check is a function of the `Inputs` that returns
its `Findings`; none runs anything.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from tools.oracle_gate import errors
from tools.oracle_gate.approval.paths import protected_by, special_entry_problem
from tools.oracle_gate.check.findings import Findings, ReportItem
from tools.oracle_gate.check.inputs import Inputs, blob_reader
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.git.attributes import checkout_notes
from tools.oracle_gate.git.gitio import Change
from tools.oracle_gate.git.tree import Entry
from tools.oracle_gate.suite.loader import Oracles
from tools.oracle_gate.suite.manifest import manifest_problems
from tools.oracle_gate.suite.spec_changes import (
    CHANGELOG_PATH,
    RowChange,
    changelog_violations,
    spec_changes,
    with_reference_code,
)


def commit_checks(inputs: Inputs) -> list[Findings]:
    """Checks 1-4 in report order: protected paths, oracle files, manifest, invariant ids."""
    return [check_protected_paths(inputs), check_oracle_files(inputs), check_manifest(inputs), check_ids_kept(inputs)]


def check_protected_paths(inputs: Inputs) -> Findings:
    """Exit 2 for each changed path that touches protected content (`protected_changes`), unless
    the change carries the label; then a note counts them (docs/design.md section 5). A note also
    names each checkout conversion the judged commit's `.gitattributes` files ask for
    (`attributes.checkout_notes`, docs/design.md section 3).

    Changed means changed by the change (merge base -> HEAD) or, when the merge result is judged,
    between the base tip and the merge result (what landing the change would undo of the tip)."""
    hits = [
        (change, why, "")
        for change, why in protected_changes(
            inputs.changes, inputs.protected, inputs.head.listing, inputs.merge_base.listing, inputs.head.links
        )
    ]
    if inputs.merge_changes:
        seen = {change.path for change, _, _ in hits}
        hits += [
            (change, why, " in the merge result against the base tip")
            for change, why in protected_changes(
                inputs.merge_changes,
                inputs.protected,
                inputs.judged.listing,
                inputs.claims.listing,
                inputs.judged.links,
            )
            if change.path not in seen
        ]
    label = inputs.label
    if inputs.labelled:
        found: tuple[Violation, ...] = ()
    else:
        found = tuple(
            Violation(
                errors.PROTECTED_PATH,
                change.path,
                "",
                f"{why} and changed ({change.status}){where} without the {label!r} label",
            )
            for change, why, where in hits
        )
    shown = inputs.labelled and bool(hits)
    return Findings(
        "protected paths",
        found,
        f"{len(inputs.changes)} changed path(s), {len(hits)} protected"
        + (f", label {label!r} present" if shown else ""),
        ((f"{len(hits)} protected path(s) changed under the {label!r} label",) if shown else ())
        + checkout_notes(inputs.judged.tree, inputs.judged.listing),
    )


def check_oracle_files(inputs: Inputs) -> Findings:
    """Exit 5 for each problem of the judged policy, oracle files and blob pins (loader.py): HEAD's,
    or the merge result's when that is judged."""
    judged = inputs.judged.oracles
    return Findings(
        "oracle files",
        tuple(Violation.from_error(p) for p in judged.problems),
        f"{len(judged.files)} file(s), {len(judged.invariants)} invariant(s), every blob matches its pin",
    )


def check_manifest(inputs: Inputs) -> Findings:
    """Exit 5 when the judged commit's manifest is not current (manifest.py): HEAD's, or the merge
    result's (both sides added oracle files: update the branch and regenerate it)."""
    problems = manifest_problems(inputs.judged.tree, label=inputs.label)
    return Findings("manifest", tuple(Violation.from_error(p) for p in problems), "current")


RETIRE_HINT = (
    f"to retire a row on purpose, add a [[retired]] entry (id, reason, since) under the label and a line "
    f'in {CHANGELOG_PATH} naming the id (docs/oracles.md, "Retiring a row")'
)


def check_ids_kept(inputs: Inputs) -> Findings:
    """Exit 3 for each id the base declares and HEAD neither declares nor retires (a `[[retired]]`
    entry), and for each retired id whose entry HEAD dropped (a retired id stays retired); when the
    merge result is judged, the same for the base tip against the merge result, and exit 3 for each
    row the tip added or changed since the merge base that the merge result does not hold as the
    tip does. Exit 5 for a new `[[retired]]` entry whose id the base never declared.

    A file that cannot be read at all hides its ids: those are undecided (a note names them), and
    the file's own exit-5 problem already fails the gate.
    """
    base, head = inputs.merge_base.oracles, inputs.head.oracles
    found, undecided = _dropped(base, head, f"present at the base, missing at HEAD; {RETIRE_HINT}")
    detail = f"{len(base.declared_ids)} at base, {len(head.declared_ids)} at HEAD"
    known = base.declared_ids | set(base.retired)
    if inputs.is_merge:
        tip, merged = inputs.claims.oracles, inputs.judged.oracles
        more, more_undecided = _dropped(tip, merged, "present at the base tip, missing in the merge result")
        seen = {v.id for v in found}
        found += [v for v in more if v.id not in seen]
        undecided |= more_undecided
        found += _tip_rows_lost(base, tip, merged, skip={v.id for v in found} | undecided)
        detail += f", {len(tip.declared_ids)} at the base tip, {len(merged.declared_ids)} in the merge result"
        known |= tip.declared_ids | set(tip.retired)
    for ident, entry in sorted(inputs.judged.oracles.retired.items()):
        if ident not in known:
            found.append(
                Violation(
                    errors.INVALID_ORACLE,
                    entry.source,
                    ident,
                    "retires an id the base never declared; only a row the base has can be retired "
                    "(remove the [[retired]] entry)",
                )
            )
    notes: tuple[str, ...] = ()
    if undecided:
        notes = (f"ids not judged while their oracle file is unreadable: {', '.join(sorted(undecided))}",)
    return Findings("invariant ids", tuple(found), detail + ", none missing", notes)


def _dropped(before: Oracles, after: Oracles, why: str) -> tuple[list[Violation], set[str]]:
    """The exit-3 violations for ids `before` declares and `after` neither declares nor retires,
    and for ids `before` retires and `after` does not; and the ids that are undecided because
    their file in `after` cannot be read."""
    unreadable = {f.path for f in after.files if not f.parsed}
    retired = set(after.retired)
    undecided = {i for f in before.files if f.path in unreadable for i in f.declared_ids} | {
        e.id for f in before.files if f.path in unreadable for e in f.retired
    }
    undecided -= after.declared_ids | retired
    missing = sorted(before.declared_ids - after.declared_ids - retired - undecided)
    found = [Violation(errors.MISSING_ID, "oracles/", i, why) for i in missing]
    for ident in sorted(set(before.retired) - retired - undecided):
        found.append(
            Violation(
                errors.MISSING_ID,
                before.retired[ident].source,
                ident,
                "retired before this change, and its [[retired]] entry is gone; a retired id stays "
                "retired: restore the entry",
            )
        )
    return found, undecided


def _tip_rows_lost(base: Oracles, tip: Oracles, merged: Oracles, skip: Collection[str]) -> list[Violation]:
    """Exit 3 for each row the base tip added or changed since the merge base (`base`) that the
    merge result holds otherwise: a row the tip added or tightened is never lost in the merge,
    whatever the label (the change's author must update the branch and keep the tip's row)."""
    gained = {c.id for c in spec_changes(base, tip) if c.status != "removed"}
    found = []
    for change in spec_changes(tip, merged):
        if change.id not in gained or change.id in skip or change.status == "added":
            continue
        if change.status == "removed" and change.id in merged.declared_ids:
            continue  # declared but invalid: its exit-5 problem fails the gate
        fields = ", ".join(f"{f.field} {f.old} at the tip, {f.new} in the merge result" for f in change.fields[:3])
        found.append(
            Violation(
                errors.MISSING_ID,
                change.source,
                change.id,
                f"the base tip added or changed this row since the merge base, and the merge result "
                f"holds it otherwise ({fields or change.status}); update the branch and keep the "
                "tip's row",
            )
        )
    return found


def protected_changes(
    changes: Sequence[Change],
    globs: Sequence[str],
    head: Mapping[str, Entry],
    base: Mapping[str, Entry],
    links: Mapping[str, str],
) -> list[tuple[Change, str]]:
    """Returns each changed path that touches protected content, with the reason.

    A path counts when a protected glob matches it in any spelling a checkout may give it
    (`paths.fold`), when it is a symlink whose target reaches protected content, leaves the
    repository or loops, and when it is a submodule.
    """
    out = []
    for change in changes:
        glob = protected_by(change.path, globs)
        if glob:
            out.append((change, f"protected by {glob!r}"))
            continue
        problem = special_entry_problem(change.path, head, base, links, globs)
        if problem:
            out.append((change, problem))
    return out


def check_changelog(inputs: Inputs, changes: Sequence[RowChange]) -> Findings:
    """Exit 5 for each change that weakens a claim (a widened bound, fewer generated samples, a
    removed row) without an added line of `oracles/CHANGELOG.md` naming its id (spec_changes.py).

    Raises:
        GateError: (exit 1) when git cannot read the changelog.
    """
    texts = []
    for side in (inputs.merge_base, inputs.head):
        data = blob_reader(side)(CHANGELOG_PATH)
        texts.append(data.decode("utf-8", "replace") if data is not None else None)
    found = changelog_violations(changes, texts[0], texts[1])
    weakened = sum(1 for c in changes if c.weakens)
    return Findings("oracle changelog", tuple(found), f"{weakened} weakened claim(s), each named in {CHANGELOG_PATH}")


def spec_report(inputs: Inputs) -> tuple[list[RowChange], list[ReportItem]]:
    """The spec-change report (merge base -> HEAD, the change's own edits as a reviewer reads its
    diff) and, for a labelled change that weakens a claim, the changelog rule (`check_changelog`).
    Not while HEAD's oracle files are invalid (their rows are unknown, not removed: check 2 fails
    them): then no change and, when the change touched `oracles/`, a note.

    Raises:
        GateError: (exit 1) when git cannot read a blob or the changelog.
    """
    head = inputs.head.oracles
    if head.problems:
        touched = any(c.path.startswith("oracles/") for c in inputs.changes)
        return [], ["spec changes: not listed while HEAD's oracle files are invalid"] if touched else []
    changes = spec_changes(inputs.merge_base.oracles, head, blob_reader(inputs.merge_base), blob_reader(inputs.head))
    changes = with_reference_code(changes, head, [c.path for c in inputs.changes])
    if inputs.labelled and any(c.weakens for c in changes):
        return changes, [check_changelog(inputs, changes)]
    return changes, []
