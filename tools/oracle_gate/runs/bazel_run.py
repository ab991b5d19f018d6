"""Invoking Bazel for one run, workspace or clean: the oracle test and the harness in three Bazel
invocations, and what exactly those invocations ran (docs/design.md sections 5 and 10).

What each run hides is `blocks.py`, its flags `flags.py`, reading the event files and test.xml
files `events.py`. `--symlink_prefix=/` keeps Bazel from creating convenience symlinks, so the work
tree is not written to.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tools.oracle_gate.errors import PREFIX, GateError, TakenError
from tools.oracle_gate.runs.bazel_binary import resolve as resolve_bazel
from tools.oracle_gate.runs.blocks import (
    block_flags,
    sealed_folders,
    gate_cache_entries,
    gate_code_blocks,
    gate_code_root,
    output_base_blocks,
    runs_dir,
    sibling_runs,
)
from tools.oracle_gate.progress import BAZEL_OUTPUT
from tools.oracle_gate.runs.collection import arm, execroot, traces
from tools.oracle_gate.runs.events import (BuildFailure, Invocation, build_failure, is_oracle_target, parse_bep,
                                           read_results)
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
    clean_env,
    config_flags,
    execution_log_flags,
    lockfile_flags,
    test_patterns,
    worker_flags,
)
from tools.oracle_gate.runs.results import Observed, merge_observed
from tools.oracle_gate.runs.sealed_root import SealedRoot
from tools.oracle_gate.runs.kept_root import KeptRoot
from tools.oracle_gate.runs.root_session import RootSession
from tools.oracle_gate.text import visible

# Tags `oracle_test` (tools/bazel/private/oracle_test.bzl) puts on its observations and judge
# targets, so each of the gate's three invocations selects its own part of the oracles package.
OBSERVATIONS_TAG = "oracle_observations"
HIDDEN_TAG = "oracle_hidden_observations"
JUDGE_TAG = "oracle_judge"
# Bazel exit codes: 0 ok, 3 some tests failed, 4 no tests found, 1 build failed.
_RESULT_EXITS = (0, 1, 3, 4)
# Bazel's process summary, e.g. "INFO: 9 processes: 2 remote, 7 internal."
_SUMMARY = re.compile(r"^INFO: \d+ process(es)?: ")
# What Bazel 4.2's linux-sandbox prints when a --sandbox_block_path target is gone when an action starts.
_MISSING_MOUNT = re.compile(r"Mount target '([^']+)' does not exist")
# What each invocation of a run runs, as the report names it.
STAGE_NAMES = {"views": "pin check and draw", "change": "the change's code", "judge": "the judge"}
# How often the change's invocation is run again when other runs' folders vanished meanwhile.
VANISHED_RETRIES = 3
# Bazel's output (which includes the output of failed tests, i.e. text the change wrote) is relayed
# to stderr with this prefix on every line, escaped: it can never pass for a line of the gate's own.
RELAY_PREFIX = "bazel| "
# How long a Bazel child the gate stops (it was interrupted) has between SIGTERM and SIGKILL.
STOP_GRACE_S = 30.0


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
        sealed_by: what sealed the run beyond Bazel's sandbox (`SealedRoot.description`), or "" for none.
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
    sealed_by: str = ""
    oracle_dependents: list[str] = field(default_factory=list)
    unsealed: str = ""
    collected: bool = False

    def harness_failures(self) -> dict[str, str]:
        """label -> status of every test target outside the oracles package that did not pass."""
        return {label: status for label, status in sorted(self.targets.items())
                if not is_oracle_target(label) and status != "PASSED"}


def stop(proc: "subprocess.Popen[bytes]") -> None:
    """Stops a child still running (the gate was interrupted): SIGTERM, then SIGKILL after
    STOP_GRACE_S seconds, and waits for it, so nothing it writes outlives the cleanup that follows."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def bzlmod_hint(repo: str) -> str:
    """A hint for a Bazel that cannot read the workspace: a repository with `MODULE.bazel` and no
    `WORKSPACE` needs Bazel 6 or later (Debian 12's 4.2.3 reads no MODULE.bazel), else ""."""
    if os.path.exists(os.path.join(repo, "MODULE.bazel")) and not any(
            os.path.exists(os.path.join(repo, n)) for n in ("WORKSPACE", "WORKSPACE.bazel")):
        return ("; this repository has MODULE.bazel and no WORKSPACE, which Bazel 4.2 does not read: run the gate "
                "with Bazel 7 (docs/adopting.md, \"Bazel versions\")")
    return ""


