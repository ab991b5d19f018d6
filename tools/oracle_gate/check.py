"""`check`: every gate check of a change against a base revision (docs/design.md sections 5-7).

What is judged is what would land: the merge result of HEAD into the base tip, with the base tip's
claims (docs/design.md section 11). `run_check` is the table of contents. The inputs are read
from git once (`gather_inputs`); each check is a function of them that returns its `Findings`. The oracle test's outcomes are gathered
(`read_outcomes` from result files, or `run_workspace` with Bazel) apart from being judged:
`check_outcomes`, `check_harness` and `check_clean_run` are pure functions of data, so they can be
tested without Bazel.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.runs.bazel_run import BazelRun, RunSpec, run_bazel
from tools.oracle_gate.runs.hidden_phase import HiddenRun, hidden_phase
from tools.oracle_gate.runs.workspace_seal import workspace_seal
from tools.oracle_gate.runs.blocks import repository_blocks
from tools.oracle_gate import hidden
from tools.oracle_gate.approval.policy import HIDDEN_OPTIONAL, HIDDEN_REQUIRED
from tools.oracle_gate.suite.hidden_store import STORE_VARIABLE
from tools.oracle_gate.runs.flags import run_flags
from tools.oracle_gate.runs.clean_run import clean_run
from tools.oracle_gate.errors import GateError, UsageError, Violation
from tools.oracle_gate.progress import Phases
from tools.oracle_gate.runs.events import BuildFailure, is_oracle_target
from tools.oracle_gate.coverage import (
    NOT_MEASURED_INVALID, NOT_MEASURED_NOT_RUN, NOT_MEASURED_RESULTS, changed_functions, measure, not_read_note,
    uncovered_setting, unread_packages,
)
from tools.oracle_gate.git.gitio import (
    Change, changed_paths, on_first_parent_chain,
)
from tools.oracle_gate.runs.merged_tree import MERGED_TREE_STARTUP, merged_folder, merged_tree
from tools.oracle_gate.suite.loader import Oracles, load_oracles
from tools.oracle_gate.git.objects import Trust
from tools.oracle_gate.approval.change import ChangeApproval, approve_change
from tools.oracle_gate.suite.manifest import manifest_problems, vouch_for_base
from tools.oracle_gate.runs.bazel_binary import wrapper_note
from tools.oracle_gate.runs.bazel_control import control_globs
from tools.oracle_gate.approval.paths import protected_by, special_entry_problem
from tools.oracle_gate.git.attributes import checkout_notes
from tools.oracle_gate.approval.policy import protection
from tools.oracle_gate.runs.results import EXECUTED, PASSED, Observed, differences, load_observed
from tools.oracle_gate.suite.spec_changes import (CHANGELOG_PATH, RowChange, changelog_violations, spec_changes,
                                                  with_reference_code)
from tools.oracle_gate.text import one_line
from tools.oracle_gate.git.tree import Entry, GitTree
from tools.oracle_gate.git.worktree import differences as work_tree_differences

BOOTSTRAP_NOTE = "bootstrap: the base has no oracles/policy.toml; HEAD's policy applies and no id is required"
NOT_RUN = "not run: protected paths changed without the label"
NOT_RUN_WHY = ("protected paths changed without the label, so neither the oracle test nor the harness ran: Bazel "
               "would run the change's own build configuration (WORKSPACE, MODULE.bazel, .bazelrc, repository rules) "
               "outside any sandbox before a human approved it")


@dataclass
class CheckLine:
    """One line of the per-check summary: name, `ok`/`FAIL` (or `NOT RUN`: `ok` and `not_run`, a
    check that fails nothing but did not run), a short detail, and the check's violations (for
    reports that group them by check, such as `--junit`)."""

    name: str
    ok: bool
    detail: str
    violations: tuple[Violation, ...] = ()
    not_run: bool = False

    @property
    def status(self) -> str:
        """The summary's word: `ok`, `FAIL` or `NOT RUN`."""
        return "FAIL" if not self.ok else "NOT RUN" if self.not_run else "ok"


@dataclass(frozen=True)
class Findings:
    """What one check found.

    Attributes:
        name: the check's name in the summary.
        violations: what fails the gate, in report order.
        detail: the summary's detail when there is no violation.
        notes: report lines that do not fail the gate, in report order.
        not_run: with no violation, the check did not run (`NOT RUN` in the summary, not `ok`).
    """

    name: str
    violations: tuple[Violation, ...]
    detail: str
    notes: tuple[str, ...] = ()
    not_run: bool = False


@dataclass
class Report:
    """Everything `check` found; `exit_code` is the lowest violation code, or 0.

    `base_commit` is the base tip; `merged` the commit judged (HEAD itself when it contains the tip
    or with `head_only`, else the merge result the gate made); `claims` the commit whose oracles
    are in force without the label (the tip, or the merge base with `head_only`).
    """

    base: str
    base_commit: str
    merge_base: str
    head: str
    labels: list[str]
    merged: str = ""
    head_only: bool = False
    claims: str = ""
    checks: list[CheckLine] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    invariants: list[str] = field(default_factory=list)
    clean_outcomes: dict[str, str] | None = None
    summaries: dict[str, list[str]] = field(default_factory=dict)
    salt: str = ""
    observed: dict[str, Observed] = field(default_factory=dict)
    clean_observed: dict[str, Observed] | None = None
    clean_boundary: str | None = None
    workspace_boundary: str = ""
    unsealed: str = ""
    spec_changes: list[RowChange] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    phases: Phases = field(default_factory=Phases)
    bazel_log: str = ""
    coverage: dict[str, Any] | None = None
    hidden_not_run: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The lowest code among the violations (docs/design.md section 6), 0 when there are none."""
        return min((v.code for v in self.violations), default=errors.OK)

    @property
    def merge_result(self) -> str:
        """The merge result the gate judged, or "" when it judged HEAD itself."""
        return self.merged if self.merged and self.merged != self.head else ""

    def record(self, found: Findings) -> None:
        """Records one check: its violations, its notes, and a summary line."""
        self.violations.extend(found.violations)
        self.notes.extend(found.notes)
        if found.violations:
            self.checks.append(CheckLine(found.name, False, f"{len(found.violations)} violation(s)", found.violations))
        else:
            self.checks.append(CheckLine(found.name, True, found.detail, not_run=found.not_run))

    def show_outcomes(self, ids: Sequence[str], outcomes: Outcomes) -> None:
        """Records the ids that must have an outcome and what the oracle test reported (shown
        whether or not it is judged), with the notes and the Bazel summary of gathering it."""
        self.invariants = list(ids)
        self.observed = dict(outcomes.observed)
        self.outcomes = {ident: found.outcome for ident, found in outcomes.observed.items()}
        if outcomes.run is not None:
            self.summaries["workspace"] = outcomes.run.summary
            self.workspace_boundary, self.unsealed = outcomes.run.boundary, outcomes.run.unsealed
        self.notes.extend(outcomes.notes)

    def show_clean(self, run: BazelRun) -> None:
        """Records the clean run's per-id results and its Bazel summary."""
        self.clean_observed = run.observed
        self.clean_outcomes = {ident: found.outcome for ident, found in self.clean_observed.items()}
        self.summaries["clean"] = run.summary
        self.clean_boundary = run.boundary


