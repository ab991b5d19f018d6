"""Invoking Bazel for one run, workspace or clean: the oracle test and the harness in three Bazel
invocations, and what exactly those invocations ran (docs/design.md sections 5 and 10).

How Bazel is started, on the host or in the run's sealed root, is `launch.py`; what each run hides
is `blocks.py`, its flags `flags.py`, reading the event files and test.xml files `events.py`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tools.oracle_gate.errors import GateError, TakenError
from tools.oracle_gate.runs.blocks import (
    block_flags,
    gate_code_blocks,
    gate_code_root,
    judge_folders,
    output_base_blocks,
)
from tools.oracle_gate.runs.collection import arm, execroot, traces
from tools.oracle_gate.runs.events import BuildFailure, Invocation, is_oracle_target, read_results
from tools.oracle_gate.runs.execlog import (
    JUDGE_MNEMONICS,
    JUDGE_OUTPUTS,
    VIEW_MNEMONICS,
    VIEW_OUTPUTS,
    Escape,
    read_spawns,
    unconfined,
    unexpected,
)
from tools.oracle_gate.runs.flags import (
    NO_NETWORK_OPT_IN,
    ORACLE_PATTERN,
    config_flags,
    execution_log_flags,
    lockfile_flags,
    test_patterns,
    worker_flags,
)
from tools.oracle_gate.runs.kept_root import KeptRoot
from tools.oracle_gate.runs.launch import Launcher, launched
from tools.oracle_gate.runs.results import Observed, merge_observed
from tools.oracle_gate.runs.sealed_root import SealedRoot

# Tags `oracle_test` (tools/bazel/private/oracle_test.bzl) puts on its observations and judge
# targets, so each of the gate's three invocations selects its own part of the oracles package.
OBSERVATIONS_TAG = "oracle_observations"
HIDDEN_TAG = "oracle_hidden_observations"
JUDGE_TAG = "oracle_judge"
# A tag no target carries: the view-building invocation is a `bazel test` that selects no test
# (Bazel exits 4, "no test targets were found", once the views are built).
NO_TEST_TAG = "oracle_gate_views_select_no_test"
# What each invocation of a run runs, as the report names it.
STAGE_NAMES = {"views": "pin check and draw", "change": "the change's code", "judge": "the judge"}
# How often the change's invocation is run again when other runs' folders vanished meanwhile.
VANISHED_RETRIES = 3


@dataclass
class BazelRun:
    """What Bazel ran in one run (workspace or clean, `run_bazel`).

    Attributes:
        targets: label -> Bazel's overall status for that target (PASSED, FAILED, ...).
        build_failed: True when Bazel could not build something (exit 1).
        failure: why, when `build_failed` (`events.BuildFailure`); its `setup` is True when the
            cause is not the change's: an external repository, Bazel ending early, or the gate's own
            targets (`gate_failure`).
        summary: Bazel's process summary lines, e.g. `INFO: 7 processes: 2 remote cache hit, 5 internal.`
        observed: id -> outcome and observation digests, from the oracle test targets only.
        ignored: label -> ids named by `[<id>]` testcases of a target outside the oracles package.
        blocked: the paths blocked from every sandboxed action of the run (`--sandbox_block_path`).
        escapes: spawns that ran where the gate does not allow it: unsandboxed in the invocation of
            the change's code, or anything but the gate's own actions in the gate's invocations.
        boundary: what stood between the run's Bazel and the host beyond Bazel's sandbox, for the
            report's `... sealed by:` line (`Launcher.boundary`: the sealed root's description; a
            remote clean run adds the engine's locked-down worker), or "" for nothing.
        oracle_dependents: targets outside the `oracles` package that the run would build and
            that depend on a file or target of it (`Launcher.oracle_dependents`); when any, nothing ran.
        unsealed: why a workspace run that should have been sealed ran on the host, when the
            caller accepted that (`workspace_seal.UNSEALED`), else "".
        collected: the change's invocation left a trace of an output collected through a symlinked
            folder (collection.py); its outputs must not be reused (the workspace run's output base
            is then removed).
    """

    targets: dict[str, str] = field(default_factory=dict)
    build_failed: bool = False
    failure: BuildFailure | None = None
    summary: list[str] = field(default_factory=list)
    observed: dict[str, Observed] = field(default_factory=dict)
    ignored: dict[str, list[str]] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)
    escapes: list[Escape] = field(default_factory=list)
    boundary: str = ""
    oracle_dependents: list[str] = field(default_factory=list)
    unsealed: str = ""
    collected: bool = False

    def harness_failures(self) -> dict[str, str]:
        """label -> status of every test target outside the oracles package that did not pass."""
        return {
            label: status
            for label, status in sorted(self.targets.items())
            if not is_oracle_target(label) and status != "PASSED"
        }


@dataclass(frozen=True)
class RunSpec:
    """What one run is, besides its tree and environment (`run_bazel`).

    Attributes:
        flags: flags for every invocation (e.g. `run_flags(salt, "workspace")`, `--config=remote`).
        startup_flags: flags before the command (e.g. `--output_user_root=DIR`, `--nohome_rc`).
        block: paths to block from every sandboxed action of the change's invocation, besides
            `blocks.output_base_blocks` and the gate's own code when it lies under `/tmp` or
            `/dev/shm` (`blocks.gate_code_blocks`).
        strategy: the spawn strategy of every invocation (`linux-sandbox`, or `remote`).
        sealed_root: run every Bazel command inside this root (sealed_root.py); the event files and
            logs then live in its folder, paths it does not show are not blocked (they do not exist
            there), and other runs' folders are out of sight.
        exact_env: pass the environment to Bazel as it is; else the variables `bazel run` set are
            dropped (`flags.clean_env`).
        one_server: with `sealed_root`, run every command through one `RootSession`, so one Bazel
            server (started inside the root, shut down at the end) serves the whole run; leave
            `--batch` out of `startup_flags` then.
        kept: with `sealed_root` and `one_server`, run the session in this kept root
            (kept_root.py): the root and its server go on after the run, for the next one.
        harness: also test `//harness/...` (when it has a BUILD file); False for `check --quick`.
    """

    flags: Sequence[str] = ()
    startup_flags: Sequence[str] = ()
    block: Sequence[str] = ()
    strategy: str = "linux-sandbox"
    sealed_root: SealedRoot | None = None
    exact_env: bool = False
    one_server: bool = False
    kept: KeptRoot | None = None
    harness: bool = True


def run_bazel(repo: str, environ: Mapping[str, str], spec: RunSpec = RunSpec()) -> BazelRun:
    """Runs the oracle test and the harness in `repo` in three Bazel invocations, and returns the
    results of exactly those invocations (docs/design.md section 10).

    1. `bazel test //oracles/...` without the observations and the judge, selecting no test
       (`NO_TEST_TAG`; Bazel exits 4): the pin check and the draw, gate code only, with nothing
       blocked (they read `oracles/`), as persistent workers under the Linux-sandbox strategy
       (`worker_flags`); the execution log must show no other spawn.
    2. `bazel test //harness/... //oracles/...` without the judge: every action of the change's code
       (the caller action, the harness) with `--sandbox_block_path` for what `_Run.blocked` lists,
       and no fallback to unsandboxed execution: an action or test tagged `local` or `no-sandbox`
       cannot run, and the execution log must show none that did.
    3. `bazel test //oracles/...`: the judge, which reads the expectations view, one of the judge's views. Every other
       action is an action-cache hit from 1 and 2; the execution log must show that nothing but the
       oracle test ran.

    Every invocation runs with the flags of `confined_flags`. Event files and execution logs live in a
    folder under `Launcher.folder`, which sandboxed actions can neither write (it is not `/tmp`) nor read
    (it is blocked); test.xml files are read only from this output base's test-log directory.

    Args:
        repo: the workspace to test.
        environ: the environment (variable name -> value).
        spec: the run's flags, blocks, strategy and sealed root.

    Raises:
        GateError: (exit 1) when Bazel is missing or fails for a reason other than a build or test
            failure, its event files or execution logs cannot be read, or the gate's own code lies
            directly in `/tmp` or `/dev/shm` (`blocks.gate_code_blocks`).
    """
    with launched(
        repo,
        environ,
        spec.startup_flags,
        spec.sealed_root,
        exact_env=spec.exact_env,
        one_server=spec.one_server,
        kept=spec.kept,
    ) as launcher:
        return _run_with(launcher, environ, spec)


def _run_with(launcher: Launcher, environ: Mapping[str, str], spec: RunSpec) -> BazelRun:
    """`run_bazel`'s commands, through `launcher`."""
    help_text = launcher.help_test()
    # The .bazelrc configs of every command (`common:` lines reach `query`), not the remote ones,
    # which `.bazelrc` defines for `build` only.
    configs = [*config_flags(environ), *lockfile_flags(help_text)]
    extra = [*configs, *spec.flags]
    info = launcher.info(extra, "bazel-bin", "bazel-testlogs", "output_base")
    harness = [p for p in test_patterns(launcher.repo) if p != ORACLE_PATTERN] if spec.harness else []
    dependents = launcher.oracle_dependents(configs, [*harness, ORACLE_PATTERN])
    if dependents:
        return BazelRun(build_failed=True, boundary=launcher.boundary, oracle_dependents=dependents)
    folder = launcher.folder
    blocked = _blocks(launcher, spec.block, info)  # before this run makes its own folder
    work = tempfile.mkdtemp(prefix="run-", dir=folder)
    try:
        run = _Run.made(
            launcher,
            confined_flags(extra, spec.strategy),
            lambda path: execution_log_flags(help_text, path),
            work,
            harness,
            info,
            blocked,
            worker_flags(spec.strategy),
        )
        return run.invocations()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def confined_flags(extra: Sequence[str], strategy: str) -> list[str]:
    """The flags of every invocation of a run (and of the hidden phase's, runs/hidden_phase.py): `extra`,
    then `--spawn_strategy=STRATEGY`, `--incompatible_legacy_local_fallback=false`,
    `--sandbox_default_allow_network=false`,
    `--modify_execution_info` that removes every action's `requires-network`,
    `--sandbox_fake_username` (actions run as `nobody`, without capabilities),
    `--noremote_upload_local_results` (nothing this run computes is written to a remote cache) and
    `--nobuild_tests_only` (a `.bazelrc` line `test --build_tests_only` would leave the views
    unbuilt by their own invocation, `_Run.views`, and the probe's callers unbuilt) and
    `--disk_cache=` (no disk cache: Bazel 6 and later write local results to one despite
    `--noremote_upload_local_results`, and one in the run's home would hold the views)."""
    # No unsandboxed fallback, and no network in the sandbox (the Bazel servers listen on loopback):
    # a `requires-network` tag cannot opt an action back in. Inside the sandbox an action runs as
    # `nobody` in its own user namespace, without capabilities: run as root it could otherwise
    # unmount the blocked paths and remount the host read-write.
    # No result computed here is written to a remote cache: a shared cache that took a pull
    # request's results would serve them to later runs (docs/remote-execution.md).
    return [
        *extra,
        f"--spawn_strategy={strategy}",
        "--incompatible_legacy_local_fallback=false",
        "--sandbox_default_allow_network=false",
        f"--modify_execution_info={NO_NETWORK_OPT_IN}",
        "--sandbox_fake_username",
        "--noremote_upload_local_results",
        "--nobuild_tests_only",
        "--disk_cache=",
        "--test_output=errors",
    ]


