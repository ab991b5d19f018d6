"""`check`'s side of hidden samples: which hidden blobs the clean run gets, and what its outcomes say.

The store (suite/hidden_store.py) is read only for `check --clean`; each row's hidden part is then
judged in the clean run alone, and reported as one word per row (docs/oracles.md, "Hidden samples";
docs/threat-model.md, "Hidden samples"). A hidden part that fails is exit 4 naming only the row; one
the clean run could not run is a note, or exit 1 when the policy says `hidden = "required"`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import HIDDEN_REQUIRED, POLICY_PATH
from tools.oracle_gate.errors import GateError, Violation
from tools.oracle_gate.git.tree import REGULAR, Entry
from tools.oracle_gate.runs.results import Observed
from tools.oracle_gate.spec.judgement import HIDDEN_ABSENT, HIDDEN_FAILED, HIDDEN_PASSED, judge_all
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.spec.views import split
from tools.oracle_gate.suite.hidden_store import STORE_VARIABLE, fetch, store_folder
from tools.oracle_gate.suite.loader import check_blob

# What a failed hidden part says: nothing of the samples (the rationed feedback of threat-model.md).
FAILED_WHY = (
    "failed on its hidden samples; they are held by the hidden store and not shown (one pass/fail bit "
    'per row per run: docs/oracles.md, "Hidden samples")'
)


@dataclass
class HiddenPlan:
    """The hidden part of one `check`.

    Attributes:
        rows: id -> (oracle file, hidden digest) of every judged row with a `hidden_sha256`.
        blobs: digest -> verified bytes the hidden phase gets (split by `views`).
        invariants: those rows themselves, as the claims in force hold them.
        guarded: the store folder (real path), which no sealed root may show.
        violations: exit-1 lines when the policy requires the hidden samples and they cannot run.
        notes: why some or all hidden parts do not run, when they are optional.
    """

    rows: dict[str, tuple[str, str]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    invariants: list[Invariant] = field(default_factory=list)
    guarded: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def delivered(self) -> list[str]:
        """The ids whose hidden blob the clean run gets, sorted."""
        return sorted(i for i, (_, digest) in self.rows.items() if digest in self.blobs)


def plan(
    invariants: Sequence[Invariant], setting: str, environ: Mapping[str, str], repo: str, *, clean: bool, remote: bool
) -> HiddenPlan:
    """Which hidden blobs the clean run gets, read and verified from the store.

    Args:
        invariants: the judged rows (the claims in force).
        setting: the policy's `hidden` (HIDDEN_OPTIONAL or HIDDEN_REQUIRED).
        environ: the gate's environment (`ORACLE_GATE_HIDDEN_STORE`).
        repo: the repository (a store inside it is refused).
        clean: the check runs the clean run; without it no hidden part runs (a note).
        remote: the clean run is remote, which does not run hidden samples (yet): a note, or exit 1.

    Raises nothing. Without a store (unset), without `clean`, or with `remote`, the hidden part
    does not run: a note, or with HIDDEN_REQUIRED an exit-1 violation. A store that is named but
    cannot be used (missing, a link, inside the repository, a file missing or wrong) is an exit-1
    violation in either setting: the files may have been taken from it (docs/threat-model.md,
    "Hidden samples"), and a note would let the rows pass without them.
    """
    out = HiddenPlan(
        rows={inv.id: (inv.source, inv.hidden_sha256) for inv in invariants if inv.hidden_sha256 is not None},
        invariants=[inv for inv in invariants if inv.hidden_sha256 is not None],
    )
    if not out.rows:
        return out
    if not clean:
        out.notes.append(f"hidden samples: clean run only ({_ids(out)})")
        return out
    if remote:
        return _cannot(
            out, setting, "the remote clean run does not run hidden samples; run `check --clean` on a sealed local root"
        )
    try:
        folder = store_folder(environ, repo)
    except GateError as exc:
        _unusable(out, "", str(exc))
        return out
    if folder is None:
        return _cannot(out, setting, f"{STORE_VARIABLE} is not set")
    _fetch_blobs(out, folder)
    return out


def _ids(out: HiddenPlan) -> str:
    """The plan's hidden row ids, sorted and comma-separated, for its notes."""
    return ", ".join(sorted(out.rows))


def _cannot(out: HiddenPlan, setting: str, why: str) -> HiddenPlan:
    """`out` with why its hidden part does not run: an exit-1 violation under HIDDEN_REQUIRED, else a note."""
    if setting == HIDDEN_REQUIRED:
        out.violations.append(Violation(errors.UNDECIDED, POLICY_PATH, "", f'hidden = "required", but {why}'))
    else:
        out.notes.append(f"hidden samples: not run ({why}): {_ids(out)}")
    return out


def _unusable(out: HiddenPlan, ident: str, why: str) -> None:
    """Adds to `out` the exit-1 violation of a named store that cannot be used (row `ident`, or "")."""
    out.violations.append(
        Violation(
            errors.UNDECIDED,
            POLICY_PATH,
            ident,
            f"hidden samples cannot run: {why}; the store is named, so the gate "
            f"does not run without it (unset {STORE_VARIABLE} to skip them)",
        )
    )