@dataclass(frozen=True)
class Inputs:
    """What the checks judge, read from git once (`gather_inputs`).

    Attributes:
        repo: the work tree's root.
        base: the base revision as given (branch, tag, commit id).
        base_commit: the commit `base` names: the base tip.
        merge_base: the merge base of base_commit and HEAD: the base side of what the change did.
        head: the commit HEAD names.
        merged: the commit judged: HEAD when it contains the base tip (or with `head_only`), else
            the merge result of HEAD into the tip (`gitio.merge_commit`).
        claims: the commit whose claims are in force without the label: the base tip, or the
            merge base with `head_only`.
        head_only: judge HEAD against the merge base, as if the tip had not moved (`--head-only`).
        base_oracles: `oracles/` at the merge base.
        head_oracles: `oracles/` at HEAD; its fix messages name `label`.
        claims_oracles: `oracles/` at `claims`; None when that is the merge base (`in_force`).
        merged_oracles: `oracles/` at `merged`; None when that is HEAD (`judged`).
        label: the label that allows protected changes (`policy.protection`).
        protected: the protected globs (`policy.protection`): the base tip's policy's plus
            HEAD's, the merge base's and the merge result's, the defaults when none is readable,
            and what the Bazel control files of those commits name (`bazel_control.control_globs`).
        labels: the pull request's labels that count (labels.py).
        labelled: `labels` holds `label`, compared case-insensitively (`policy.has_label`).
        changes: every path that differs between the merge base and HEAD.
        head_listing: every file of HEAD.
        base_listing: every file of the merge base.
        head_links: every symlink of HEAD -> its target.
        bootstrap: the base has neither a policy nor an oracle file (no id can be missing).
        merge_changes: every path that differs between `claims` and `merged`, when `merged` is not
            HEAD (what the change would undo of the tip); else empty.
        claims_listing: every file of `claims`.
        merged_listing: every file of `merged`.
        merged_links: every symlink of `merged` -> its target.
        trust: what this run vouches for about blob objects without reading them (the merge base's
            and the tip's manifests and pins, `manifest.vouch_for_base`); the trees below read
            blobs with it, nothing else holds it.
        base_tree, head_tree: the merge base's and HEAD's trees, each built once.
        claims_tree: `claims`' tree; None when that is the merge base (then `base_tree`).
        merged_tree: `merged`'s tree; None when that is HEAD (`judged_tree`).
    """

    repo: str
    base: str
    base_commit: str
    merge_base: str
    head: str
    base_oracles: Oracles
    head_oracles: Oracles
    label: str
    protected: tuple[str, ...]
    labels: frozenset[str]
    labelled: bool
    changes: tuple[Change, ...]
    head_listing: Mapping[str, Entry]
    base_listing: Mapping[str, Entry]
    head_links: Mapping[str, str]
    bootstrap: bool
    trust: Trust
    base_tree: GitTree
    head_tree: GitTree
    merged: str = ""
    claims: str = ""
    head_only: bool = False
    claims_oracles: Oracles | None = None
    merged_oracles: Oracles | None = None
    merge_changes: tuple[Change, ...] = ()
    claims_listing: Mapping[str, Entry] = field(default_factory=dict)
    merged_listing: Mapping[str, Entry] = field(default_factory=dict)
    merged_links: Mapping[str, str] = field(default_factory=dict)
    claims_tree: GitTree | None = None
    merged_tree: GitTree | None = None

    def close_trees(self) -> None:
        """Ends the trees' git processes before Bazel runs the change's code (a later read starts
        a new one), so no reader of this repository's objects outlives the gate's own steps."""
        for tree in (self.base_tree, self.head_tree, self.claims_tree, self.merged_tree):
            if tree is not None:
                tree.close()

    @property
    def judged_tree(self) -> GitTree:
        """The tree judged: the merge result's, or HEAD's."""
        return self.merged_tree if self.merged_tree is not None else self.head_tree

    @property
    def judged(self) -> Oracles:
        """The oracles judged: the merge result's (HEAD's when HEAD is what is judged)."""
        return self.merged_oracles if self.merged_oracles is not None else self.head_oracles

    @property
    def in_force(self) -> Oracles:
        """The claims in force without the label: the base tip's (`claims_oracles`)."""
        return self.claims_oracles if self.claims_oracles is not None else self.base_oracles

    @property
    def is_merge(self) -> bool:
        """True when the commit judged is a merge result the gate made, not HEAD."""
        return bool(self.merged) and self.merged != self.head

    @property
    def judged_commit(self) -> str:
        """The commit judged: the merge result, or HEAD."""
        return self.merged or self.head

    @property
    def oracles_commit(self) -> str:
        """Whose `oracles/` the clean run uses: the merge result's for a labelled change (the
        change's own edits merged with the tip's), else the claims commit's (the tip's)."""
        if self.labelled:
            return self.judged_commit
        return self.claims or self.merge_base


@dataclass(frozen=True)
class Outcomes:
    """The oracle test's per-id results, however they were gathered (`read_outcomes`, `run_workspace`).

    Attributes:
        observed: id -> what the oracle test reported.
        source: where they came from, for messages: `N result file(s)` or `the oracle test`.
        notes: report lines about gathering them: ignored testcases, a work tree that differs from HEAD.
        run: the workspace run when the gate ran Bazel; None when the operator gave result files.
    """

    observed: Mapping[str, Observed]
    source: str
    notes: tuple[str, ...] = ()
    run: BazelRun | None = None


WorkspaceRunner = Callable[[str, Mapping[str, str]], BazelRun]
# (repo, head, oracles_commit, environ, remote, paths to block) -> the clean run's outcomes.
CleanRunner = Callable[[str, str, str, Mapping[str, str], bool, Sequence[str]], BazelRun]


def run_check(
    repo: str,
    base: str,
    *,
    results: Sequence[str] = (),
    labels: Collection[str] = (),
    environ: Mapping[str, str] | None = None,
    clean: bool = False,
    remote: bool = False,
    salt: str = "",
    workspace_runner: WorkspaceRunner | None = None,
    clean_runner: CleanRunner | None = None,
    verify_all: bool = False,
    head_only: bool = False,
    unsealed_workspace: bool = False,
) -> Report:
    """Runs every gate check of the change HEAD against `base`: on the merge result of HEAD into
    the base tip, with the tip's claims, unless HEAD already contains the tip or `head_only`.

    Args:
        repo: the work tree's root.
        base: a revision (branch, tag, commit id).
        results: JUnit XML files or Bazel test-log directories; when empty, the oracle test and the
            harness are run with `bazel test //oracles/... //harness/...`.
        labels: the pull request's labels that count (labels.py).
        environ: the environment, passed to Bazel when it runs the harness (default: os.environ).
        clean: also run on a pristine tree (clean_run.py) and require the same id -> outcome and
            observation digest as the workspace run (exit 6 otherwise).
        remote: run the clean run through `--config=remote` (REAPI).
        salt: the run salt for generated samples, the same for both runs.
        workspace_runner: how to do the workspace run (default: `default_workspace_runner(salt)`; tests
            substitute it).
        clean_runner: how to do the clean run (default: `default_clean_runner(salt)`).
        verify_all: hash and parse every HEAD blob, even those the merge base pinned the same way.
        head_only: judge HEAD against the merge base, as if the base had not moved since the
            change branched (local use; the report says so).
        unsealed_workspace: run the workspace run on the host, without its sealed root
            (runs/workspace_seal.py), for a host that cannot make one; the report's first line says so.

    Raises:
        GateError: (exit 1) when the gate cannot decide: git errors, a change that does not merge
            cleanly into the base tip (`gitio.MergeConflict`), an invalid base policy, unreadable
            results or results given for a HEAD that is not what is judged, a work tree that
            differs from HEAD (without `results` or `clean`, when HEAD is judged), Bazel missing.
    """
    env = os.environ if environ is None else environ
    phases = Phases()
    with phases.phase("reading the commits"):
        inputs = gather_inputs(repo, base, labels, verify_all=verify_all, head_only=head_only)
    report = _judge_change(inputs, env, results=results, clean=clean, remote=remote, salt=salt,
                           workspace_runner=workspace_runner or default_workspace_runner(
                               salt, inputs.repo, salted_files(inputs), unsealed_workspace),
                           clean_runner=clean_runner, phases=phases)
    report.phases = phases
    return report


