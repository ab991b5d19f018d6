"""`check`: every gate check of HEAD against a base revision (docs/design.md sections 5-7)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tools.oracle_gate import errors
from tools.oracle_gate.bazel_run import HarnessRun, repository_seal, run_flags, run_harness
from tools.oracle_gate.clean_run import clean_run
from tools.oracle_gate.errors import GateError, Violation
from tools.oracle_gate.gitio import Change, changed_paths, merge_base, refuse_grafts, resolve_commit
from tools.oracle_gate.loader import Oracles, load_oracles
from tools.oracle_gate.manifest import manifest_problems
from tools.oracle_gate.paths import protected_by, special_entry_problem
from tools.oracle_gate.policy import ALWAYS_PROTECTED, POLICY_PATH, Policy, has_label, label_name
from tools.oracle_gate.results import EXECUTED, PASSED, Observed, differences, load_observed
from tools.oracle_gate.schema import Invariant
from tools.oracle_gate.text import one_line
from tools.oracle_gate.tree import Entry, GitTree
from tools.oracle_gate.worktree import differences as work_tree_differences

# Protection used when neither the base nor HEAD has a readable policy (fail closed).
DEFAULT_PROTECTED = ALWAYS_PROTECTED + (
    "tools/**", "third_party/**", ".bazelrc", "user.bazelrc", ".bazelignore", ".bazelversion",
    "WORKSPACE", "WORKSPACE.bazel", "WORKSPACE.bzlmod", "MODULE.bazel", "BUILD", "BUILD.bazel",
    ".ci/**", ".github/**", ".gitlab-ci.yml", ".gitattributes", ".gitmodules",
)


@dataclass
class CheckLine:
    """One line of the per-check summary: name, `ok`/`FAIL`, and a short detail."""

    name: str
    ok: bool
    detail: str


@dataclass
class Report:
    """Everything `check` found; `exit_code` is the lowest violation code, or 0."""

    base: str
    base_commit: str
    merge_base: str
    head: str
    labels: list[str]
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

    @property
    def exit_code(self) -> int:
        """The lowest code among the violations (docs/design.md section 6), 0 when there are none."""
        return min((v.code for v in self.violations), default=errors.OK)

    def add(self, name: str, found: Sequence[Violation], ok_detail: str) -> None:
        """Records one check: its violations, and a summary line."""
        self.violations.extend(found)
        if found:
            self.checks.append(CheckLine(name, False, f"{len(found)} violation(s)"))
        else:
            self.checks.append(CheckLine(name, True, ok_detail))


HarnessRunner = Callable[[str, Mapping[str, str]], HarnessRun]
# (repo, head, oracles_commit, environ, remote, paths to block) -> the clean run's outcomes.
CleanRunner = Callable[[str, str, str, Mapping[str, str], bool, Sequence[str]], HarnessRun]


def workspace_runner(salt: str) -> HarnessRunner:
    """The workspace run: `bazel test` of the oracle test and the harness in the work tree, with the
    repository's `oracles/` and git directories blocked from sandboxed actions (bazel_run.py)."""

    def run(repo: str, environ: Mapping[str, str]) -> HarnessRun:
        return run_harness(repo, environ, run_flags(salt, "workspace"), block=repository_seal(repo))

    return run


def clean_runner_for(salt: str) -> CleanRunner:
    """The clean run (clean_run.py) with the same salt as the workspace run."""

    def run(repo: str, head: str, oracles_commit: str, environ: Mapping[str, str], remote: bool,
            block: Sequence[str]) -> HarnessRun:
        return clean_run(repo, head, oracles_commit, environ, remote=remote, salt=salt, block=block)

    return run


def _origin(found: Observed, result_paths: Sequence[str]) -> str:
    """` (from FILE)`: the result file an outcome was read from, when the operator gave the results
    (a test-log directory holds many; the gate's own runs say which run instead)."""
    return f" (from {found.source})" if result_paths and found.source else ""


def harness_violations(run: HarnessRun, where: str) -> list[Violation]:
    """One exit-4 violation per harness test target that did not pass: the change's own tests must
    pass in every run, though they never decide an invariant."""
    return [
        Violation(errors.NO_OUTCOME, "harness/", "", f"{label} {status} in the {where} run: the harness's own tests must pass")
        for label, status in run.harness_failures().items()
    ]