def _fetch_blobs(out: HiddenPlan, folder: str) -> None:
    """Reads the rows' hidden blobs from the store `folder` into `out`, guarding the folder; each
    problem of the store and each missing file is an exit-1 violation."""
    out.guarded = [os.path.realpath(folder)]
    fetched = fetch(folder, [digest for _, digest in out.rows.values()])
    out.blobs = fetched.blobs
    for problem in fetched.problems:
        _unusable(out, "", problem)
    for ident, (_, digest) in sorted(out.rows.items()):
        if digest in fetched.missing:
            _unusable(out, ident, f"the store {folder} has no file {digest}")


def views(hidden: HiddenPlan, packages: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, Any], list[Violation]]:
    """(hidden inputs view, hidden expectations view, violations): each delivered row's hidden blob
    checked as a blob of that row (its pin is the store's name, verified by `plan`; the shape
    here) and split by `views.split`, in the gate's own process. Only the inputs view enters the
    hidden phase's root; the expectations stay in this process. A blob whose shape is wrong is an
    exit-5 violation naming the row and `hidden_sha256`, quoting nothing of it. Raises nothing.

    Args:
        hidden: the plan (`plan`): its invariants and verified blobs.
        packages: the policy's production packages, for the inputs view (`views.split`).
    """
    rows: list[tuple[Invariant, Any]] = []
    found: list[Violation] = []
    for inv in sorted(hidden.invariants, key=lambda i: i.id):
        digest = inv.hidden_sha256
        if digest is None or digest not in hidden.blobs:
            continue
        data = hidden.blobs[digest]
        row = replace(inv, blob=f"hidden blob {digest}", blob_sha256=digest, generate=None, reference=None)
        if check_blob(row, Entry(REGULAR, ""), data):
            found.append(
                Violation(
                    errors.INVALID_ORACLE,
                    inv.source,
                    inv.id,
                    "field hidden_sha256: its hidden blob does not have the row's sample shape "
                    '(not shown: docs/oracles.md, "Hidden samples")',
                )
            )
            continue
        rows.append((row, load_samples(data)))
    inputs, expectations = split(rows, packages)
    return inputs, expectations, found


def words(expectations: Mapping[str, Any], observations: Sequence[Any] | None) -> dict[str, str]:
    """id -> HIDDEN_PASSED or HIDDEN_FAILED for every row of the hidden `expectations` view, judged
    (`judgement.judge_all`) against the hidden callers' `observations` documents (one per oracle
    test target; None: the phase did not run to its end, so every row fails). A row no document
    holds fails; a row two documents hold passes only when both do. Nothing but the word leaves
    this function (docs/threat-model.md, "Hidden samples"). Raises nothing."""
    ids = [row["id"] for row in expectations.get("rows", [])]
    if observations is None:
        return {ident: HIDDEN_FAILED for ident in ids}
    seen: dict[str, bool] = {}
    for document in observations:
        rows = document.get("rows") if type(document) is dict else None
        held = {r.get("id") for r in rows if type(r) is dict} if type(rows) is list else set()
        part = {"schema": expectations.get("schema"), "rows": [r for r in expectations["rows"] if r["id"] in held]}
        judged, _, _ = judge_all(part, document)
        for item in judged:
            seen[item.id] = seen.get(item.id, True) and item.ok
    return {ident: HIDDEN_PASSED if seen.get(ident) else HIDDEN_FAILED for ident in ids}


def judge(
    hidden: HiddenPlan, judged: Mapping[str, str] | None, workspace: Mapping[str, Observed]
) -> tuple[list[Violation], str]:
    """(violations, detail) of the hidden parts after the runs: exit 4 for each row whose hidden
    part failed in the hidden phase (`judged`: id -> word, `words`; None when the phase did not
    run), naming only the row; exit 1 for a delivered row the phase did not judge, or one that a
    workspace or clean run's judge judged (no judge in a Bazel invocation may hold them). Raises
    nothing."""
    found: list[Violation] = []
    for ident in sorted(hidden.rows):
        source = hidden.rows[ident][0]
        seen = workspace.get(ident)
        if seen is not None and seen.hidden not in ("", HIDDEN_ABSENT):
            found.append(
                Violation(
                    errors.UNDECIDED,
                    source,
                    ident,
                    f"a run's judge judged hidden samples ({seen.hidden}); only the gate's hidden phase may hold them",
                )
            )
    passed = 0
    for ident in hidden.delivered:
        source = hidden.rows[ident][0]
        word = judged.get(ident, "") if judged is not None else ""
        if word == HIDDEN_PASSED:
            passed += 1
        elif word == HIDDEN_FAILED:
            found.append(Violation(errors.NO_OUTCOME, source, ident, FAILED_WHY))
        elif judged is not None:
            found.append(
                Violation(
                    errors.UNDECIDED, source, ident, "the hidden phase was given its hidden blob but did not judge it"
                )
            )
    if judged is None or not hidden.delivered:
        return found, f"{len(hidden.rows)} row(s) with hidden samples: not run (see the note)"
    return found, (
        f"{passed} of {len(hidden.delivered)} row(s) passed their hidden samples in the hidden phase; "
        f"the workspace and clean runs: {HIDDEN_ABSENT}"
    )