def _judge_change(inputs: Inputs, env: Mapping[str, str], *, results: Sequence[str], clean: bool, remote: bool,
                  salt: str, workspace_runner: WorkspaceRunner | None, clean_runner: CleanRunner | None,
                  phases: Phases) -> Report:
    """`run_check` once its inputs are read: checks 1-4 on the commits, 5 and 6 on what ran (unless
    protected paths changed unapproved), then the spec-change report and the changelog rule."""
    report = Report(inputs.base, inputs.base_commit, inputs.merge_base, inputs.head, sorted(inputs.labels),
                    merged=inputs.merged, head_only=inputs.head_only, claims=inputs.claims, salt=salt)
    report.notes.append(judged_note(inputs))
    if inputs.is_merge and results:
        raise GateError(f"the results are of HEAD {inputs.head[:12]}, which does not contain the base tip "
                        f"{inputs.base_commit[:12]}: what would land is their merge, so results of HEAD do not "
                        "speak for it", fix="update the branch onto the base tip and run again, let the gate run "
                        "Bazel itself (no --results), or pass --head-only")
    if inputs.bootstrap:
        report.notes.append(BOOTSTRAP_NOTE)
    report.phases = phases
    # 1-4: the commits alone.
    with phases.phase("commit checks"):
        protected = check_protected_paths(inputs)
        report.record(protected)
        report.record(check_oracle_files(inputs))
        report.record(check_manifest(inputs))
        report.record(check_ids_kept(inputs))

    if protected.violations and not results:
        # Bazel runs a change's WORKSPACE, MODULE.bazel, .bazelrc and repository rules outside any
        # sandbox, as the CI user: the gate runs nothing of a change whose protected paths no human
        # approved. Exit 2 is already lower than any code checks 5 and 6 could add.
        report.checks.append(CheckLine("invariant outcomes", False, NOT_RUN))
        report.notes.append(f"not run: {NOT_RUN_WHY}")
        record_coverage(report, inputs, None)
    else:
        _run_and_judge(report, inputs, env, results=results, clean=clean, remote=remote, salt=salt,
                       workspace_runner=workspace_runner, clean_runner=clean_runner)

    # The spec-change report, and the changelog rule of a labelled change that weakens a claim;
    # not while HEAD's oracle files are invalid (their rows are unknown, not removed: check 2 fails).
    # Annotations point at HEAD's rows (what the change's diff shows), else at the merge result's.
    report.sources = {inv.id: inv.source for inv in (*inputs.judged.invariants, *inputs.head_oracles.invariants)}
    if inputs.head_oracles.problems:
        if inputs.changes and any(c.path.startswith("oracles/") for c in inputs.changes):
            report.notes.append("spec changes: not listed while HEAD's oracle files are invalid")
        return report
    report.spec_changes = spec_changes(inputs.base_oracles, inputs.head_oracles,
                                       blob_reader(inputs.base_tree, inputs.base_listing),
                                       blob_reader(inputs.head_tree, inputs.head_listing))
    report.spec_changes = with_reference_code(report.spec_changes, inputs.head_oracles,
                                              [c.path for c in inputs.changes])
    if inputs.labelled and any(c.weakens for c in report.spec_changes):
        report.record(check_changelog(inputs, report.spec_changes))
    return report


def _run_and_judge(report: Report, inputs: Inputs, env: Mapping[str, str], *, results: Sequence[str], clean: bool,
                   remote: bool, salt: str, workspace_runner: WorkspaceRunner | None,
                   clean_runner: CleanRunner | None) -> None:
    """Checks 5 and 6 into `report`: the oracle test's outcomes (result files, or the workspace
    run) and the harness, judged; with `clean`, the clean run compared with the workspace run."""
    # The stricter `hidden` of the policies in force and judged, as for `uncovered_changes`.
    settings = [o.policy.hidden for o in (inputs.in_force, inputs.judged) if o.policy is not None]
    hidden_plan = hidden.plan(inputs.judged.invariants, HIDDEN_REQUIRED if HIDDEN_REQUIRED in settings else HIDDEN_OPTIONAL,
                              env, inputs.repo, clean=clean and not results, remote=remote)
    salted = salted_files(inputs)
    if results:
        outcomes = read_outcomes(results)
    else:
        with report.phases.phase("workspace run", announce=True):
            outcomes = run_workspace(inputs, workspace_runner or default_workspace_runner(salt, inputs.repo, salted), env,
                                     clean=clean)
    report.show_outcomes(expected_ids(inputs.judged), outcomes)
    judged = check_outcomes(inputs, outcomes, salt=salt)
    harness = check_harness(outcomes.run) if outcomes.run is not None else None
    # Invalid oracles (check 2) void the outcome and harness checks: their violations become notes.
    judged, harness = withhold_while_invalid(inputs, judged, harness)
    report.record(judged)
    if harness is not None:
        report.record(harness)
    record_coverage(report, inputs, outcomes)

    # 6: the clean run, which reads the workspace run: what it blocked, its outcomes and targets.
    not_set_up = outcomes.run is not None and outcomes.run.failure is not None and outcomes.run.failure.setup
    if clean and not_set_up:
        report.notes.append("clean run: not run, the workspace run could not be set up"
                            if oracle_refusal(outcomes.run.failure) is None else "clean run: not run, the oracles did not build")
    elif clean and hidden_plan.violations:
        report.notes.append("clean run: not run, it cannot be given the hidden samples its rows name (see `hidden samples`)")
        record_hidden(report, hidden_plan, None, outcomes.observed)
    elif clean:
        try:
            with report.phases.phase("clean run", announce=True):
                run = run_clean(inputs, clean_runner or default_clean_runner(salt, salted), env,
                                remote=remote, workspace=outcomes.run)
        except GateError as exc:
            # The workspace run's findings stay in the report; the clean run's reason is its one line.
            if exc.code != errors.UNDECIDED:
                raise
            report.record(Findings("clean run", (Violation(errors.UNDECIDED, "bazel", "", f"the clean run could not run: {exc}"),),
                                   ""))
            return
        report.show_clean(run)
        report.record(check_clean_run(outcomes, run, labelled=inputs.labelled, remote=remote, salt=salt))
        words, problems = run_hidden(report, inputs, hidden_plan, env, outcomes.run)
        record_hidden(report, hidden_plan, words, {**outcomes.observed, **run.observed}, problems)
    else:
        record_hidden(report, hidden_plan, None, outcomes.observed)