def escape_violations(run: HarnessRun, where: str) -> list[Violation]:
    """One exit-4 violation per spawn that ran where the gate does not allow it (execlog.py,
    bazel_run.run_harness): no result of such a run counts."""
    return [
        Violation(errors.NO_OUTCOME, "harness/", "", f"{escape.describe()} in the {where} run: the change's code runs "
                  "sandboxed and only the gate's own actions run in its invocations, so no result of this run counts")
        for escape in run.escapes
    ]


def _protection(base: Oracles, head: Oracles) -> tuple[str, tuple[str, ...]]:
    """The label name and protected globs: the base policy's, plus anything HEAD's adds."""
    base_policy: Policy | None = base.policy
    label = label_name(base_policy, head.policy)
    globs: tuple[str, ...] = ()
    for policy in (base_policy, head.policy):
        if policy:
            globs += policy.protected
    return label, tuple(dict.fromkeys(globs or DEFAULT_PROTECTED))


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


def review_notes(base: Oracles, head: Oracles) -> list[str]:
    """Describes oracle changes a reviewer should see: widened or narrowed bounds, new pins, new ids."""
    notes = []
    before = {inv.id: inv for inv in base.invariants}
    for inv in head.invariants:
        old: Invariant | None = before.get(inv.id)
        if old is None:
            notes.append(f"review: new invariant {inv.id} ({inv.kind}) in {inv.source}")
            continue
        if inv.kind == old.kind == "bound" and (inv.min, inv.max) != (old.min, old.max):
            assert inv.min is not None and inv.max is not None and old.min is not None and old.max is not None
            wider = inv.min < old.min or inv.max > old.max
            narrower = inv.min > old.min or inv.max < old.max
            what = "widened" if wider and not narrower else "narrowed" if narrower and not wider else "moved"
            notes.append(f"review: bound {what}: {inv.id} [{old.min}, {old.max}] -> [{inv.min}, {inv.max}]")
        for attr in ("kind", "entry", "blob", "blob_sha256", "seed", "args", "repeat", "timeout_s"):
            if getattr(inv, attr) != getattr(old, attr):
                notes.append(f"review: {inv.id} {attr} changed: {getattr(old, attr)!r} -> {getattr(inv, attr)!r}")
        if inv.generate != old.generate:
            was = old.generate.count if old.generate else 0
            now = inv.generate.count if inv.generate else 0
            notes.append(f"review: {inv.id} generate changed: {was} -> {now} generated sample(s) per run")
    return notes