def _blocks(launcher: Launcher, block: Sequence[str], info: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """What the change's invocation hides, as (fixed paths, other runs' folders): `block` and the
    gate's own code where an action could rewrite it, those that exist where Bazel runs
    (`Launcher.blockable`), this output base's judge's views, test logs and server folder and the
    other output bases; and the other runs' folders and the gate's cache entries that hold copies
    of the oracles (`Launcher.other_runs`). Listed before this run makes its own folder."""
    fixed = launcher.blockable([*block, *gate_code_blocks(gate_code_root(), launcher.repo)])
    siblings = launcher.other_runs(info["output_base"])
    own = output_base_blocks(info["bazel-bin"], info["bazel-testlogs"], info["output_base"])
    for path in own[:2]:  # the judge's views and the oracle test logs: blocked before they exist
        os.makedirs(path, exist_ok=True)
    return [*fixed, *own], siblings


def gate_failure(failure: BuildFailure | None) -> BuildFailure:
    """`failure` of an invocation that builds only the gate's own targets (the views, the judge):
    a set-up failure unless its root cause is a target outside the oracles package (a production
    or harness target the change's BUILD files declare), since nothing else there is the change's."""
    if failure is None:
        return BuildFailure(True, "", "Bazel's events name no root cause; see its output")
    if failure.setup or (failure.label.startswith(("//", "@//", "@@//")) and not is_oracle_target(failure.label)):
        return failure
    return BuildFailure(
        True,
        failure.label,
        f"the gate's own targets did not build: {failure.message}"
        if failure.message
        else "the gate's own targets did not build; see Bazel's output",
    )


@dataclass(frozen=True)
class _Run:
    """The three invocations of one run in its work folder: the event files and execution logs in
    `logs` (blocked while the change's code runs), and one fresh TMPDIR per invocation (`tmp`,
    stage -> folder), since Bazel 4.2 makes the client's TMPDIR (else /tmp) writable to every
    sandboxed action, so it must hold nothing the gate or a later invocation reads.

    Attributes:
        launcher: how the run starts Bazel (launch.py).
        flags: the flags of every invocation (`confined_flags`).
        log_flags: the execution log flags for a path (`flags.execution_log_flags`).
        logs: the folder of the event files and execution logs.
        tmp: stage ("views", "change", "judge") -> that invocation's TMPDIR.
        harness: the harness's test patterns.
        info: `bazel info` of `bazel-bin`, `bazel-testlogs` and `output_base`.
        fixed: the paths the change's invocation blocks that stay (`_blocks`).
        siblings: the other runs' folders it blocks as listed before the run; they may vanish.
        workers: the view-building invocation's own flags: the gate's actions as persistent workers.
    """

    launcher: Launcher
    flags: list[str]
    log_flags: Callable[[str], list[str]]
    logs: str
    tmp: Mapping[str, str]
    harness: list[str]
    info: Mapping[str, str]
    fixed: list[str]
    siblings: list[str]
    workers: list[str]

    @classmethod
    def made(
        cls,
        launcher: Launcher,
        flags: list[str],
        log_flags: Callable[[str], list[str]],
        work: str,
        harness: list[str],
        info: Mapping[str, str],
        blocked: tuple[list[str], list[str]],
        workers: list[str],
    ) -> _Run:
        """The run in its work folder `work`, its `logs` and `tmp` folders made there; `blocked`:
        (`fixed`, `siblings`)."""
        logs = os.path.join(work, "logs")
        tmp = {stage: os.path.join(work, f"tmp-{stage}") for stage in STAGE_NAMES}
        for path in (logs, *tmp.values()):
            os.makedirs(path)
        return cls(launcher, flags, log_flags, logs, tmp, harness, info, *blocked, workers)

    def blocked(self, siblings: Sequence[str]) -> list[str]:
        """Every path the change's invocation blocks: the fixed ones, the judge's folder of every
        configuration as they are now (`blocks.judge_folders`, after the views), the other runs'
        folders `siblings` and the logs."""
        return list(dict.fromkeys([*self.fixed, *judge_folders(self.info["bazel-bin"]), *siblings, self.logs]))

    def bazel(self, command: str, flags: Sequence[str], targets: Sequence[str], stage: str, name: str) -> Invocation:
        """One invocation of this run (`Launcher.invoke`), its files named `name`, TMPDIR `stage`'s."""
        files = (os.path.join(self.logs, f"{name}.events.json"), os.path.join(self.logs, f"{name}.spawns.bin"))
        invocation = self.launcher.invoke(command, flags, targets, files, self.log_flags, self.tmp[stage])
        # Which invocation each process summary is of, for the report.
        invocation.summary = [f"{line.rstrip('.')} ({STAGE_NAMES[stage]})." for line in invocation.summary]
        return invocation

    def invocations(self) -> BazelRun:
        """Runs the three invocations (`run_bazel`) and reads what they ran (docs/design.md section 10).
        No hidden sample exists in the tree: the hidden phase runs them later, in a root of its own
        (runs/hidden_phase.py)."""
        boundary = self.launcher.boundary
        views = self.views()
        escaped = unexpected(
            read_spawns(views.spawn_log), VIEW_MNEMONICS, VIEW_OUTPUTS, "the gate's view-building invocation"
        )
        if views.exit_code == 1:
            return BazelRun(
                build_failed=True,
                failure=gate_failure(views.failure),
                summary=views.summary,
                blocked=self.blocked(self.siblings),
                escapes=escaped,
                boundary=boundary,
            )
        guard = arm(
            [*judge_folders(self.info["bazel-bin"]), os.path.join(self.info["bazel-testlogs"], "oracles")],
            [os.path.join(self.launcher.repo, "oracles")],
        )
        change, siblings = self.change()
        spawns = read_spawns(change.spawn_log)
        escaped += unconfined(spawns)
        taken = traces(guard, spawns, execroot(self.info["bazel-bin"]))
        escaped += taken
        if change.exit_code == 1:
            return BazelRun(
                targets=change.status,
                build_failed=True,
                failure=change.failure,
                summary=views.summary + change.summary,
                blocked=self.blocked(siblings),
                escapes=escaped,
                boundary=boundary,
                collected=bool(taken),
            )
        judge = self.bazel("test", self.flags, [ORACLE_PATTERN], "judge", "judge")
        escaped += unexpected(read_spawns(judge.spawn_log), JUDGE_MNEMONICS, JUDGE_OUTPUTS, "the judge's invocation")
        maps, ignored = read_results(judge, self.info["bazel-testlogs"])
        _, harness_ignored = read_results(change, self.info["bazel-testlogs"])
        return BazelRun(
            targets={**change.status, **judge.status},
            build_failed=judge.exit_code == 1,
            failure=gate_failure(judge.failure) if judge.exit_code == 1 else None,
            summary=views.summary + change.summary + judge.summary,
            observed=merge_observed(maps),
            ignored={**ignored, **harness_ignored},
            blocked=self.blocked(siblings),
            escapes=escaped,
            boundary=boundary,
            collected=bool(taken),
        )

    def views(self) -> Invocation:
        """The view-building invocation: `bazel test` selecting no test (`NO_TEST_TAG`), not
        `bazel build`: a .bazelrc's `test` lines (such as `--test_env`) are build options, and a
        command whose build options differ from the last one's discards Bazel's analysis cache, so
        the three invocations of a run analyse once between them."""
        return self.bazel(
            "test",
            [
                *self.flags,
                *self.workers,
                f"--build_tag_filters=-{JUDGE_TAG},-{OBSERVATIONS_TAG},-{HIDDEN_TAG}",
                f"--test_tag_filters={NO_TEST_TAG}",
            ],
            [ORACLE_PATTERN],
            "views",
            "views",
        )

    def change(self) -> tuple[Invocation, list[str]]:
        """The invocation of the change's code, run again (at most VANISHED_RETRIES times) without
        the other runs' folders that vanished meanwhile; and the other runs' folders it blocked last.

        Raises:
            TakenError: (exit 4) when a blocked path of this run's own went missing: the change's
                action took it through output collection.
            GateError: (exit 1) when other runs' folders keep vanishing.
        """
        siblings = self.siblings
        for attempt in range(VANISHED_RETRIES + 1):
            change = self.bazel(
                "test",
                [
                    *self.flags,
                    f"--build_tag_filters=-{JUDGE_TAG}",
                    f"--test_tag_filters=-{JUDGE_TAG}",
                    *block_flags(self.blocked(siblings)),
                ],
                [*self.harness, ORACLE_PATTERN],
                "change",
                f"change-{attempt}",
            )
            # Another gate run on this machine may finish, and remove its folder, between the listing
            # above and an action's start; Bazel then cannot block it and the build fails. Such a
            # folder no longer needs blocking: run again without it. Any other missing path is an error.
            vanished = set(change.missing_mounts)
            if change.exit_code != 1 or not vanished:
                return change, siblings
            others = vanished - set(siblings)
            if others:  # a path of this run's own: only output collection moves one away mid-run
                raise TakenError(
                    f"Bazel could not block {sorted(others)[0]} from the sandbox: it went missing while "
                    "the change's code ran, as a folder an action's output collected through a symlinked "
                    "folder takes (docs/threat-model.md)"
                )
            if attempt == VANISHED_RETRIES:
                raise GateError(
                    f"Bazel could not block {sorted(vanished)[0]} from the sandbox: another run's folder "
                    "kept vanishing during the run; run the gate again"
                )
            siblings = [s for s in siblings if os.path.exists(s)]
        raise AssertionError("unreachable")