def run_hidden(report: Report, inputs: Inputs, plan: hidden.HiddenPlan, env: Mapping[str, str],
               workspace: BazelRun | None) -> tuple[dict[str, str] | None, list[Violation]]:
    """The hidden phase (runs/hidden_phase.py), when the plan delivered any hidden blob: the gate
    splits the blobs (`hidden.views`), the phase runs the inputs, the gate judges the observations
    (`hidden.words`). Returns (id -> word, or None when it did not run; violations: an invalid
    hidden blob (exit 5), a planted path or an unsandboxed spawn in the phase (exit 4, every
    delivered row), a phase that could not run (exit 1)). Nothing returned quotes a sample."""
    if not plan.delivered:
        return None, []
    oracles = inputs.judged
    packages = oracles.policy.production_packages if oracles.policy is not None else None
    inputs_view, expectations, invalid = hidden.views(plan, packages)
    if invalid:
        return None, invalid
    guarded = [*(workspace.blocked if workspace is not None else []), *plan.guarded]
    try:
        with report.phases.phase("hidden phase", announce=True):
            ran = default_hidden_runner(inputs.repo, inputs.judged_commit, inputs.oracles_commit, inputs_view, env,
                                        guarded=guarded)
    except GateError as exc:
        if exc.code != errors.UNDECIDED:
            raise
        return None, [Violation(errors.UNDECIDED, hidden.POLICY_PATH, "", f"the hidden phase could not run: {exc}")]
    report.summaries["hidden"] = ran.summary
    why = ran.planted or (f"a spawn ran outside Bazel's sandbox: {ran.escaped[0]}" if ran.escaped else "")
    if why:
        return None, [Violation(errors.NO_OUTCOME, plan.rows[ident][0], ident,
                                f"the hidden phase refused what the change's code left: {why} (docs/oracles.md, "
                                "\"Hidden samples\")") for ident in plan.delivered]
    return hidden.words(expectations, ran.observations), []


def default_hidden_runner(repo: str, head: str, oracles_commit: str, inputs_view: Mapping[str, object],
                          environ: Mapping[str, str], *, guarded: Sequence[str]) -> HiddenRun:
    """The hidden phase itself (`hidden_phase.hidden_phase`); tests substitute it."""
    return hidden_phase(repo, head, oracles_commit, inputs_view, environ, guarded=guarded)


def record_hidden(report: Report, plan: hidden.HiddenPlan, words: Mapping[str, str] | None,
                  observed: Mapping[str, Observed], problems: Sequence[Violation] = ()) -> None:
    """The `hidden samples` check of the rows with a `hidden_sha256` (hidden.py), when any: what the
    store could not give (exit 1 when required, else notes), what stopped the hidden phase
    (`problems`), and each hidden part the phase failed (exit 4, naming only the row)."""
    if not plan.rows:
        return
    judged = None if problems else words
    found, detail = hidden.judge(plan, judged, observed)
    report.hidden_not_run = sorted(set(plan.rows) - set(plan.delivered))
    report.record(Findings("hidden samples", (*plan.violations, *problems, *found), detail, tuple(plan.notes),
                           not_run=bool(report.hidden_not_run) and not plan.delivered))


# Inputs.

def gather_inputs(repo: str, base: str, labels: Collection[str], *, verify_all: bool = False,
                  head_only: bool = False) -> Inputs:
    """Reads from git everything the checks judge.

    What is judged is the merge result of HEAD into the base tip (docs/design.md section 11): HEAD
    itself when it contains the tip (a branch that is up to date, or a merge commit the CI checked
    out), else a merge commit the gate writes (`gitio.merge_commit`; no ref, index or work tree
    changes). The claims in force are the tip's; what the change did is read against the merge base.
    The approval step is `clean-run`'s too (`approval.change.approve_change`); the base side's blobs
    are vouched for, not read (`_base_side`, docs/design.md section 4, "Which blobs are hashed").

    Args:
        repo: the work tree's root.
        base: a revision (branch, tag, commit id).
        labels: the pull request's labels that count.
        verify_all: hash and parse every judged blob, vouching for nothing of the base.
        head_only: judge HEAD against the merge base (the claims are the merge base's).

    Raises:
        GitError: (exit 1) grafts or replace refs, an unknown base, no merge base, a change that
            does not merge cleanly into the tip (`gitio.MergeConflict`) (gitio.py).
        GateError: (exit 1) when the base tip's policy is invalid: nothing then says what is
            protected.
    """
    # This run's trust: made here, filled from the base side, held by the Inputs and gone with them.
    trust = Trust()
    approval = approve_change(repo, base, labels, trust, head_only=head_only)
    judged, head = approval.judged, approval.head
    mb, merged, claims = judged.merge_base, judged.commit, judged.claims
    base_tree, base_oracles, claims_tree, claims_oracles = _base_side(repo, approval, trust, verify_all)
    # Entries are judged by HEAD's policy, as the build's pin check does (a labelled change may add
    # a package with its rows); fix messages name the label in force (policy.label_name).
    label_in_force = approval.claims_policy.label if approval.claims_policy else None
    head_tree = approval.head_tree
    head_oracles = load_oracles(head_tree, label=label_in_force)
    merged_tree, merged_oracles = head_tree, head_oracles
    if merged != head:
        merged_tree = GitTree(repo, merged, trust)
        merged_oracles = load_oracles(merged_tree, label=label_in_force)
    trees = {mb: base_tree, head: head_tree, claims: claims_tree, merged: merged_tree}
    listings = {commit: tree.files("") for commit, tree in trees.items()}
    return Inputs(
        repo=repo, base=base, base_commit=approval.base_commit, merge_base=mb, head=head,
        base_oracles=base_oracles, head_oracles=head_oracles, label=approval.label,
        protected=_protected_globs(approval, (base_oracles, merged_oracles), trees, listings),
        labels=frozenset(labels), labelled=approval.labelled,
        changes=tuple(changed_paths(repo, mb, head)),
        head_listing=listings[head], base_listing=listings[mb], head_links=head_tree.symlinks(listings[head]),
        bootstrap=claims_oracles.policy is None and not claims_oracles.files,
        merged=merged, claims=claims, head_only=head_only,
        claims_oracles=claims_oracles if claims != mb else None,
        merged_oracles=merged_oracles if merged != head else None,
        merge_changes=tuple(changed_paths(repo, claims, merged)) if merged != head else (),
        claims_listing=listings[claims], merged_listing=listings[merged],
        merged_links=merged_tree.symlinks(listings[merged]) if merged != head else {},
        trust=trust, base_tree=base_tree, head_tree=head_tree,
        claims_tree=claims_tree if claims != mb else None,
        merged_tree=merged_tree if merged != head else None,
    )


def _base_side(repo: str, approval: ChangeApproval, trust: Trust,
               verify_all: bool) -> tuple[GitTree, Oracles, GitTree, Oracles]:
    """(merge base tree, its oracles, claims tree, its oracles), read without verifying blobs, and
    what each vouches for in `trust` (`manifest.vouch_for_base`) unless `verify_all`: the tip
    always, the merge base when it is on the base branch's first-parent chain."""
    mb, claims = approval.judged.merge_base, approval.judged.claims
    base_tree = approval.claims_tree if claims == mb else GitTree(repo, mb, trust)
    base_oracles = load_oracles(base_tree, verify_blobs=False)
    claims_tree, claims_oracles = base_tree, base_oracles
    if claims != mb:
        claims_tree = approval.claims_tree
        claims_oracles = load_oracles(claims_tree, verify_blobs=False)
    if not verify_all:
        # Only a commit the base branch itself pointed at passed the gate; a merge base inside a
        # merged branch (the change forked from another pull request) vouches for nothing.
        if on_first_parent_chain(repo, approval.base_commit, mb):
            vouch_for_base(base_tree, base_oracles, trust)
        if claims != mb:
            vouch_for_base(claims_tree, claims_oracles, trust)
    return base_tree, base_oracles, claims_tree, claims_oracles


