"""The runs of `check`: the workspace run (the oracle test and the harness in the work tree, or in
the gate's checkout of the merge result), the clean run (runs/clean_run.py), the hidden phase
(runs/hidden_phase.py), and the outcomes the operator gives instead (`read_outcomes`). What they
return is judged in check/outcomes.py. Each default runner is what `run_check` uses unless a
caller substitutes it (tests do).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import POLICY_PATH
from tools.oracle_gate.check import hidden
from tools.oracle_gate.check.findings import Outcomes
from tools.oracle_gate.check.inputs import Inputs
from tools.oracle_gate.errors import GateError, UsageError, Violation
from tools.oracle_gate.git.tree import GitTree
from tools.oracle_gate.git.worktree import differences as work_tree_differences
from tools.oracle_gate.progress import Phases
from tools.oracle_gate.runs.bazel_binary import wrapper_note
from tools.oracle_gate.runs.bazel_run import BazelRun, RunSpec, run_bazel
from tools.oracle_gate.runs.blocks import repository_blocks
from tools.oracle_gate.runs.clean_run import clean_run
from tools.oracle_gate.runs.events import BuildFailure
from tools.oracle_gate.runs.flags import run_flags
from tools.oracle_gate.runs.hidden_phase import HiddenRun, hidden_phase
from tools.oracle_gate.runs.merged_tree import MERGED_TREE_STARTUP, merged_folder, merged_tree
from tools.oracle_gate.runs.results import load_observed
from tools.oracle_gate.runs.workspace_seal import workspace_seal
from tools.oracle_gate.suite.hidden_store import STORE_VARIABLE

# (tree, environ) -> the workspace run's outcomes.
WorkspaceRunner = Callable[[str, Mapping[str, str]], BazelRun]
# (repo, head, oracles_commit, environ, remote, paths to block) -> the clean run's outcomes.
CleanRunner = Callable[[str, str, str, Mapping[str, str], bool, Sequence[str]], BazelRun]
# (repo, head, oracles_commit, inputs view, environ, guarded paths) -> the hidden phase.
HiddenRunner = Callable[..., HiddenRun]


def read_outcomes(result_paths: Sequence[str]) -> Outcomes:
    """The outcomes the operator gave: JUnit XML files or Bazel test-log directories (results.py).

    Raises:
        GateError: (exit 1) for a missing or unreadable file, malformed XML, or a test-log
            directory whose layout the gate does not understand.
    """
    results = load_observed(result_paths)
    notes = tuple(
        f"ignored [<id>] testcases of {path} (not an oracle test target): {', '.join(ids)}"
        for path, ids in results.ignored.items()
    )
    return Outcomes(results.observed, f"{len(result_paths)} result file(s)", notes)


def run_workspace(
    inputs: Inputs, runner: WorkspaceRunner, environ: Mapping[str, str], *, clean: bool, as_is: bool = False
) -> Outcomes:
    """The workspace run: the oracle test and the harness in the work tree (`runner`), or, when
    the merge result is judged, in the gate's own checkout of it (merged_tree.py).

    Without `clean` or `as_is`, the work tree must be HEAD (`require_clean_work_tree`). With
    `clean`, the clean run tests HEAD's committed bytes and the workspace run the work tree as it
    is; any difference in outcomes is the coupling the merge rule rejects (exit 6), and a note says
    the trees differ. With `as_is` (`check --quick`), the work tree is run as it is, with that note.
    A merge result is committed content only: the work tree plays no part.

    Raises:
        GateError: (exit 1) for a work tree that differs from HEAD (without `clean`, when HEAD is
            judged), when the merge result's checkout cannot be written, or when Bazel cannot run.
    """
    if inputs.is_merge:
        inputs.close_trees()
        with merged_tree(inputs.repo, inputs.judged.commit, inputs.oracles_commit, environ) as tree:
            notes = [f"workspace run: in the gate's checkout of the merge result ({tree}), not in the work tree"]
            wrapper = wrapper_note(tree)
            if wrapper:
                notes.append(wrapper)
            run = _run_or_not_set_up(runner, tree, environ)
        return _workspace_outcomes(run, notes)
    notes = []
    head_tree = inputs.head.tree
    if clean or as_is:
        dirty = work_tree_differences(inputs.repo, head_tree)
        if dirty:
            notes.append(
                f"the work tree differs from HEAD ({len(dirty)} path(s), e.g. {dirty[0]}); "
                + ("the clean run tests HEAD" if clean else "it was run as it is")
            )
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
    notes.extend(
        f"ignored [<id>] testcases of {label} (not an oracle test target): {', '.join(ids)}"
        for label, ids in run.ignored.items()
    )
    return Outcomes(run.observed, "the oracle test", tuple(notes), run)


def salted_files(inputs: Inputs) -> frozenset[str]:
    """The oracle files (repository-relative paths) with a row that draws generated samples, in any
    `oracles/` a run of this check may build: HEAD's, the judged commit's and the claims in force.
    Only their suites get the run salt (`flags.run_flags`); a suite left out fails its draw should
    one of its rows draw after all (actions/draw.py `--unsalted`)."""
    found = (inputs.head.oracles, inputs.judged.oracles, inputs.claims.oracles)
    return frozenset(inv.source for oracles in found for inv in oracles.invariants if inv.generate is not None)


def default_workspace_runner(
    salt: str, repo: str, salted: frozenset[str] | None = None, accept_unsealed: bool = False, *, harness: bool = True
) -> WorkspaceRunner:
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
                found = run_bazel(
                    tree,
                    environ,
                    RunSpec(
                        flags=run_flags(salt, "workspace", salted),
                        startup_flags=list(MERGED_TREE_STARTUP) if merged else [],
                        block=block,
                        harness=harness,
                    ),
                )
                return replace(found, unsealed=seal.unsealed)
            if seal.kept is not None and seal.kept.unclean():  # the last check was killed as it ran
                seal.discard()
            try:
                found = run_bazel(
                    tree,
                    seal.env,
                    RunSpec(
                        flags=run_flags(salt, "workspace", salted),
                        startup_flags=list(seal.startup),
                        block=block,
                        sealed_root=seal.root,
                        exact_env=True,
                        one_server=True,
                        kept=seal.kept,
                        harness=harness,
                    ),
                )
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


def run_clean(
    inputs: Inputs, runner: CleanRunner, environ: Mapping[str, str], *, remote: bool, workspace: BazelRun | None
) -> BazelRun:
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
    return runner(inputs.repo, inputs.judged.commit, inputs.oracles_commit, environ, remote, block)


def default_clean_runner(salt: str, salted: frozenset[str] | None = None) -> CleanRunner:
    """The clean run (clean_run.py) with the same salt, given to the same `salted` files' suites,
    as the workspace run. It holds no hidden sample (the hidden phase runs them: `run_hidden`)."""

    def run(
        repo: str, head: str, oracles_commit: str, environ: Mapping[str, str], remote: bool, block: Sequence[str]
    ) -> BazelRun:
        return clean_run(repo, head, oracles_commit, environ, remote=remote, salt=salt, block=block, salted=salted)

    return run


@dataclass(frozen=True)
class HiddenOutcome:
    """What the hidden phase gave (`run_hidden`).

    Attributes:
        words: id -> HIDDEN_PASSED or HIDDEN_FAILED (`hidden.words`); None when it did not run.
        problems: an invalid hidden blob (exit 5), a planted path or an unsandboxed spawn in the
            phase (exit 4, every delivered row), a phase that could not run (exit 1).
        summary: the phase's Bazel summary; None when Bazel did not run it.
    """

    words: dict[str, str] | None = None
    problems: tuple[Violation, ...] = ()
    summary: list[str] | None = None


def run_hidden(
    inputs: Inputs,
    plan: hidden.HiddenPlan,
    env: Mapping[str, str],
    workspace: BazelRun | None,
    *,
    phases: Phases,
    runner: HiddenRunner,
) -> HiddenOutcome:
    """The hidden phase (runs/hidden_phase.py, started by `runner`, timed in `phases`), when the
    plan delivered any hidden blob: the gate splits the blobs (`hidden.views`), the phase runs the
    inputs, the gate judges the observations (`hidden.words`). Nothing returned quotes a sample.

    Raises:
        GateError: any the runner raises but exit 1 (a phase that could not run is a problem).
    """
    if not plan.delivered:
        return HiddenOutcome()
    oracles = inputs.judged.oracles
    packages = oracles.policy.production_packages if oracles.policy is not None else None
    inputs_view, expectations, invalid = hidden.views(plan, packages)
    if invalid:
        return HiddenOutcome(problems=tuple(invalid))
    guarded = [*(workspace.blocked if workspace is not None else []), *plan.guarded]
    try:
        with phases.phase("hidden phase", announce=True):
            ran = runner(inputs.repo, inputs.judged.commit, inputs.oracles_commit, inputs_view, env, guarded=guarded)
    except GateError as exc:
        if exc.code != errors.UNDECIDED:
            raise
        return HiddenOutcome(
            problems=(Violation(errors.UNDECIDED, POLICY_PATH, "", f"the hidden phase could not run: {exc}"),)
        )
    why = ran.planted or (f"a spawn ran outside Bazel's sandbox: {ran.escaped[0]}" if ran.escaped else "")
    if why:
        return HiddenOutcome(
            None,
            tuple(
                Violation(
                    errors.NO_OUTCOME,
                    plan.rows[ident][0],
                    ident,
                    f'the hidden phase refused what the change\'s code left: {why} (docs/oracles.md, "Hidden samples")',
                )
                for ident in plan.delivered
            ),
            ran.summary,
        )
    return HiddenOutcome(hidden.words(expectations, ran.observations), (), ran.summary)


def default_hidden_runner(
    repo: str,
    head: str,
    oracles_commit: str,
    inputs_view: Mapping[str, object],
    environ: Mapping[str, str],
    *,
    guarded: Sequence[str],
) -> HiddenRun:
    """The hidden phase itself (`hidden_phase.hidden_phase`); tests substitute it."""
    return hidden_phase(repo, head, oracles_commit, inputs_view, environ, guarded=guarded)
