"""Starting Bazel for one run: on the host (`HostLauncher`) or inside the run's sealed root
(`SealedLauncher`), with the run environment resolved once (`launched`), so that nothing else asks
whether a run is sealed (docs/design.md section 10).

A launcher runs the run's Bazel commands (`help`, `info`, the query of what depends on the oracles
package, the invocations, `shutdown`) and relays their output; and it answers what depends on the
sealed root: where the run's work folder goes (`folder`), which paths exist to be blocked
(`blockable`), which other runs' folders and gate cache entries are blocked too (`other_runs`), and
the run's boundary for the report (`boundary`). `--symlink_prefix=/` keeps Bazel from creating
convenience symlinks, so the work tree is not written to.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from tools.oracle_gate.errors import PREFIX, GateError
from tools.oracle_gate.progress import BAZEL_OUTPUT
from tools.oracle_gate.runs.bazel_binary import resolve as resolve_bazel
from tools.oracle_gate.runs.blocks import gate_cache_entries, runs_dir, sibling_runs
from tools.oracle_gate.runs.events import BuildFailure, Invocation, build_failure, parse_bep
from tools.oracle_gate.runs.flags import clean_env
from tools.oracle_gate.runs.kept_root import KeptRoot
from tools.oracle_gate.runs.root_session import RootSession
from tools.oracle_gate.runs.sealed_root import SealedRoot
from tools.oracle_gate.text import visible

# Bazel exit codes: 0 ok, 3 some tests failed, 4 no tests found, 1 build failed.
_RESULT_EXITS = (0, 1, 3, 4)
# Bazel's process summary, e.g. "INFO: 9 processes: 2 remote, 7 internal."
_SUMMARY = re.compile(r"^INFO: \d+ process(es)?: ")
# What Bazel 4.2's linux-sandbox prints when a --sandbox_block_path target is gone when an action starts.
_MISSING_MOUNT = re.compile(r"Mount target '([^']+)' does not exist")
# Bazel's output (which includes the output of failed tests, i.e. text the change wrote) is relayed
# to stderr with this prefix on every line, escaped: it can never pass for a line of the gate's own.
RELAY_PREFIX = "bazel| "
# How long a Bazel child the gate stops (it was interrupted) has between SIGTERM and SIGKILL.
STOP_GRACE_S = 30.0
_NO_BAZEL = "bazel is not installed; run tools/setup.sh, or pass --results FILE"


def stop(proc: subprocess.Popen[bytes]) -> None:
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
        os.path.exists(os.path.join(repo, n)) for n in ("WORKSPACE", "WORKSPACE.bazel")
    ):
        return (
            "; this repository has MODULE.bazel and no WORKSPACE, which Bazel 4.2 does not read: run the gate "
            'with Bazel 7 (docs/adopting.md, "Bazel versions")'
        )
    return ""


@dataclass(frozen=True)
class Launcher:
    """How one run starts Bazel: in `repo`, with `env` as the whole environment, `startup_flags`
    before the command. The Bazel commands of a run; `HostLauncher` and `SealedLauncher` say where
    they run and answer what depends on that."""

    repo: str
    env: Mapping[str, str]
    startup_flags: Sequence[str] = ()

    @property
    def folder(self) -> str:
        """The folder the run's work folder (event files, execution logs, TMPDIRs) is made in."""
        raise NotImplementedError

    @property
    def boundary(self) -> str:
        """What stood between the run's Bazel and the host beyond Bazel's sandbox, one line for
        the report (`BazelRun.boundary`), or "" for nothing."""
        raise NotImplementedError

    def blockable(self, paths: Sequence[str]) -> list[str]:
        """Those of `paths` (absolute, host) that exist where Bazel runs, so can be blocked."""
        raise NotImplementedError

    def other_runs(self, output_base: str) -> list[str]:
        """Other runs' folders and the gate's cache entries that hold copies of the oracles, which
        the change's invocation blocks (blocks.py); listed before this run makes its own folder."""
        raise NotImplementedError

    def argv(self, cmd: list[str]) -> list[str]:
        """`cmd` as the process started for it runs it."""
        return cmd

    def command(self, *args: str) -> list[str]:
        """`bazel STARTUP_FLAGS ARGS...`."""
        return [resolve_bazel(self.env), *self.startup_flags, *args]

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                self.argv(self.command(*args)),
                cwd=self.repo,
                env=dict(self.env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
            )
        except FileNotFoundError:
            raise GateError(_NO_BAZEL) from None

    def _relayed(self, cmd: list[str], tmpdir: str | None, quiet: bool) -> tuple[list[str], list[str], int]:
        """Runs `cmd` (TMPDIR set to `tmpdir` when given), relaying its output (`_relay`); returns
        the process summary, the missing block paths and the exit code.

        Raises:
            GateError: (exit 1) when Bazel is missing or the sealed root stopped.
        """
        env = dict(self.env, TMPDIR=tmpdir) if tmpdir else dict(self.env)
        try:
            proc = subprocess.Popen(
                self.argv(cmd),
                cwd=self.repo,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        except FileNotFoundError:
            raise GateError(_NO_BAZEL) from None
        try:
            assert proc.stdout is not None
            summary, missing_mounts = _relay(proc.stdout, quiet)
            return summary, missing_mounts, proc.wait()
        finally:
            stop(proc)

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
        config = [
            f
            for f in flags
            if f.startswith(("--config=", "--compilation_mode", "--remote_", "--tls_", "--lockfile_mode"))
        ]
        proc = self._run("info", *config, *keys)
        values = {}
        for line in proc.stdout.splitlines():
            key, sep, value = line.partition(": ")
            if sep and key in keys:
                values[key] = value.strip()
        if len(keys) == 1 and proc.stdout.strip() and not values:
            values[keys[0]] = proc.stdout.strip()
        if proc.returncode != 0 or set(values) != set(keys):
            raise GateError(
                f"`bazel info {' '.join(keys)}` failed: {visible(failure_cause(proc.stderr))}{bzlmod_hint(self.repo)}"
            )
        return values

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
            last = [line for line in proc.stderr.strip().splitlines() if line.startswith("ERROR")][-1:] or [
                str(proc.returncode)
            ]
            raise GateError(f"`bazel query` of what depends on the oracles package failed: {visible(last[0])}")
        return sorted(line.strip() for line in proc.stdout.splitlines() if line.strip())

    def invoke(
        self,
        command: str,
        flags: Sequence[str],
        targets: Sequence[str],
        files: tuple[str, str],
        log_flags: Callable[[str], list[str]],
        tmpdir: str | None = None,
        quiet: bool = False,
    ) -> Invocation:
        """Runs one `bazel COMMAND`, relaying its output, with its event file and execution log at
        `files` (two paths), TMPDIR set to `tmpdir` when given. `quiet`: Bazel's output is read for
        its process summary only, never relayed or logged, and a failure names no message (the
        hidden callers' invocation: a failed action's output could quote a hidden sample).

        Raises:
            GateError: (exit 1) when Bazel is missing, exits for a reason other than a build or test
                failure, or its event file or execution log cannot be read.
        """
        bep, execution_log = files
        cmd = self.command(
            command,
            "--symlink_prefix=/",
            f"--build_event_json_file={bep}",
            *log_flags(execution_log),
            *flags,
            "--",
            *targets,
        )
        BAZEL_OUTPUT.info(visible(f"{PREFIX} running " + " ".join(cmd)))
        summary, missing_mounts, returncode = self._relayed(cmd, tmpdir, quiet)
        if returncode not in _RESULT_EXITS:
            raise GateError(
                f"`bazel {command} {' '.join(targets)}` exited {returncode}"
                + ("; its output is not shown (it ran the hidden samples)" if quiet else "; see Bazel's output above")
            )
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


@dataclass(frozen=True)
class HostLauncher(Launcher):
    """Bazel on the host, as the caller's own. `gate_env` is the gate's environment, which names
    the run folder and the gate's cache folders (`blocks.runs_dir`, `blocks.gate_cache_entries`)."""

    gate_env: Mapping[str, str] = field(default_factory=dict)

    @property
    def folder(self) -> str:
        """`blocks.runs_dir` of the gate's environment, where the other runs' folders lie too."""
        return runs_dir(self.gate_env)

    @property
    def boundary(self) -> str:
        """ "": nothing beyond Bazel's sandbox."""
        return ""

    def blockable(self, paths: Sequence[str]) -> list[str]:
        """All of `paths`: the host has every one."""
        return list(paths)

    def other_runs(self, output_base: str) -> list[str]:
        """The other runs' folders in `folder` and the gate's cache entries beside it, but for those
        that hold the work tree or `output_base`, which the run needs."""
        folder = self.folder
        keep = [os.path.realpath(p) for p in (self.repo, output_base)]
        return [*sibling_runs(folder, self.repo), *gate_cache_entries(folder, self.gate_env, keep)]


@dataclass(frozen=True, kw_only=True)
class SealedLauncher(Launcher):
    """Bazel inside `root` (sealed_root.py): through `session`, one shell in that root running every
    command in turn (one Bazel server), when given; else each command in a root of its own."""

    root: SealedRoot
    session: RootSession | None = None

    @property
    def folder(self) -> str:
        """The root's own folder: inside it, other runs' folders do not exist."""
        return self.root.folder

    @property
    def boundary(self) -> str:
        """The root's description (`SealedRoot.description`)."""
        return self.root.description()

    def blockable(self, paths: Sequence[str]) -> list[str]:
        """Those of `paths` the root shows (`SealedRoot.shows`): the others do not exist there."""
        return [path for path in paths if self.root.shows(path)]

    def other_runs(self, output_base: str) -> list[str]:
        """None: no other run's folder exists inside the root."""
        return []

    def argv(self, cmd: list[str]) -> list[str]:
        """`cmd` wrapped to run inside the root, in `repo`."""
        return self.root.wrap(cmd, self.repo)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        if self.session is None:
            return super()._run(*args)
        return self.session.run(self.command(*args))

    def _relayed(self, cmd: list[str], tmpdir: str | None, quiet: bool) -> tuple[list[str], list[str], int]:
        if self.session is None:
            return super()._relayed(cmd, tmpdir, quiet)
        lines, code = self.session.stream(cmd, {"TMPDIR": tmpdir} if tmpdir else {})
        summary, missing_mounts = _relay(lines, quiet)
        return summary, missing_mounts, code[0]


@contextmanager
def launched(
    repo: str,
    environ: Mapping[str, str],
    startup_flags: Sequence[str],
    root: SealedRoot | None,
    *,
    exact_env: bool = False,
    one_server: bool = False,
    kept: KeptRoot | None = None,
) -> Iterator[Launcher]:
    """The launcher of one run in `repo`, its environment resolved once: `environ` as it is with
    `exact_env`, else without the variables `bazel run` set (`flags.clean_env`).

    Args:
        repo: the workspace.
        environ: the gate's environment.
        startup_flags: flags before every command.
        root: run inside this sealed root; None: on the host.
        exact_env: pass `environ` to Bazel as it is.
        one_server: with `root`, run every command through one session (`session_launcher`); with
            `kept` too, the session runs in that kept root, which goes on after the run.
        kept: the kept root (kept_root.py) of `one_server`.

    Raises:
        GateError: (exit 1) when the root's shell cannot start.
    """
    env = dict(environ) if exact_env else clean_env(environ)
    if root is None:
        yield HostLauncher(repo, env, tuple(startup_flags), gate_env=environ)
    elif not one_server:
        yield SealedLauncher(repo, env, tuple(startup_flags), root=root)
    elif kept is not None:  # the server goes on (the root ends instead should the run raise)
        with kept.session(root, repo, env) as session:
            yield SealedLauncher(repo, env, tuple(startup_flags), root=root, session=session)
    else:
        with session_launcher(root, repo, env, startup_flags) as launcher:
            yield launcher


@contextmanager
def session_launcher(
    root: SealedRoot, repo: str, env: Mapping[str, str], startup_flags: Sequence[str]
) -> Iterator[SealedLauncher]:
    """A launcher through a fresh session of `root` (root_session.py) in `repo`, with `env` as its
    whole environment; at the end the session closes, ending the root. No `bazel shutdown` (0.45 s
    on the bench repository): the root's pid namespace ends with its shell, the kernel kills every
    process left in it, the server included, and the session waits until none is left
    (root_session.py).

    Raises:
        GateError: (exit 1) when bwrap cannot start.
    """
    with RootSession(root, repo, env, root.folder) as session:
        yield SealedLauncher(repo, env, tuple(startup_flags), root=root, session=session)


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
        return (
            {},
            {},
            BuildFailure(
                True, "", "Bazel failed before the build started and wrote no build event file; see its output"
            ),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise GateError(f"cannot read Bazel's build event file: {exc}") from None


def failure_cause(stderr: str) -> str:
    """The one line of a failed Bazel (or bubblewrap) command's stderr that says why: its first
    line that starts with `ERROR:`, `FATAL:` or `bwrap:` (Bazel's and bubblewrap's own prefixes),
    else its last line, else "no output"."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("ERROR:", "FATAL:", "bwrap:")):
            return line
    return lines[-1] if lines else "no output"