def _protected_globs(approval: ChangeApproval, others: Sequence[Oracles], trees: Mapping[str, GitTree],
                     listings: Mapping[str, Mapping[str, Entry]]) -> tuple[str, ...]:
    """The protected globs (`Inputs.protected`): the policy in force's plus HEAD's
    (`policy.protection`), the merge base's and the merge result's (`others`), and the files the
    Bazel control files of each commit make Bazel read or run before any sandbox exists (an rc
    file's imports, the .bzl files WORKSPACE loads), protected like those files."""
    _, protected = protection(approval.claims_policy, approval.head_policy)
    for oracles in others:
        if oracles.policy:
            protected += oracles.policy.protected
    for commit, tree in trees.items():
        protected += control_globs(tree, listings[commit])
    return tuple(dict.fromkeys(protected))


def judged_note(inputs: Inputs) -> str:
    """The report line that says what was judged and whose claims are in force."""
    tip, mb, head = inputs.base_commit[:12], inputs.merge_base[:12], inputs.head[:12]
    if inputs.head_only:
        return (f"judged: HEAD {head} with the merge base {mb}'s claims (--head-only); the base tip {tip} "
                "was not merged, so rows and code it gained since are not judged")
    claims = ("the oracles of the change (labelled), merged with the base tip's" if inputs.labelled
              else "the base tip's claims")
    if inputs.is_merge:
        return (f"judged: the merge result {inputs.merged[:12]} of HEAD {head} into the base tip {tip} "
                f"(merge base {mb}), with {claims}; a green result holds for this tip only")
    return f"judged: HEAD {head}, which contains the base tip {tip}, with {claims}"


def expected_ids(head: Oracles) -> list[str]:
    """The ids that must have a passing outcome: HEAD's valid rows, or, when no row is valid, every
    id HEAD declares (so that invalid oracles still show what the results say of them)."""
    return sorted(inv.id for inv in head.invariants) or sorted(head.declared_ids)


# 1-4: the checks of the commits alone.

def check_protected_paths(inputs: Inputs) -> Findings:
    """Exit 2 for each changed path that touches protected content (`protected_changes`), unless
    the change carries the label; then a note counts them (docs/design.md section 5). A note also
    names each checkout conversion the judged commit's `.gitattributes` files ask for
    (`attributes.checkout_notes`, docs/design.md section 3).

    Changed means changed by the change (merge base -> HEAD) or, when the merge result is judged,
    between the base tip and the merge result (what landing the change would undo of the tip)."""
    hits = [(change, why, "") for change, why in
            protected_changes(inputs.changes, inputs.protected, inputs.head_listing, inputs.base_listing,
                              inputs.head_links)]
    if inputs.merge_changes:
        seen = {change.path for change, _, _ in hits}
        hits += [(change, why, " in the merge result against the base tip") for change, why in
                 protected_changes(inputs.merge_changes, inputs.protected, inputs.merged_listing,
                                   inputs.claims_listing, inputs.merged_links)
                 if change.path not in seen]
    label = inputs.label
    if inputs.labelled:
        found: tuple[Violation, ...] = ()
    else:
        found = tuple(Violation(errors.PROTECTED_PATH, change.path, "",
                                f"{why} and changed ({change.status}){where} without the {label!r} label")
                      for change, why, where in hits)
    shown = inputs.labelled and bool(hits)
    return Findings(
        "protected paths", found,
        f"{len(inputs.changes)} changed path(s), {len(hits)} protected" + (f", label {label!r} present" if shown else ""),
        ((f"{len(hits)} protected path(s) changed under the {label!r} label",) if shown else ())
        + checkout_notes(inputs.judged_tree, inputs.merged_listing),
    )


def check_oracle_files(inputs: Inputs) -> Findings:
    """Exit 5 for each problem of the judged policy, oracle files and blob pins (loader.py): HEAD's,
    or the merge result's when that is judged."""
    head = inputs.judged
    return Findings("oracle files", tuple(Violation.from_error(p) for p in head.problems),
                    f"{len(head.files)} file(s), {len(head.invariants)} invariant(s), every blob matches its pin")


def check_manifest(inputs: Inputs) -> Findings:
    """Exit 5 when the judged commit's manifest is not current (manifest.py): HEAD's, or the merge
    result's (both sides added oracle files: update the branch and regenerate it)."""
    problems = manifest_problems(inputs.judged_tree, label=inputs.label)
    return Findings("manifest", tuple(Violation.from_error(p) for p in problems), "current")


RETIRE_HINT = (f"to retire a row on purpose, add a [[retired]] entry (id, reason, since) under the label and a line "
               f"in {CHANGELOG_PATH} naming the id (docs/oracles.md, \"Retiring a row\")")


def check_ids_kept(inputs: Inputs) -> Findings:
    """Exit 3 for each id the base declares and HEAD neither declares nor retires (a `[[retired]]`
    entry), and for each retired id whose entry HEAD dropped (a retired id stays retired); when the
    merge result is judged, the same for the base tip against the merge result, and exit 3 for each
    row the tip added or changed since the merge base that the merge result does not hold as the
    tip does. Exit 5 for a new `[[retired]]` entry whose id the base never declared.

    A file that cannot be read at all hides its ids: those are undecided (a note names them), and
    the file's own exit-5 problem already fails the gate.
    """
    found, undecided = _dropped(inputs.base_oracles, inputs.head_oracles,
                                f"present at the base, missing at HEAD; {RETIRE_HINT}")
    detail = f"{len(inputs.base_oracles.declared_ids)} at base, {len(inputs.head_oracles.declared_ids)} at HEAD"
    known = inputs.base_oracles.declared_ids | set(inputs.base_oracles.retired)
    if inputs.is_merge:
        tip, merged = inputs.in_force, inputs.judged
        more, more_undecided = _dropped(tip, merged, "present at the base tip, missing in the merge result")
        seen = {v.id for v in found}
        found += [v for v in more if v.id not in seen]
        undecided |= more_undecided
        found += _tip_rows_lost(inputs.base_oracles, tip, merged, skip={v.id for v in found} | undecided)
        detail += f", {len(tip.declared_ids)} at the base tip, {len(merged.declared_ids)} in the merge result"
        known |= tip.declared_ids | set(tip.retired)
    for ident, entry in sorted(inputs.judged.retired.items()):
        if ident not in known:
            found.append(Violation(errors.INVALID_ORACLE, entry.source, ident,
                                   "retires an id the base never declared; only a row the base has can be retired "
                                   "(remove the [[retired]] entry)"))
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
    undecided = ({i for f in before.files if f.path in unreadable for i in f.declared_ids}
                 | {e.id for f in before.files if f.path in unreadable for e in f.retired})
    undecided -= after.declared_ids | retired
    missing = sorted(before.declared_ids - after.declared_ids - retired - undecided)
    found = [Violation(errors.MISSING_ID, "oracles/", i, why) for i in missing]
    for ident in sorted(set(before.retired) - retired - undecided):
        found.append(Violation(errors.MISSING_ID, before.retired[ident].source, ident,
                               "retired before this change, and its [[retired]] entry is gone; a retired id stays "
                               "retired: restore the entry"))
    return found, undecided


def blob_reader(tree: GitTree, listing: Mapping[str, Entry]) -> Callable[[str], bytes | None]:
    """Reads a blob of `tree` by repository path (`spec_changes.BlobReader`): its bytes, or None
    when `listing` has no regular file there. Raises GateError (exit 1) when git cannot read it."""
    def read(path: str) -> bytes | None:
        entry = listing.get(path)
        return tree.read(entry) if entry is not None and entry.is_regular else None
    return read


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
        found.append(Violation(errors.MISSING_ID, change.source, change.id,
                               f"the base tip added or changed this row since the merge base, and the merge result "
                               f"holds it otherwise ({fields or change.status}); update the branch and keep the "
                               "tip's row"))
    return found