@dataclass(frozen=True)
class Launcher:
    """How one run starts Bazel: in `repo`, with `env` as the whole environment, `startup_flags`
    before the command, inside `sealed_root` when given (sealed_root.py); through `session`, one
    shell in that root running every command in turn (one Bazel server), when given."""

    repo: str
    env: Mapping[str, str]
    startup_flags: Sequence[str] = ()
    sealed_root: SealedRoot | None = None
    session: RootSession | None = None

    def command(self, *args: str) -> list[str]:
        """`bazel STARTUP_FLAGS ARGS...`."""
        return [resolve_bazel(self.env), *self.startup_flags, *args]

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` as run: inside the sealed root when there is one."""
        return self.sealed_root.wrap(argv, self.repo) if self.sealed_root is not None else argv

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        if self.session is not None:
            return self.session.run(self.command(*args))
        try:
            return subprocess.run(self.wrap(self.command(*args)), cwd=self.repo, env=dict(self.env), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise GateError("bazel is not installed; run tools/setup.sh, or pass --results FILE") from None

    def help_test(self) -> str:
        """The output of `bazel help test`.

        Raises:
            GateError: (exit 1) when Bazel is missing or `bazel help test` fails.
        """
        proc = self._run("help", "test")
        if proc.returncode != 0:
            raise GateError(f"`bazel help test` failed (exit {proc.returncode}): {visible(failure_cause(proc.stderr))}")
        return proc.stdout

    def info(self, flags: Sequence[str], *keys: str) -> dict[str, str]:
        """`bazel info KEY...` with the configuration flags of `flags` (those output paths depend
        on, and the remote ones: `info` connects to the engine).

        Returns:
            key -> value for each key asked.

        Raises:
            GateError: (exit 1) when Bazel fails or does not print every key.
        """
        config = [f for f in flags
                  if f.startswith(("--config=", "--compilation_mode", "--remote_", "--tls_", "--lockfile_mode"))]
        proc = self._run("info", *config, *keys)
        values = {}
        for line in proc.stdout.splitlines():
            key, sep, value = line.partition(": ")
            if sep and key in keys:
                values[key] = value.strip()
        if len(keys) == 1 and proc.stdout.strip() and not values:
            values[keys[0]] = proc.stdout.strip()
        if proc.returncode != 0 or set(values) != set(keys):
            raise GateError(f"`bazel info {' '.join(keys)}` failed: {visible(failure_cause(proc.stderr))}"
                            f"{bzlmod_hint(self.repo)}")
        return values

    def _relayed(self, cmd: list[str], tmpdir: str | None, quiet: bool) -> tuple[list[str], list[str], int]:
        """Runs `cmd` (TMPDIR set to `tmpdir` when given), relaying its output (`_relay`); returns
        the process summary, the missing block paths and the exit code.

        Raises:
            GateError: (exit 1) when Bazel is missing or the sealed root stopped.
        """
        if self.session is not None:
            lines, code = self.session.stream(cmd, {"TMPDIR": tmpdir} if tmpdir else {})
            summary, missing_mounts = _relay(lines, quiet)
            return summary, missing_mounts, code[0]
        env = dict(self.env, TMPDIR=tmpdir) if tmpdir else dict(self.env)
        try:
            proc = subprocess.Popen(self.wrap(cmd), cwd=self.repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)
        except FileNotFoundError:
            raise GateError("bazel is not installed; run tools/setup.sh, or pass --results FILE") from None
        try:
            assert proc.stdout is not None
            summary, missing_mounts = _relay(proc.stdout, quiet)
            return summary, missing_mounts, proc.wait()
        finally:
            stop(proc)

    def shutdown(self) -> None:
        """`bazel shutdown`: the run's server stops (a `--batch` run has none; nothing happens)."""
        if "--batch" not in self.startup_flags:
            self._run("shutdown")

    def oracle_dependents(self, flags: Sequence[str], patterns: Sequence[str]) -> list[str]:
        """The targets outside the `oracles` package, in the dependency closure of `patterns` (with
        the query `flags`: the .bazelrc configs and the lockfile mode), that depend on a file or
        target of that package: `bazel query 'rdeps(deps(P), //oracles:*) except //oracles:*'`. A
        change's target that depends on one (directly, or through a target of the gate that carries
        the oracle files, such as a test of the manifest) can copy expected values into an output
        the change's code reads: rules like `expand_template` and `write` run inside the Bazel
        server, where no sandbox applies. The gate runs nothing when the list is not empty.

        Raises:
            GateError: (exit 1) when the query fails for another reason than packages that do not load.
        """
        expression = f"rdeps(deps({' + '.join(patterns)}), //oracles:*) except //oracles:*"
        # --keep_going: a package that does not load (a lock pip refuses, a broken BUILD file) leaves
        # the rest of the answer (exit 3); the build that follows fails on the same package, so
        # nothing the partial answer missed can run.
        proc = self._run("query", *flags, "--keep_going", "--output=label", expression)
        if proc.returncode not in (0, 3):
            last = [line for line in proc.stderr.strip().splitlines() if line.startswith("ERROR")][-1:] or [str(proc.returncode)]
            raise GateError(f"`bazel query` of what depends on the oracles package failed: {visible(last[0])}")
        return sorted(line.strip() for line in proc.stdout.splitlines() if line.strip())

    def invoke(self, command: str, flags: Sequence[str], targets: Sequence[str], files: tuple[str, str],
               log_flags: Callable[[str], list[str]], tmpdir: str | None = None, quiet: bool = False) -> Invocation:
        """Runs one `bazel COMMAND`, relaying its output, with its event file and execution log at
        `files` (two paths), TMPDIR set to `tmpdir` when given. `quiet`: Bazel's output is read for
        its process summary only, never relayed or logged, and a failure names no message (the
        hidden callers' invocation: a failed action's output could quote a hidden sample).

        Raises:
            GateError: (exit 1) when Bazel is missing, exits for a reason other than a build or test
                failure, or its event file or execution log cannot be read.
        """
        bep, execution_log = files
        cmd = self.command(command, "--symlink_prefix=/", f"--build_event_json_file={bep}", *log_flags(execution_log),
                           *flags, "--", *targets)
        BAZEL_OUTPUT.info(visible(f"{PREFIX} running " + " ".join(cmd)))
        summary, missing_mounts, returncode = self._relayed(cmd, tmpdir, quiet)
        if returncode not in _RESULT_EXITS:
            raise GateError(f"`bazel {command} {' '.join(targets)}` exited {returncode}"
                            + ("; its output is not shown (it ran the hidden samples)" if quiet else "; see Bazel's output above"))
        status, xml, failure = _read_events(bep, failed=returncode == 1)
        if quiet and failure is not None:
            failure = BuildFailure(failure.setup, "", "")
        try:
            with open(execution_log, "rb") as f:
                spawn_log = f.read()
        except FileNotFoundError:
            if returncode != 1:
                raise GateError("Bazel wrote no execution log; the gate cannot tell what ran where") from None
            spawn_log = b""
        return Invocation(returncode, status, xml, spawn_log, summary, missing_mounts, failure)


def _relay(output: Iterable[bytes], quiet: bool = False) -> tuple[list[str], list[str]]:
    """Relays Bazel's output (its lines, as they come) to stderr, each line escaped and prefixed
    (RELAY_PREFIX), unless `quiet`; returns its process summary and the block paths its sandbox
    found missing."""
    summary: list[str] = []
    missing_mounts: list[str] = []
    if quiet:
        BAZEL_OUTPUT.info(RELAY_PREFIX + "(the output of the hidden samples' invocation is not shown)")
    for raw in output:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not quiet:
            BAZEL_OUTPUT.info(RELAY_PREFIX + visible(line))
        if _SUMMARY.search(line):
            # Bazel prints its process summary once, at the end; a test's output printed
            # earlier that looks like one is replaced by the real one.
            summary[:] = [visible(line.strip())]
        missing = _MISSING_MOUNT.search(line)
        if missing:
            missing_mounts.append(missing.group(1))
    return summary, missing_mounts


def _read_events(bep: str, *, failed: bool) -> tuple[dict[str, str], dict[str, list[str]], BuildFailure | None]:
    """`parse_bep` of the event file at `bep`, and `build_failure` when the invocation `failed`
    (exit 1): a missing event file then means Bazel did not get as far as the build.

    Raises:
        GateError: (exit 1) when it cannot be read or parsed.
    """
    try:
        with open(bep, encoding="utf-8") as f:
            lines = f.readlines()
        status, xml = parse_bep(lines)
        return status, xml, build_failure(lines) if failed else None
    except FileNotFoundError:
        if not failed:
            raise GateError("Bazel wrote no build event file; the gate cannot tell what ran") from None
        return {}, {}, BuildFailure(True, "", "Bazel failed before the build started and wrote no build event file; "
                                              "see its output")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise GateError(f"cannot read Bazel's build event file: {exc}") from None


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
    """

    flags: Sequence[str] = ()
    startup_flags: Sequence[str] = ()
    block: Sequence[str] = ()
    strategy: str = "linux-sandbox"
    sealed_root: SealedRoot | None = None
    exact_env: bool = False
    one_server: bool = False
    kept: KeptRoot | None = None


def run_bazel(repo: str, environ: Mapping[str, str], spec: RunSpec = RunSpec()) -> BazelRun:
    """Runs the oracle test and the harness in `repo` in three Bazel invocations, and returns the
    results of exactly those invocations (docs/design.md section 10).

    1. `bazel build //oracles/...` without the observations and the judge: the pin check and the
       draw, gate code only, with nothing blocked (they read `oracles/`), as persistent workers
       under the Linux-sandbox strategy (`worker_flags`); the execution log must show no other spawn.
    2. `bazel test //harness/... //oracles/...` without the judge: every action of the change's code
       (the caller action, the harness) with `--sandbox_block_path` for what `_Run.blocked` lists,
       and no fallback to unsandboxed execution: an action or test tagged `local` or `no-sandbox`
       cannot run, and the execution log must show none that did.
    3. `bazel test //oracles/...`: the judge, which reads the sealed expectations view. Every other
       action is an action-cache hit from 1 and 2; the execution log must show that nothing but the
       oracle test ran.

    Every invocation runs with the flags of `_run_flags`. Event files and execution logs live in a
    folder under `runs_dir`, which sandboxed actions can neither write (it is not `/tmp`) nor read
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
    env = dict(environ) if spec.exact_env else clean_env(environ)
    if not (spec.one_server and spec.sealed_root is not None):
        return _run_with(Launcher(repo, env, tuple(spec.startup_flags), spec.sealed_root), environ, spec)
    if spec.kept is not None:  # the server goes on (the root ends instead should the run raise)
        with spec.kept.session(spec.sealed_root, repo, env) as session:
            return _run_with(Launcher(repo, env, tuple(spec.startup_flags), spec.sealed_root, session), environ, spec)
    with RootSession(spec.sealed_root, repo, env, spec.sealed_root.folder) as session:
        launcher = Launcher(repo, env, tuple(spec.startup_flags), spec.sealed_root, session)
        try:
            return _run_with(launcher, environ, spec)
        finally:
            try:
                launcher.shutdown()
            except GateError:  # the root already stopped: closing the session ends what is left
                pass


