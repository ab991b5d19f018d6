"""`check`'s side of hidden samples: which hidden blobs the clean run gets, and what its outcomes say.

The store (suite/hidden_store.py) is read only for `check --clean`; each row's hidden part is then
judged in the clean run alone, and reported as one word per row (docs/oracles.md, "Hidden samples";
docs/threat-model.md, "Hidden samples"). A hidden part that fails is exit 4 naming only the row; one
the clean run could not run is a note, or exit 1 when the policy says `hidden = "required"`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import HIDDEN_REQUIRED
from tools.oracle_gate.errors import GateError, Violation
from tools.oracle_gate.runs.results import Observed
from tools.oracle_gate.spec.judgement import HIDDEN_ABSENT, HIDDEN_FAILED, HIDDEN_PASSED
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.suite.hidden_store import STORE_VARIABLE, fetch, store_folder

POLICY_PATH = "oracles/policy.toml"
# What a failed hidden part says: nothing of the samples (the rationed feedback of threat-model.md).
FAILED_WHY = ("failed on its hidden samples; they are held by the hidden store and not shown (one pass/fail bit "
              "per row per run: docs/oracles.md, \"Hidden samples\")")


@dataclass
class HiddenPlan:
    """The hidden part of one `check`.

    Attributes:
        rows: id -> (oracle file, hidden digest) of every judged row with a `hidden_sha256`.
        blobs: digest -> verified bytes the clean run gets.
        violations: exit-1 lines when the policy requires the hidden samples and they cannot run.
        notes: why some or all hidden parts do not run, when they are optional.
    """

    rows: dict[str, tuple[str, str]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def delivered(self) -> list[str]:
        """The ids whose hidden blob the clean run gets, sorted."""
        return sorted(i for i, (_, digest) in self.rows.items() if digest in self.blobs)


def plan(invariants: Sequence[Invariant], setting: str, environ: Mapping[str, str], repo: str, *,
         clean: bool, remote: bool) -> HiddenPlan:
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
    out = HiddenPlan(rows={inv.id: (inv.source, inv.hidden_sha256) for inv in invariants
                           if inv.hidden_sha256 is not None})
    if not out.rows:
        return out
    required = setting == HIDDEN_REQUIRED
    ids = ", ".join(sorted(out.rows))

    def cannot(why: str) -> HiddenPlan:
        if required:
            out.violations.append(Violation(errors.UNDECIDED, POLICY_PATH, "",
                                            f"hidden = \"required\", but {why}"))
        else:
            out.notes.append(f"hidden samples: not run ({why}): {ids}")
        return out

    def unusable(ident: str, why: str) -> None:
        out.violations.append(Violation(errors.UNDECIDED, POLICY_PATH, ident,
                                        f"hidden samples cannot run: {why}; the store is named, so the gate "
                                        f"does not run without it (unset {STORE_VARIABLE} to skip them)"))

    if not clean:
        out.notes.append(f"hidden samples: clean run only ({ids})")
        return out
    if remote:
        return cannot("the remote clean run does not run hidden samples; run `check --clean` on a sealed local root")
    try:
        folder = store_folder(environ, repo)
    except GateError as exc:
        unusable("", str(exc))
        return out
    if folder is None:
        return cannot(f"{STORE_VARIABLE} is not set")
    fetched = fetch(folder, [digest for _, digest in out.rows.values()])
    out.blobs = fetched.blobs
    for problem in fetched.problems:
        unusable("", problem)
    for ident, (_, digest) in sorted(out.rows.items()):
        if digest in fetched.missing:
            unusable(ident, f"the store {folder} has no file {digest}")
    return out


def judge(hidden: HiddenPlan, clean: Mapping[str, Observed] | None,
          workspace: Mapping[str, Observed]) -> tuple[list[Violation], str]:
    """(violations, detail) of the hidden parts after the runs: exit 4 for each row whose hidden
    part failed in the clean run, naming only the row; exit 1 for one the clean run was given but
    did not judge (its oracle suite did not pick up the blob: `blobs = glob(["blobs/**"])`), or
    that the workspace run judged (it must never hold hidden samples). Raises nothing."""
    found: list[Violation] = []
    for ident in sorted(hidden.rows):
        source = hidden.rows[ident][0]
        seen = workspace.get(ident)
        if seen is not None and seen.hidden not in ("", HIDDEN_ABSENT):
            found.append(Violation(errors.UNDECIDED, source, ident,
                                   f"the workspace run judged hidden samples ({seen.hidden}); only the clean run may hold them"))
    passed = 0
    for ident in hidden.delivered:
        source = hidden.rows[ident][0]
        word = clean.get(ident).hidden if clean is not None and ident in clean else ""  # type: ignore[union-attr]
        if word == HIDDEN_PASSED:
            passed += 1
        elif word == HIDDEN_FAILED:
            found.append(Violation(errors.NO_OUTCOME, source, ident, FAILED_WHY))
        elif clean is not None:
            found.append(Violation(errors.UNDECIDED, source, ident,
                                   "the clean run was given its hidden blob but did not judge it; the oracle suite must "
                                   "take every blob (`blobs = glob([\"blobs/**\"])` in oracles/BUILD.bazel)"))
    if clean is None or not hidden.delivered:
        return found, f"{len(hidden.rows)} row(s) with hidden samples: {HIDDEN_ABSENT}"
    return found, (f"{passed} of {len(hidden.delivered)} row(s) passed their hidden samples in the clean run; "
                   f"the workspace run: {HIDDEN_ABSENT}")