# 5: gathering the oracle test's outcomes.

def read_outcomes(result_paths: Sequence[str]) -> Outcomes:
    """The outcomes the operator gave: JUnit XML files or Bazel test-log directories (results.py).

    Raises:
        GateError: (exit 1) for a missing or unreadable file, malformed XML, or a test-log
            directory whose layout the gate does not understand.
    """
    results = load_observed(result_paths)
    notes = tuple(f"ignored [<id>] testcases of {path} (not an oracle test target): {', '.join(ids)}"
                  for path, ids in results.ignored.items())
    return Outcomes(results.observed, f"{len(result_paths)} result file(s)", notes)


def run_workspace(inputs: Inputs, runner: WorkspaceRunner, environ: Mapping[str, str], *, clean: bool) -> Outcomes:
    """The workspace run: the oracle test and the harness in the work tree (`runner`), or, when
    the merge result is judged, in the gate's own checkout of it (merged_tree.py).

    Without `clean`, the work tree must be HEAD (`require_clean_work_tree`). With it, the clean run
    tests HEAD's committed bytes and the workspace run the work tree as it is; any difference in
    outcomes is the coupling the merge rule rejects (exit 6), and a note says the trees differ.
    A merge result is committed content only: the work tree plays no part.

    Raises:
        GateError: (exit 1) for a work tree that differs from HEAD (without `clean`, when HEAD is
            judged), when the merge result's checkout cannot be written, or when Bazel cannot run.
    """
    if inputs.is_merge:
        inputs.close_trees()
        with merged_tree(inputs.repo, inputs.merged, inputs.oracles_commit, environ) as tree:
            notes = [f"workspace run: in the gate's checkout of the merge result ({tree}), not in the work tree"]
            wrapper = wrapper_note(tree)
            if wrapper:
                notes.append(wrapper)
            run = _run_or_not_set_up(runner, tree, environ)
        return _workspace_outcomes(run, notes)
    notes = []
    head_tree = inputs.head_tree
    if clean:
        dirty = work_tree_differences(inputs.repo, head_tree)
        if dirty:
            notes.append(f"the work tree differs from HEAD ({len(dirty)} path(s), e.g. {dirty[0]}); "
                         "the clean run tests HEAD")
    else:
        require_clean_work_tree(inputs.repo, head_tree)
    wrapper = wrapper_note(inputs.repo)
    if wrapper:
        notes.append(wrapper)
    inputs.close_trees()
    return _workspace_outcomes(_run_or_not_set_up(runner, inputs.repo, environ), notes)


def _run_or_not_set_up(runner: WorkspaceRunner, tree: str, environ: Mapping[str, str]) -> BazelRun:
    """`runner(tree, environ)`, or, when it cannot run (GateError, exit 1: Bazel missing, crashing
    or refusing its command line, a path it cannot block), a run that was not set up with that
    error as its root cause, so the report of the commit checks is still printed. A UsageError
    (a tree under `/tmp`: workspace_seal.py) is raised as it is: the one line says what to change."""
    try:
        return runner(tree, environ)
    except GateError as exc:
        if exc.code != errors.UNDECIDED or isinstance(exc, UsageError):  # the caller's to fix: one line
            raise
        return BazelRun(build_failed=True, failure=BuildFailure(True, "", str(exc)))


def _workspace_outcomes(run: BazelRun, notes: list[str]) -> Outcomes:
    """The workspace run's outcomes, with a note per target outside the oracles package that
    reported `[<id>]` testcases."""
    notes.extend(f"ignored [<id>] testcases of {label} (not an oracle test target): {', '.join(ids)}"
                 for label, ids in run.ignored.items())
    return Outcomes(run.observed, "the oracle test", tuple(notes), run)


def salted_files(inputs: Inputs) -> frozenset[str]:
    """The oracle files (repository-relative paths) with a row that draws generated samples, in any
    `oracles/` a run of this check may build: HEAD's, the judged commit's and the claims in force.
    Only their suites get the run salt (`flags.run_flags`); a suite left out fails its draw should
    one of its rows draw after all (actions/draw.py `--unsalted`)."""
    found = (inputs.head_oracles, inputs.judged, inputs.in_force)
    return frozenset(inv.source for oracles in found for inv in oracles.invariants if inv.generate is not None)


def default_workspace_runner(salt: str, repo: str, salted: frozenset[str] | None = None,
                             accept_unsealed: bool = False) -> WorkspaceRunner:
    """The workspace run: `bazel test` of the oracle test and the harness in a tree (the work tree
    of `repo`, or the gate's checkout of the merge result), its Bazel server in a sealed root
    (runs/workspace_seal.py: the tree, one persistent folder of the gate and the system directories;
    no hidden store, other clone or home of the host), with the tree's `oracles/` and the
    repository's git directories blocked from sandboxed actions (`blocks.repository_blocks`).
    Only the suites of the `salted` files get the salt (`salted_files`; None: every suite).
    `accept_unsealed`: run on the host without the root (`check --unsealed-workspace`; the report
    says so)."""

    def run(tree: str, environ: Mapping[str, str]) -> BazelRun:
        guarded = repository_blocks(repo)
        oracles = os.path.realpath(os.path.join(tree, "oracles"))
        store = environ.get(STORE_VARIABLE, "")
        if store and os.path.isdir(store):  # the hidden store: never shown, and blocked when unsealed
            guarded.append(os.path.realpath(store))
        merged = os.path.realpath(tree) != os.path.realpath(repo)
        folder = os.path.dirname(os.path.realpath(tree)) if merged else None
        shown = [g for g in guarded if g != oracles]
        block = list(dict.fromkeys([*guarded, oracles]))
        with workspace_seal(tree, repo, folder, environ, shown, accept_unsealed=accept_unsealed) as seal:
            if seal.root is None:  # --unsealed-workspace: on the host, as before the seal
                found = run_bazel(tree, environ, RunSpec(flags=run_flags(salt, "workspace", salted),
                                                         startup_flags=list(MERGED_TREE_STARTUP) if merged else [],
                                                         block=block))
                return replace(found, unsealed=seal.unsealed)
            if seal.kept is not None and seal.kept.unclean():  # the last check was killed as it ran
                seal.discard()
            try:
                found = run_bazel(tree, seal.env, RunSpec(flags=run_flags(salt, "workspace", salted),
                                                          startup_flags=list(seal.startup), block=block,
                                                          sealed_root=seal.root, exact_env=True, one_server=True,
                                                          kept=seal.kept))
            except BaseException:
                seal.discard()
                raise
            if found.collected:  # what the trick took
                seal.discard()
            return found

    return run


def require_clean_work_tree(repo: str, head: GitTree) -> None:
    """Refuses to run the harness on a work tree that differs from HEAD (see worktree.py).

    Raises:
        GateError: (exit 1) naming the first differing paths.
    """
    found = work_tree_differences(repo, head)
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise GateError(
            f"the work tree differs from HEAD: {shown}; check judges HEAD, so commit, stash or remove "
            "these, or pass --results with the outcomes of a run of HEAD"
        )


# 5: judging them (pure functions of data).