def _run_with(launcher: Launcher, environ: Mapping[str, str], spec: RunSpec) -> BazelRun:
    """`run_bazel`'s commands, through `launcher`."""
    repo = launcher.repo
    help_text = launcher.help_test()
    # The .bazelrc configs of every command (`common:` lines reach `query`), not the remote ones,
    # which `.bazelrc` defines for `build` only.
    configs = [*config_flags(environ), *lockfile_flags(help_text)]
    extra = [*configs, *spec.flags]
    info = launcher.info(extra, "bazel-bin", "bazel-testlogs", "output_base")
    sealed_by = spec.sealed_root.description() if spec.sealed_root is not None else ""
    harness = [p for p in test_patterns(repo) if p != ORACLE_PATTERN]
    dependents = launcher.oracle_dependents(configs, [*harness, ORACLE_PATTERN])
    if dependents:
        return BazelRun(build_failed=True, sealed_by=sealed_by, oracle_dependents=dependents)
    # Inside a sealed root, the run's own folder holds everything and other runs do not exist.
    folder = spec.sealed_root.folder if spec.sealed_root is not None else runs_dir(environ)
    fixed, siblings = _blocks(launcher, spec, info, folder, environ)
    work = tempfile.mkdtemp(prefix="run-", dir=folder)
    try:
        run = _Run(launcher, confined_flags(extra, spec.strategy), lambda path: execution_log_flags(help_text, path),
                   work, harness, info)
        run.fixed, run.siblings = fixed, siblings
        run.workers = worker_flags(spec.strategy)
        return run.invocations(sealed_by)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def confined_flags(extra: Sequence[str], strategy: str) -> list[str]:
    """The flags of every invocation of a run (and of the hidden phase's, runs/hidden_phase.py): `extra`, then `--spawn_strategy=STRATEGY`,
    `--incompatible_legacy_local_fallback=false`, `--sandbox_default_allow_network=false`,
    `--modify_execution_info` that removes every action's `requires-network`,
    `--sandbox_fake_username` (actions run as `nobody`, without capabilities) and
    `--noremote_upload_local_results` (nothing this run computes is written to a remote cache)."""
    # No unsandboxed fallback, and no network in the sandbox (the Bazel servers listen on loopback):
    # a `requires-network` tag cannot opt an action back in. Inside the sandbox an action runs as
    # `nobody` in its own user namespace, without capabilities: run as root it could otherwise
    # unmount the blocked paths and remount the host read-write.
    # No result computed here is written to a remote cache: a shared cache that took a pull
    # request's results would serve them to later runs (docs/remote-execution.md).
    return [*extra, f"--spawn_strategy={strategy}", "--incompatible_legacy_local_fallback=false",
            "--sandbox_default_allow_network=false", f"--modify_execution_info={NO_NETWORK_OPT_IN}",
            "--sandbox_fake_username", "--noremote_upload_local_results", "--test_output=errors"]