def run_check(
    repo: str,
    base: str,
    result_paths: Sequence[str],
    labels: set[str],
    environ: Mapping[str, str],
    harness_runner: HarnessRunner | None = None,
    clean: bool = False,
    remote: bool = False,
    clean_runner: CleanRunner | None = None,
    salt: str = "",
) -> Report:
    """Runs every gate check of HEAD against `base`.

    Args:
        repo: the work tree's root.
        base: a revision (branch, tag, commit id).
        result_paths: JUnit XML files or Bazel test-log directories; when empty, the oracle test
            and the harness are run with `bazel test //oracles/... //harness/...`.
        labels: the pull request's labels.
        environ: the environment (passed to Bazel when it runs the harness).
        harness_runner: how to do the workspace run (default: `workspace_runner(salt)`; a
            parameter so tests can substitute it).
        clean: also run on a pristine tree (clean_run.py) and require the same id -> outcome and
            observation digest as the workspace run (exit 6 otherwise).
        remote: run the clean run through `--config=remote` (REAPI).
        clean_runner: how to do the clean run (default: `clean_runner_for(salt)`).
        salt: the run salt for generated samples, the same for both runs.

    Raises:
        GateError: (exit 1) when the gate cannot decide: git errors, unreadable results, Bazel missing.
    """
    refuse_grafts(repo)
    base_commit = resolve_commit(repo, base)
    head = resolve_commit(repo, "HEAD")
    mb = merge_base(repo, base_commit, head)
    report = Report(base, base_commit, mb, head, sorted(labels), salt=salt)
    harness_runner = harness_runner or workspace_runner(salt)
    clean_runner = clean_runner or clean_runner_for(salt)

    base_oracles = load_oracles(GitTree(repo, mb))
    if base_oracles.policy is None and any(
        p.path == POLICY_PATH and "missing" not in p.message for p in base_oracles.problems
    ):
        raise GateError("the base revision's policy is invalid; the gate cannot tell what is protected",
                        path=POLICY_PATH, fix="fix it on the base branch first")
    head_tree = GitTree(repo, head)
    # Entries are judged by HEAD's policy, as the build's pin check does: a labelled change may add
    # a production package together with the rows that use it. Without the label, the policy edit
    # itself is a protected change (exit 2).
    head_oracles = load_oracles(head_tree)
    label, globs = _protection(base_oracles, head_oracles)
    bootstrap = base_oracles.policy is None and not base_oracles.files
    if bootstrap:
        report.notes.append("bootstrap: the base has no oracles/policy.toml; HEAD's policy applies and no id is required")

    # 1. Protected paths.
    changes = changed_paths(repo, mb, head)
    head_listing = head_tree.files("")
    base_listing = GitTree(repo, mb).files("")
    hits = protected_changes(changes, globs, head_listing, base_listing, head_tree.symlinks(head_listing))
    labelled = has_label(label, labels)
    found = []
    for change, why in hits:
        if labelled:
            continue
        found.append(Violation(errors.PROTECTED_PATH, change.path, "",
                               f"{why} and changed ({change.status}) without the {label!r} label"))
    if labelled and hits:
        report.notes.append(f"{len(hits)} protected path(s) changed under the {label!r} label")
    report.add("protected paths", found,
               f"{len(changes)} changed path(s), {len(hits)} protected" + (f", label {label!r} present" if labelled and hits else ""))

    # 2. Oracle files and blob pins at HEAD.
    schema_found = [Violation.from_error(p) for p in head_oracles.problems]
    report.add("oracle files", schema_found,
               f"{len(head_oracles.files)} file(s), {len(head_oracles.invariants)} invariant(s), every blob matches its pin")

    # 3. Manifest.
    report.add("manifest", [Violation.from_error(p) for p in manifest_problems(head_tree)], "current")

    # 4. Ids kept. A HEAD file that cannot be read at all hides its ids: those are undecided, and
    # the file's own exit-5 problem already fails the gate.
    unreadable = {f.path for f in head_oracles.files if not f.parsed}
    undecided = {i for f in base_oracles.files if f.path in unreadable for i in f.declared_ids}
    missing = sorted(base_oracles.declared_ids - head_oracles.declared_ids - undecided)
    if undecided - head_oracles.declared_ids:
        report.notes.append(f"ids not judged while their oracle file is unreadable: {', '.join(sorted(undecided))}")
    report.add("invariant ids",
               [Violation(errors.MISSING_ID, "oracles/", i, "present at the base, missing at HEAD") for i in missing],
               f"{len(base_oracles.declared_ids)} at base, {len(head_oracles.declared_ids)} at HEAD, none missing")

    # 5. Harness outcomes.
    build_failure: Violation | None = None
    harness_found: list[Violation] = []
    run: HarnessRun | None = None
    if result_paths:
        results = load_observed(result_paths)
        observed = results.observed
        for path, ids in results.ignored.items():
            report.notes.append(f"ignored [<id>] testcases of {path} (not an oracle test target): {', '.join(ids)}")
        source = f"{len(result_paths)} result file(s)"
    else:
        if clean:
            # The clean run tests HEAD's committed bytes; the workspace run tests the work tree as
            # it is, and any difference in outcomes is the coupling the merge rule rejects (6).
            dirty = work_tree_differences(repo, head_tree)
            if dirty:
                report.notes.append(f"the work tree differs from HEAD ({len(dirty)} path(s), e.g. {dirty[0]}); "
                                    "the clean run tests HEAD")
        else:
            require_clean_work_tree(repo, head_tree)
        run = harness_runner(repo, environ)
        report.summaries["workspace"] = run.summary
        observed = run.observations()
        for label, ids in run.ignored.items():
            report.notes.append(f"ignored [<id>] testcases of {label} (not an oracle test target): {', '.join(ids)}")
        source = "the oracle test"
        if run.build_failed:
            build_failure = Violation(errors.NO_OUTCOME, "oracles/", "",
                                      "the oracle test or the harness did not build (bazel exit 1; an action or test "
                                      "that cannot run sandboxed, e.g. tagged local or no-sandbox, fails there too); "
                                      "see Bazel's output above")
        harness_found = harness_violations(run, "workspace") + escape_violations(run, "workspace")
    outcomes = {ident: found.outcome for ident, found in observed.items()}
    report.outcomes = outcomes
    report.observed = observed
    ids = sorted(inv.id for inv in head_oracles.invariants) or sorted(head_oracles.declared_ids)
    report.invariants = ids
    found = []
    for ident in ids:
        outcome = outcomes.get(ident)
        if outcome is None:
            found.append(Violation(errors.NO_OUTCOME, "oracles/", ident, f"no outcome in {source}; the oracle test must run it"))
        elif outcome not in EXECUTED:
            found.append(Violation(errors.NO_OUTCOME, "oracles/", ident,
                                   f"{outcome}, not executed; that is not coverage{_origin(observed[ident], result_paths)}"))
        elif outcome != PASSED:
            why = observed[ident].message
            found.append(Violation(errors.NO_OUTCOME, "oracles/", ident, "failed: the invariant does not hold"
                                   + (f": {one_line(why)}" if why else "") + _origin(observed[ident], result_paths)
                                   + (f" (salt {salt})" if salt else "")))
    unknown = sorted(set(outcomes) - set(ids))
    if unknown:
        report.notes.append(f"results name ids no oracle declares: {', '.join(unknown)}")
    passed = sum(1 for i in ids if outcomes.get(i) == PASSED)
    if build_failure:
        found.insert(0, build_failure)
    if head_oracles.problems:
        # With invalid oracles the harness cannot run what they claim (the build's pin check fails
        # it first); the exit-5 lines above are the cause, so outcomes are shown but not judged.
        report.notes.extend(f"not judged while the oracles are invalid: {v.line()}" for v in found + harness_found)
        found, harness_found = [], []
    report.add("invariant outcomes", found, f"{passed} of {len(ids)} invariant(s) passed ({source})")
    if run is not None:
        harness_targets = [t for t in run.targets if t not in run.harness_failures() and not t.startswith("//oracles")]
        report.add("harness tests", harness_found, f"{len(harness_targets)} target(s) passed, none ran unsandboxed")

    if clean:
        oracles_commit = head if labelled else mb
        # The clean run also blocks what the workspace run blocked: the repository's oracles and git
        # directories, and the sealed views and oracle test logs of the workspace's output base.
        block = run.sealed if run is not None else repository_seal(repo)
        clean_result = clean_runner(repo, head, oracles_commit, environ, remote, block)
        clean_observed = clean_result.observations()
        report.clean_outcomes = {ident: o.outcome for ident, o in clean_observed.items()}
        report.clean_observed = clean_observed
        report.summaries["clean"] = clean_result.summary
        where = "remote" if remote else "sandboxed"
        salt_note = f" (salt {salt})" if salt else ""
        disagree = [
            Violation(errors.RUNS_DISAGREE, "oracles/", d.id,
                      f"workspace run {d.left}, clean {where} run {d.right}: {d.reason}{salt_note}; the result depends "
                      "on something outside the declared, committed inputs")
            for d in differences(observed, clean_observed)
        ]
        if clean_result.build_failed:
            disagree.insert(0, Violation(errors.RUNS_DISAGREE, "oracles/", "", "the clean run did not build (bazel exit 1)"))
        if run is not None:
            for label in sorted(set(run.targets) | set(clean_result.targets)):
                left, right = run.targets.get(label, "missing"), clean_result.targets.get(label, "missing")
                if left != right:
                    disagree.append(Violation(errors.RUNS_DISAGREE, "harness/", "",
                                              f"{label}: workspace run {left}, clean {where} run {right}"))
        disagree.extend(escape_violations(clean_result, f"clean {where}"))
        source_note = "HEAD's oracles (labelled change)" if labelled else "the base's oracles"
        report.add("clean run", disagree,
                   f"{len(clean_observed)} id(s), same outcomes and observation digests as the workspace run "
                   f"({where}, {source_note})")

    report.notes.extend(review_notes(base_oracles, head_oracles))
    return report