def check_outcomes(inputs: Inputs, outcomes: Outcomes, *, salt: str = "") -> Findings:
    """Exit 4 for each expected id (`expected_ids`) without a passing outcome, and first for a
    workspace run that did not build; a note names ids the results report but no oracle declares.

    A failure names the result file it was read from when the operator gave the results, and the
    salt of the run's generated samples when there is one.
    """
    ids = expected_ids(inputs.judged)
    sources = {inv.id: inv.source for inv in inputs.judged.invariants}
    observed = outcomes.observed
    from_files = outcomes.run is None
    found: list[Violation] = []
    if outcomes.run is not None and outcomes.run.build_failed:
        failed = build_violation(outcomes.run, "workspace run", [c.path for c in inputs.changes])
        if failed.code in (errors.UNDECIDED, errors.INVALID_ORACLE):
            # Nothing of the change was judged: no id is the change's failure.
            why = "the run was not set up" if failed.code == errors.UNDECIDED else "the oracles did not build"
            return Findings("invariant outcomes", (failed,), f"0 of {len(ids)} invariant(s) judged: {why}")
        found.append(failed)
    for ident in ids:
        result = observed.get(ident)
        where = sources.get(ident, "oracles/")
        if result is None:
            found.append(Violation(errors.NO_OUTCOME, where, ident,
                                   f"no outcome in {outcomes.source}; the oracle test must run it"))
        elif result.outcome not in EXECUTED:
            found.append(Violation(errors.NO_OUTCOME, where, ident,
                                   f"{result.outcome}, not executed; that is not coverage{_origin(result, from_files)}"))
        elif result.outcome != PASSED:
            why = result.message
            found.append(Violation(errors.NO_OUTCOME, where, ident, "failed: the invariant does not hold"
                                   + (f": {one_line(why)}" if why else "") + _origin(result, from_files)
                                   + (f" (salt {salt})" if salt else "")))
    unknown = sorted(set(observed) - set(ids))
    passed = sum(1 for i in ids if i in observed and observed[i].outcome == PASSED)
    return Findings("invariant outcomes", tuple(found), f"{passed} of {len(ids)} invariant(s) passed ({outcomes.source})",
                    (f"results name ids no oracle declares: {', '.join(unknown)}",) if unknown else ())


def build_violation(run: BazelRun, where: str, changed: Sequence[str] = ()) -> Violation:
    """The violation of a run that did not build (`run.build_failed`): exit 5 when the gate's own
    targets refused the oracles (`oracle_refusal`); exit 1 when the cause is not
    the change's (`BazelRun.failure.setup`: an external repository that cannot be fetched, Bazel
    ending early, the gate's own targets), naming the root cause and Bazel's first real error line;
    else exit 4, the change's targets did not build. An external repository whose error names a
    file the change modified (`changed`, repository-relative paths; by path or as a label, such as
    a lock file its repository rule refused) is the change's too: Bazel's events do not say which
    files a repository rule read, its error message does."""
    failure = run.failure
    refused = oracle_refusal(failure)
    if refused is not None:
        return refused
    cause = failure.line() if failure is not None else "see Bazel's output"
    named = [path for path in changed if failure is not None and failure.label.startswith("@")
             and _names_path(failure.message, path)]
    if failure is not None and failure.setup and named:
        return Violation(errors.NO_OUTCOME, named[0], "", f"the change's {named[0]} breaks external repository "
                         f"{failure.label} in the {where}: {failure.message}")
    if failure is not None and failure.setup:
        return Violation(errors.UNDECIDED, "bazel", "", f"the {where} could not be set up, not the change's doing: {cause}; "
                         "fix the environment (network, toolchains, the base's WORKSPACE or MODULE.bazel) and run again")
    package = failure.label[2:].split(":", 1)[0] if failure is not None and failure.label.startswith("//") else ""
    hint = "" if failure is not None and failure.message else \
        " (an action or test that cannot run sandboxed, e.g. tagged local or no-sandbox, fails too)"
    return Violation(errors.NO_OUTCOME, f"{package}/" if package else "oracles/", "",
                     f"the change's targets did not build in the {where}: {cause}{hint}")


# How the gate's actions and rules start an exit-5 reason (errors.error_line).
_INVALID_ORACLE_MARK = f"{errors.PREFIX} [{errors.INVALID_ORACLE}] "


def oracle_refusal(failure: BuildFailure | None) -> Violation | None:
    """Exit 5 for a failure of the gate's own targets (`bazel_run.gate_failure`: set up, an
    `oracles` target) whose reason is an `oracle-gate: [5] ...` line, read from a gate action's
    stderr or Starlark's `fail()` (`events.build_failure`): a broken reference (the reference check)
    or a reference library that reaches outside oracles/ (`oracle_suite`). The oracles are invalid,
    not the environment. The line's leading `oracles/...` path, if any, is the violation's path.
    None for any other failure."""
    if failure is None or not failure.setup or not is_oracle_target(failure.label):
        return None
    _, mark, reason = failure.message.partition(_INVALID_ORACLE_MARK)
    if not mark or not reason.strip():
        return None
    head, sep, rest = reason.partition(": ")
    if sep and head.startswith("oracles/") and " " not in head:
        return Violation(errors.INVALID_ORACLE, head, "", rest)
    return Violation(errors.INVALID_ORACLE, "oracles/", "", reason)


def _names_path(message: str, path: str) -> bool:
    """True when `message` names the repository file `path` by path or as a label (`//dir:name`)."""
    folder, _, name = path.rpartition("/")
    return path in message or f"//{folder}:{name}" in message


def _origin(found: Observed, from_files: bool) -> str:
    """` (from FILE)`: the result file an outcome was read from, when the operator gave the results
    (a test-log directory holds many; the gate's own runs say which run instead)."""
    return f" (from {found.source})" if from_files and found.source else ""


def check_harness(run: BazelRun) -> Findings:
    """Exit 4 for each harness test target that did not pass and each spawn that ran where the
    gate does not allow it, in the workspace run."""
    passed = [t for t in run.targets if t not in run.harness_failures() and not t.startswith("//oracles")]
    return Findings("harness tests", tuple(harness_violations(run, "workspace") + escape_violations(run, "workspace")),
                    f"{len(passed)} target(s) passed, none ran unsandboxed")


def harness_violations(run: BazelRun, where: str) -> list[Violation]:
    """One exit-4 violation per harness test target that did not pass: the change's own tests must
    pass in every run, though they never decide an invariant."""
    return [
        Violation(errors.NO_OUTCOME, "harness/", "", f"{label} {status} in the {where} run: the harness's own tests must pass")
        for label, status in run.harness_failures().items()
    ]


def escape_violations(run: BazelRun, where: str) -> list[Violation]:
    """One exit-4 violation per spawn that ran where the gate does not allow it (execlog.py,
    bazel_run.run_bazel), and per target outside the oracles package that depends on it
    (`launch.Launcher.oracle_dependents`): no result of such a run counts."""
    return [
        Violation(errors.NO_OUTCOME, "harness/", "", f"{escape.describe()} in the {where} run: the change's code runs "
                  "sandboxed and only the gate's own actions run in its invocations, so no result of this run counts")
        for escape in run.escapes
    ] + [
        Violation(errors.NO_OUTCOME, "harness/", "", f"{label} depends on the oracles package ({where} run): only the "
                  "gate's own targets may carry oracle files, so the gate ran nothing")
        for label in run.oracle_dependents
    ]


def withhold_while_invalid(
    inputs: Inputs, outcomes: Findings, harness: Findings | None
) -> tuple[Findings, Findings | None]:
    """Outcomes are not judged while the oracles are invalid.

    With invalid oracles the harness cannot run what they claim (the build's pin check fails it
    first); the exit-5 lines of `check_oracle_files` are the cause. So the outcome and harness
    violations become notes (`not judged while the oracles are invalid: ...`), after the outcome
    check's own notes, and both checks pass; the outcomes are still shown.
    """
    if not inputs.judged.problems:
        return outcomes, harness
    held = outcomes.violations + (harness.violations if harness is not None else ())
    notes = outcomes.notes + tuple(f"not judged while the oracles are invalid: {_held_line(v)}" for v in held)
    return (replace(outcomes, violations=(), notes=notes, detail="not judged: the oracle files are invalid (exit 5)"),
            replace(harness, violations=()) if harness is not None else None)