def _blocks(launcher: Launcher, spec: RunSpec, info: Mapping[str, str], folder: str,
            environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """What the change's invocation hides, as (fixed paths, other runs' folders): `spec.block`, the
    gate's own code where an action could rewrite it, this output base's sealed views, test logs
    and server folder and the other output bases; and, outside a sealed root, the other runs'
    folders in `folder` and the gate's cache entries that hold copies of the oracles (blocks.py).
    Listed before this run makes its own folder there."""
    block = [*spec.block, *gate_code_blocks(gate_code_root(), launcher.repo)]
    siblings: list[str] = []
    if spec.sealed_root is not None:
        block = [path for path in block if spec.sealed_root.shows(path)]
    else:
        keep = [os.path.realpath(p) for p in (launcher.repo, info["output_base"])]
        siblings = [*sibling_runs(folder, launcher.repo), *gate_cache_entries(folder, environ, keep)]
    own = output_base_blocks(info["bazel-bin"], info["bazel-testlogs"], info["output_base"])
    for path in own[:2]:  # the sealed views and the oracle test logs: blocked before they exist
        os.makedirs(path, exist_ok=True)
    return [*block, *own], siblings


def gate_failure(failure: BuildFailure | None) -> BuildFailure:
    """`failure` of an invocation that builds only the gate's own targets (the views, the judge):
    a set-up failure unless its root cause is a target outside the oracles package (a production
    or harness target the change's BUILD files declare), since nothing else there is the change's."""
    if failure is None:
        return BuildFailure(True, "", "Bazel's events name no root cause; see its output")
    if failure.setup or (failure.label.startswith(("//", "@//", "@@//")) and not is_oracle_target(failure.label)):
        return failure
    return BuildFailure(True, failure.label, f"the gate's own targets did not build: {failure.message}"
                        if failure.message else "the gate's own targets did not build; see Bazel's output")


class _Run:
    """The three invocations of one run in its work folder `work`: the event files and execution
    logs in `work/logs` (blocked while the change's code runs), and one fresh TMPDIR per
    invocation, since Bazel 4.2 makes the client's TMPDIR (else /tmp) writable to every sandboxed
    action, so it must hold nothing the gate or a later invocation reads."""

    def __init__(self, launcher: Launcher, flags: list[str], log_flags: Callable[[str], list[str]], work: str,
                 harness: list[str], info: Mapping[str, str]) -> None:
        self.launcher, self.flags, self.log_flags, self.harness, self.info = launcher, flags, log_flags, harness, info
        self.logs = os.path.join(work, "logs")
        self.tmp = {stage: os.path.join(work, f"tmp-{stage}") for stage in ("views", "change", "judge")}
        for path in (self.logs, *self.tmp.values()):
            os.makedirs(path)
        # What the change's invocation blocks (`_blocks`): fixed paths, and other runs' folders,
        # which may vanish while it runs.
        self.fixed: list[str] = []
        self.siblings: list[str] = []
        # The view-building invocation's own flags: the gate's actions as persistent workers.
        self.workers: list[str] = []

    @property
    def blocked(self) -> list[str]:
        """Every path the change's invocation blocks: listed before the run, and the sealed folders
        of every configuration as they are now (`blocks.sealed_folders`, after the views)."""
        return list(dict.fromkeys([*self.fixed, *sealed_folders(self.info["bazel-bin"]), *self.siblings, self.logs]))

    def bazel(self, command: str, flags: Sequence[str], targets: Sequence[str], stage: str, name: str) -> Invocation:
        """One invocation of this run (`Launcher.invoke`), its files named `name`, TMPDIR `stage`'s."""
        files = (os.path.join(self.logs, f"{name}.events.json"), os.path.join(self.logs, f"{name}.spawns.bin"))
        invocation = self.launcher.invoke(command, flags, targets, files, self.log_flags, self.tmp[stage])
        # Which invocation each process summary is of, for the report.
        invocation.summary = [f"{line.rstrip('.')} ({STAGE_NAMES[stage]})." for line in invocation.summary]
        return invocation

    def invocations(self, sealed_by: str) -> BazelRun:
        """Runs the three invocations (`run_bazel`) and reads what they ran (docs/design.md section 10).
        No hidden sample exists in the tree: the hidden phase runs them later, in a root of its own
        (runs/hidden_phase.py)."""
        views = self.bazel("build", [*self.flags, *self.workers, f"--build_tag_filters=-{JUDGE_TAG},-{OBSERVATIONS_TAG},-{HIDDEN_TAG}"],
                           [ORACLE_PATTERN], "views", "views")
        escaped = unexpected(read_spawns(views.spawn_log), VIEW_MNEMONICS, VIEW_OUTPUTS, "the gate's view-building invocation")
        if views.exit_code == 1:
            return BazelRun(build_failed=True, failure=gate_failure(views.failure), summary=views.summary,
                            blocked=self.blocked, escapes=escaped, sealed_by=sealed_by)
        guard = arm([*sealed_folders(self.info["bazel-bin"]), os.path.join(self.info["bazel-testlogs"], "oracles")],
                    [os.path.join(self.launcher.repo, "oracles")])
        change = self.change()
        spawns = read_spawns(change.spawn_log)
        escaped += unconfined(spawns)
        taken = traces(guard, spawns, execroot(self.info["bazel-bin"]))
        escaped += taken
        if change.exit_code == 1:
            return BazelRun(targets=change.status, build_failed=True, failure=change.failure,
                            summary=views.summary + change.summary,
                            blocked=self.blocked, escapes=escaped, sealed_by=sealed_by, collected=bool(taken))
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
            blocked=self.blocked,
            escapes=escaped,
            sealed_by=sealed_by,
            collected=bool(taken),
        )

    def change(self) -> Invocation:
        """The invocation of the change's code, run again (at most VANISHED_RETRIES times) without
        the other runs' folders that vanished meanwhile.

        Raises:
            TakenError: (exit 4) when a blocked path of this run's own went missing: the change's
                action took it through output collection.
            GateError: (exit 1) when other runs' folders keep vanishing.
        """
        for attempt in range(VANISHED_RETRIES + 1):
            change = self.bazel("test", [*self.flags, f"--build_tag_filters=-{JUDGE_TAG}",
                                         f"--test_tag_filters=-{JUDGE_TAG}", *block_flags(self.blocked)],
                                [*self.harness, ORACLE_PATTERN], "change", f"change-{attempt}")
            # Another gate run on this machine may finish, and remove its folder, between the listing
            # above and an action's start; Bazel then cannot block it and the build fails. Such a
            # folder no longer needs blocking: run again without it. Any other missing path is an error.
            vanished = set(change.missing_mounts)
            if change.exit_code != 1 or not vanished:
                return change
            others = vanished - set(self.siblings)
            if others:  # a path of this run's own: only output collection moves one away mid-run
                raise TakenError(f"Bazel could not block {sorted(others)[0]} from the sandbox: it went missing while "
                                 "the change's code ran, as a folder an action's output collected through a symlinked "
                                 "folder takes (docs/threat-model.md)")
            if attempt == VANISHED_RETRIES:
                raise GateError(f"Bazel could not block {sorted(vanished)[0]} from the sandbox: another run's folder "
                                "kept vanishing during the run; run the gate again")
            self.siblings = [s for s in self.siblings if os.path.exists(s)]
        raise AssertionError("unreachable")


def failure_cause(stderr: str) -> str:
    """The one line of a failed Bazel (or bubblewrap) command's stderr that says why: its first
    line that starts with `ERROR:`, `FATAL:` or `bwrap:` (Bazel's and bubblewrap's own prefixes),
    else its last line, else "no output"."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("ERROR:", "FATAL:", "bwrap:")):
            return line
    return lines[-1] if lines else "no output"