def _held_line(violation: Violation) -> str:
    """A withheld violation's line; a set-up failure (exit 1) of the run, which invalid oracles
    cause themselves (the pin check fails the build), without the advice to fix the environment."""
    if violation.code == errors.UNDECIDED and violation.path == "bazel":
        return "the run did not build: the gate's pin check stops at invalid oracle files"
    return violation.line()


def record_coverage(report: Report, inputs: Inputs, outcomes: Outcomes | None) -> None:
    """The coverage signal (docs/design.md section 12) into `report`: the production functions the
    change added or changed (`coverage.changed_functions`: what landing it changes, the base tip ->
    the merge result, or the merge base -> HEAD when HEAD is judged) held against the coverage
    records of the workspace run's rows. A check line `changed functions` and `report.coverage`
    when the change modified any; nothing otherwise.

    Args:
        report: the report being written.
        inputs: what is judged; the production packages are those of the policies in force and
            judged, the setting the stricter of their `uncovered_changes` (`uncovered_setting`).
        outcomes: the oracle test's outcomes; None when Bazel did not run. Outcomes from result
            files (`outcomes.run` None), invalid oracles or results without any record are "not
            measured": a note, never a violation. Measured, each function no row entered is a note,
            or with `uncovered_changes = "fail"` an exit-4 violation.

    Raises nothing: a file git cannot show at a commit counts as empty there.
    """
    policies = [o.policy for o in (inputs.in_force, inputs.judged) if o.policy is not None]
    packages = sorted({name for policy in policies for name in policy.production_packages})
    before = (inputs.claims or inputs.merge_base) if inputs.is_merge else inputs.merge_base
    changes = inputs.merge_changes if inputs.is_merge else inputs.changes
    changed = changed_functions(inputs.repo, before, inputs.judged_commit, [c.path for c in changes], packages)
    why = (NOT_MEASURED_NOT_RUN if outcomes is None else NOT_MEASURED_RESULTS if outcomes.run is None
           else NOT_MEASURED_INVALID if inputs.judged.problems else "")
    found = measure(changed, outcomes.observed if outcomes is not None else {}, setting=uncovered_setting(policies),
                    why=why)
    unread = unread_packages(inputs.repo, packages)
    if unread:
        report.notes.append(not_read_note(unread))
    if not found.modified:
        return
    report.record(Findings("changed functions", tuple(found.violations()), found.detail(), tuple(found.notes())))
    report.coverage = found.to_json()


# 6: the clean run (--clean).

def run_clean(inputs: Inputs, runner: CleanRunner, environ: Mapping[str, str], *, remote: bool,
              workspace: BazelRun | None) -> BazelRun:
    """The clean run (clean_run.py): the judged commit's code and harness (HEAD's, or the merge
    result's) with the oracles a human approved: the merge result's for a labelled change, else the
    base tip's (`Inputs.oracles_commit`).

    It also blocks what the workspace run blocked (docs/design.md section 10): the repository's
    oracles and git directories, and the judge's views and oracle test logs of the workspace's
    output base (`workspace.blocked`; `blocks.repository_blocks` when the gate did not run the
    workspace).

    Raises:
        GateError: (exit 1) when the tree cannot be written or Bazel cannot run.
    """
    block = workspace.blocked if workspace is not None else repository_blocks(inputs.repo)
    store = environ.get(STORE_VARIABLE, "")
    if store and os.path.isdir(store):  # never shown, wherever it lies (a system directory too)
        block = [*block, os.path.realpath(store)]
    if inputs.is_merge:  # the workspace run's checkout of the merge result holds its oracles
        block = [*block, merged_folder(inputs.repo, environ)]
    inputs.close_trees()
    return runner(inputs.repo, inputs.judged_commit, inputs.oracles_commit, environ, remote, block)


def default_clean_runner(salt: str, salted: frozenset[str] | None = None) -> CleanRunner:
    """The clean run (clean_run.py) with the same salt, given to the same `salted` files' suites,
    as the workspace run. It holds no hidden sample (the hidden phase runs them: `run_hidden`)."""

    def run(repo: str, head: str, oracles_commit: str, environ: Mapping[str, str], remote: bool,
            block: Sequence[str]) -> BazelRun:
        return clean_run(repo, head, oracles_commit, environ, remote=remote, salt=salt, block=block,
                         salted=salted)

    return run


def check_clean_run(workspace: Outcomes, clean: BazelRun, *, labelled: bool, remote: bool, salt: str = "") -> Findings:
    """Exit 6 when the clean run disagrees with the workspace run (docs/design.md sections 7 and 9).

    Every id whose outcome or observation digest differs (`results.differences`), first a clean run
    that did not build, then every test target whose status differs (when the gate ran the
    workspace run), then each spawn of the clean run that ran where the gate does not allow it
    (exit 4). `labelled` says whose oracles the clean run used (`run_clean`).
    """
    clean_observed = clean.observed
    where = "remote" if remote else "sandboxed"
    salt_note = f" (salt {salt})" if salt else ""
    found = [
        Violation(errors.RUNS_DISAGREE, "oracles/", d.id,
                  f"workspace run {d.left}, clean {where} run {d.right}: {d.reason}{salt_note}; the result depends "
                  "on something outside the declared, committed inputs")
        for d in differences(dict(workspace.observed), clean_observed)
    ]
    if clean.build_failed:
        failed = build_violation(clean, f"clean {where} run")
        # The change's targets: the runs disagree on what builds.
        if failed.code not in (errors.UNDECIDED, errors.INVALID_ORACLE):
            failed = Violation(errors.RUNS_DISAGREE, "oracles/", "", f"the clean run did not build: "
                               f"{clean.failure.line() if clean.failure else 'see its output'}")
        found.insert(0, failed)
    run = workspace.run
    if run is not None:
        for label in sorted(set(run.targets) | set(clean.targets)):
            left, right = run.targets.get(label, "missing"), clean.targets.get(label, "missing")
            if left != right:
                found.append(Violation(errors.RUNS_DISAGREE, "harness/", "",
                                       f"{label}: workspace run {left}, clean {where} run {right}"))
    found.extend(escape_violations(clean, f"clean {where}"))
    source_note = "the judged commit's oracles (labelled change)" if labelled else "the base's oracles"
    failed = sum(1 for found in clean_observed.values() if found.outcome != PASSED)
    # On a failing change the check still passes when the runs agree: the detail says what held.
    return Findings("clean run", tuple(found),
                    f"agrees with the workspace run: {len(clean_observed)} id(s), same outcomes and observation "
                    f"digests ({where}, {source_note})" + (f"; {failed} failed in both runs" if failed else ""))


# Shared rules.

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
    for tree, listing in ((inputs.base_tree, inputs.base_listing), (inputs.head_tree, inputs.head_listing)):
        entry = listing.get(CHANGELOG_PATH)
        texts.append(tree.read(entry).decode("utf-8", "replace")
                     if entry is not None and entry.is_regular else None)
    found = changelog_violations(changes, texts[0], texts[1])
    weakened = sum(1 for c in changes if c.weakens)
    return Findings("oracle changelog", tuple(found), f"{weakened} weakened claim(s), each named in {CHANGELOG_PATH}")
