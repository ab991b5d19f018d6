"""Runs the oracle test and the harness with `bazel test` and reads the results of that invocation
(docs/design.md sections 5 and 10).

The test targets and their `test.xml` files come from the Build Event Protocol file of the run, so a
stale `test.xml` left by an earlier build is never read. `--symlink_prefix=/` keeps Bazel from
creating convenience symlinks, so the work tree is not written to.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from tools.oracle_gate.runs.bazel_binary import resolve as resolve_bazel
from tools.oracle_gate.errors import PREFIX, GateError
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
from tools.oracle_gate.runs.seal import Seal
from tools.oracle_gate.runs.results import FileResult, Observed, judge_target, merge_observed, read_result
from tools.oracle_gate.text import visible

# The protected package whose test targets report invariant outcomes (oracles/BUILD.bazel), and the
# agent-writable one whose tests must pass but count for nothing else.
ORACLE_PATTERN = "//oracles/..."
HARNESS_PATTERN = "//harness/..."
ORACLE_LABEL_PREFIXES = ("//oracles:", "//oracles/", "@//oracles:", "@//oracles/")
# Tags `oracle_test` (tools/bazel/private/oracle_test.bzl) puts on its observations and judge
# targets, so each of the gate's three invocations selects its own part of the oracles package.
OBSERVATIONS_TAG = "oracle_observations"
JUDGE_TAG = "oracle_judge"
# Bazel exit codes: 0 ok, 3 some tests failed, 4 no tests found, 1 build failed.
_RESULT_EXITS = (0, 1, 3, 4)
# Bazel's process summary, e.g. "INFO: 9 processes: 2 remote, 7 internal."
_SUMMARY = re.compile(r"^INFO: \d+ process(es)?: ")
# What Bazel 4.2's linux-sandbox prints when a --sandbox_block_path target is gone when an action starts.
_MISSING_MOUNT = re.compile(r"Mount target '([^']+)' does not exist")
# How often the change's invocation is run again when other runs' folders vanished meanwhile.
VANISHED_RETRIES = 3
# Bazel's output (which includes the output of failed tests, i.e. text the change wrote) is relayed
# to stderr with this prefix on every line, escaped: it can never pass for a line of the gate's own.
RELAY_PREFIX = "bazel| "
# How long a Bazel child the gate stops (it was interrupted) has between SIGTERM and SIGKILL.
STOP_GRACE_S = 30.0
# Variables that `bazel run` sets for the gate itself; a nested Bazel must not inherit them.
_DROP_PREFIXES = ("RUNFILES_", "PYTHON", "BUILD_", "TEST_", "JAVA_RUNFILES", "BAZEL_")


@dataclass
class HarnessRun:
    """Outcome of one `bazel test` of the harness.

    Attributes:
        exit_code: Bazel's exit code.
        outcomes: id -> passed/failed/error/skipped, from the oracle test targets only.
        targets: label -> Bazel's overall status for that target (PASSED, FAILED, ...).
        build_failed: True when Bazel could not build something (exit 1).
        summary: Bazel's process summary lines, e.g. `INFO: 7 processes: 2 remote cache hit, 5 internal.`
        observed: id -> outcome and observation digests, from the oracle test targets only; when
            empty, `outcomes` stands alone (no digests).
        ignored: label -> ids named by `[<id>]` testcases of a target outside the oracles package.
        sealed: the paths blocked from every sandboxed action of the run (`--sandbox_block_path`).
        escapes: spawns that ran where the gate does not allow it: unsandboxed in the invocation of
            the change's code, or anything but the gate's own actions in the gate's invocations.
        sealing: what sealed the run beyond Bazel's sandbox (`Seal.description`), or "" for none.
        oracle_dependents: targets outside the `oracles` package that the run would build and
            that depend on a file or target of it (`oracle_dependents`); when any, nothing ran.
    """

    exit_code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    build_failed: bool = False
    summary: list[str] = field(default_factory=list)
    observed: dict[str, Observed] = field(default_factory=dict)
    ignored: dict[str, list[str]] = field(default_factory=dict)
    sealed: list[str] = field(default_factory=list)
    escapes: list[Escape] = field(default_factory=list)
    sealing: str = ""
    oracle_dependents: list[str] = field(default_factory=list)

    def observations(self) -> dict[str, Observed]:
        """id -> Observed, falling back to digest-less outcomes."""
        return self.observed or {i: Observed(o) for i, o in self.outcomes.items()}

    def harness_failures(self) -> dict[str, str]:
        """label -> status of every test target outside the oracles package that did not pass."""
        return {label: status for label, status in sorted(self.targets.items())
                if not is_oracle_target(label) and status != "PASSED"}


def is_oracle_target(label: str) -> bool:
    """True for a target of the protected `oracles` package (or one of its subpackages)."""
    return label.startswith(ORACLE_LABEL_PREFIXES)


# `--modify_execution_info` value: every mnemonic loses `requires-network` (a tag a BUILD file sets
# to get the host's network in the sandbox).
NO_NETWORK_OPT_IN = ".*=-requires-network"


def run_flags(salt: str, run: str) -> list[str]:
    """Bazel flags that give the oracle suite its salt and the caller its run environment
    (`tools/bazel/private/oracle_test.bzl`)."""
    return [f"--define=oracle_salt={salt}", f"--define=oracle_run={run}"]


def repository_seal(repo: str) -> list[str]:
    """The paths of a repository that hold expected values and that no sandboxed action needs: its
    `oracles/` folder and its git directories (real paths, so a symlink cannot route around them).

    Raises:
        GateError: (exit 1) when git cannot name the git directory.
    """
    paths = [os.path.realpath(os.path.join(repo, "oracles"))]
    for flag in ("--absolute-git-dir", "--git-common-dir"):
        proc = subprocess.run(["git", "-C", repo, "rev-parse", flag], capture_output=True, text=True, check=False,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not proc.stdout.strip():
            raise GateError(f"`git rev-parse {flag}` failed in {repo}: {proc.stderr.strip()}")
        paths.append(os.path.realpath(os.path.join(repo, proc.stdout.strip())))
    for other in local_copies(repo, paths[-1]):
        paths += [os.path.join(other, "oracles"), os.path.join(other, ".git"), other if _is_bare(other) else ""]
    return [p for p in dict.fromkeys(os.path.realpath(p) for p in paths if p) if os.path.isdir(p)]


def _is_bare(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))


def local_copies(repo: str, common_dir: str) -> list[str]:
    """Other copies of the repository on this host that git itself names: remotes whose URL is a
    local path (`/path`, `./path`, `file://`), and the repositories of `objects/info/alternates`.
    Each holds the oracles too, so the gate blocks their `oracles/` and git directory as well.
    Copies git does not name (an unrelated second clone) stay out of reach (docs/threat-model.md).

    Args:
        repo: the work tree.
        common_dir: its git common directory (`git rev-parse --git-common-dir`, real path).

    Returns:
        Real paths of the copies' top folders (work tree or bare repository), ones that exist.
    """
    proc = subprocess.run(["git", "-C", repo, "config", "--get-regexp", r"^remote\..*\.url$"], capture_output=True,
                          text=True, check=False, stdin=subprocess.DEVNULL)
    found: list[str] = []
    for line in proc.stdout.splitlines():
        url = line.split(" ", 1)[1].strip() if " " in line else ""
        if url.startswith("file://"):
            url = url[len("file://"):]
        elif ":" in url.split("/", 1)[0]:  # scp-like `host:path` or a `scheme://` URL: not on this host
            continue
        if url:
            found.append(os.path.realpath(os.path.join(repo, url)))
    try:
        with open(os.path.join(common_dir, "objects", "info", "alternates"), encoding="utf-8") as f:
            for line in f:
                objects = line.strip()
                if objects and not objects.startswith("#"):
                    git_dir = os.path.dirname(os.path.realpath(os.path.join(common_dir, "objects", objects)))
                    found.append(os.path.dirname(git_dir) if os.path.basename(git_dir) == ".git" else git_dir)
    except OSError:
        pass
    return [p for p in dict.fromkeys(found) if os.path.isdir(p)]


_OUTPUT_BASE_NAME = re.compile(r"[0-9a-f]{32}")


def output_seal(bazel_bin: str, testlogs: str, output_base: str) -> list[str]:
    """The paths of output bases that hold expected values: this one's sealed views of the oracles
    package (`bazel-bin/oracles/_sealed`, see oracle_suite.bzl) and its oracle test logs, whose
    failure messages name expected values, and every other output base under the same output
    user root (other workspaces and copies of this one, with their own views and pristine trees),
    and this output base's `server` folder, whose request cookie lets a client command the server."""
    paths = [os.path.join(bazel_bin, "oracles", "_sealed"), os.path.join(testlogs, "oracles"),
             # The Bazel server's request cookie: with it, an action could drive the server.
             os.path.join(output_base, "server")]
    root = os.path.dirname(os.path.realpath(output_base))
    try:
        siblings = sorted(os.listdir(root))
    except OSError:
        siblings = []
    own = os.path.basename(os.path.realpath(output_base))
    paths += [os.path.join(root, name) for name in siblings
              if name != own and _OUTPUT_BASE_NAME.fullmatch(name) and os.path.isdir(os.path.join(root, name))]
    return paths


def block_flags(paths: Sequence[str]) -> list[str]:
    """`--sandbox_block_path` flags for those of `paths` that exist (Bazel 4.2 refuses to block a
    path that does not), leaving out each path inside another one of them: the sandbox hides a
    blocked folder behind an empty one, so a path below it no longer exists there and Bazel's
    linux-sandbox fails the action when it tries to block it too (`mount(...): No such file or
    directory`). The folder's block covers it."""
    present = [path for path in dict.fromkeys(paths) if os.path.lexists(path)]
    folders = {p.rstrip("/") + "/" for p in present}
    return [f"--sandbox_block_path={path}" for path in present
            if not any(path.startswith(folder) and path != folder.rstrip("/") for folder in folders)]


def test_patterns(repo: str) -> list[str]:
    """The target patterns of a run: the oracles package, and the harness when it has a BUILD file."""
    patterns = [ORACLE_PATTERN]
    if any(os.path.isfile(os.path.join(repo, "harness", name)) for name in ("BUILD", "BUILD.bazel")):
        patterns.append(HARNESS_PATTERN)
    return patterns


def clean_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Returns `environ` without the variables `bazel run` set for the current process."""
    return {k: v for k, v in environ.items() if not k.startswith(_DROP_PREFIXES)}


def _file_uri_path(uri: str) -> str:
    """The local path of a `file://` URI, or "" for a remote one (`bytestream://` under remote
    execution), whose local copy is found in the test-log directory instead."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme == "bytestream":
        return ""
    raise GateError(f"Bazel reported test.xml at {uri!r}, which is neither a local file nor a remote blob")


def junit_path_in_testlogs(testlogs: str, label: str) -> str:
    """The test.xml path of a (non-sharded) test target under Bazel's test-log directory.

    Raises:
        GateError: for a label outside the main repository.
    """
    if not label.startswith("//") or ":" not in label:
        raise GateError(f"cannot place the test log of {label!r}")
    package, name = label[2:].split(":", 1)
    return os.path.join(testlogs, package, name, "test.xml")


def parse_bep(lines: Sequence[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Reads a JSON Build Event Protocol file.

    Returns:
        (status, xml): label -> overall test status, and label -> paths of its test.xml files.
    """
    status: dict[str, str] = {}
    xml: dict[str, list[str]] = {}
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        ident = event.get("id", {})
        if "testResult" in ident and "testResult" in event:
            label = ident["testResult"]["label"]
            for out in event["testResult"].get("testActionOutput", []):
                if out.get("name") == "test.xml" and out.get("uri"):
                    xml.setdefault(label, []).append(_file_uri_path(out["uri"]))
        elif "testSummary" in ident and "testSummary" in event:
            status[ident["testSummary"]["label"]] = event["testSummary"].get("overallStatus", "")
        elif "targetCompleted" in ident and event.get("completed", {}).get("success") is False:
            status.setdefault(ident["targetCompleted"]["label"], "FAILED_TO_BUILD")
        elif "targetCompleted" in ident and "aborted" in event:
            status.setdefault(ident["targetCompleted"]["label"], "FAILED_TO_BUILD")
    return status, xml


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


def _info(repo: str, env: Mapping[str, str], startup_flags: Sequence[str], flags: Sequence[str],
          *keys: str, seal: Seal | None = None) -> dict[str, str]:
    """`bazel info KEY...` with the same startup options and configuration flags as the test run.

    Returns:
        key -> value for each key asked.

    Raises:
        GateError: (exit 1) when Bazel fails or does not print every key.
    """
    # Output paths depend on the configuration; remote flags because `info` connects to the engine.
    config = [f for f in flags
              if f.startswith(("--config=", "--compilation_mode", "--remote_", "--tls_", "--lockfile_mode"))]
    proc = subprocess.run(_command(seal, [resolve_bazel(env), *startup_flags, "info", *config, *keys], repo), cwd=repo, env=dict(env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    values = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in keys:
            values[key] = value.strip()
    if len(keys) == 1 and proc.stdout.strip() and not values:
        values[keys[0]] = proc.stdout.strip()
    if proc.returncode != 0 or set(values) != set(keys):
        raise GateError(f"`bazel info {' '.join(keys)}` failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
    return values


@dataclass
class Invocation:
    """One `bazel` command of a run: its exit code, test statuses, test.xml paths, spawns, summary."""

    exit_code: int
    status: dict[str, str]
    xml: dict[str, list[str]]
    spawn_log: bytes
    summary: list[str]
    missing_mounts: list[str] = field(default_factory=list)


# Folders Bazel 4.2's linux-sandbox leaves writable to every action, whatever the flags.
SANDBOX_WRITABLE = ("/tmp", "/dev/shm")


def runs_dir(environ: Mapping[str, str]) -> str:
    """Where the gate keeps a run's files (event files, execution logs, the clean run's tree):
    `$XDG_CACHE_HOME/oracle-gate/runs`, else `$HOME/.cache/oracle-gate/runs`.

    Raises:
        GateError: (exit 1) when that folder is relative, or lies under `/tmp` or `/dev/shm`, which
            Bazel 4.2's sandbox leaves writable to every action, so the change's code could rewrite
            what the gate reads.
    """
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".cache")
    if not os.path.isabs(cache):
        raise GateError(f"the gate's cache folder {cache!r} is not an absolute path; set XDG_CACHE_HOME (or HOME) "
                        "to an absolute path")
    path = os.path.join(cache, "oracle-gate", "runs")
    real = os.path.realpath(path)
    for top in SANDBOX_WRITABLE:
        if real == top or real.startswith(top + os.sep):
            raise GateError(f"the gate's run folder {path} is under {top}, which every sandboxed action can write; "
                            "set XDG_CACHE_HOME (or HOME) to a folder elsewhere")
    os.makedirs(path, exist_ok=True)
    return path


def gate_code_root() -> str:
    """The real path of the folder that holds this gate's `tools/` package."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def gate_code_blocks(root: str, repo: str) -> list[str]:
    """The gate's own code folder (`root`, `gate_code_root`) when it must be blocked from the
    change's sandboxed actions: it lies under `/tmp` or `/dev/shm`, which Bazel 4.2's sandbox
    lets every action write, so a change could rewrite the gate for its next run. Blocked, it
    is neither readable nor writable there. A gate inside the checked repository `repo` needs
    no block: the sandbox mounts the workspace read-only, also under `/tmp`.

    Returns:
        `[real path of root]`, or `[]`.

    Raises:
        GateError: (exit 1) when `root` is `/tmp` or `/dev/shm` itself, which cannot be blocked.
    """
    real = os.path.realpath(root)
    workspace = os.path.realpath(repo)
    if real == workspace or real.startswith(workspace + os.sep):
        return []
    for top in SANDBOX_WRITABLE:
        if real == top:
            raise GateError(f"the gate's own code lies directly in {top} ({os.path.join(real, 'tools', 'oracle_gate')}), "
                            f"which every sandboxed action can write and the gate cannot block; keep the gate's "
                            f"checkout in a folder of its own, outside {top} (docs/ci.md)")
        if real.startswith(top + os.sep):
            return [real]
    return []


def sibling_runs(folder: str, own: str) -> list[str]:
    """The other runs' folders in `folder` (another run's pristine tree holds its oracles)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    own_real = os.path.realpath(own)
    return [os.path.join(folder, n) for n in names
            if os.path.isdir(os.path.join(folder, n)) and not own_real.startswith(os.path.realpath(os.path.join(folder, n)))]


# Where the loopback engine, the Bazel 7 root and BuildGrid live when not in the default cache folder.
GATE_CACHE_ENV = "ORACLE_GATE_CACHE"
# Where tools/bazel7/bazel7.sh keeps its Debian sid root when not in that cache folder.
SID_ROOT_ENV = "ORACLE_GATE_SID_ROOT"


# Folders the gate's own tools keep in its cache folder that can hold copies of the oracles: the
# Bazel 7 root of tools/bazel7/bazel7.sh (with its own output bases), and the loopback engine's
# storage (`oracle_gate engine`, tools/bazel7/remote_check.py), whose CAS holds the uploaded views.
GATE_CACHE_COPIES = ("sid-root", "sid-root.partial", "engine", "remote7-")


def gate_cache_entries(runs_folder: str, environ: Mapping[str, str], keep: Sequence[str]) -> list[str]:
    """The folders the gate's own tools keep beside its run folder that can hold copies of the
    oracles (GATE_CACHE_COPIES: a name, or a prefix ending in `-`), in the run folder's parent and
    in `$ORACLE_GATE_CACHE`, and the sid root `$ORACLE_GATE_SID_ROOT` names (with its `.partial`
    build folder); none that holds a path of `keep` (the work tree, the output base), which the
    run needs. Other folders there (a checkout a generated repository depends on, say) are left
    readable.

    Args:
        runs_folder: `runs_dir(environ)`.
        environ: the environment; only GATE_CACHE_ENV and SID_ROOT_ENV are read.
        keep: real paths that must stay readable.
    """
    parents = [os.path.dirname(runs_folder)] + ([environ[GATE_CACHE_ENV]] if environ.get(GATE_CACHE_ENV) else [])
    candidates: list[str] = []
    for parent in dict.fromkeys(os.path.realpath(p) for p in parents):
        try:
            names = sorted(os.listdir(parent))
        except OSError:
            continue
        candidates += [os.path.join(parent, name) for name in names
                       if any(name == c or (c.endswith("-") and name.startswith(c)) for c in GATE_CACHE_COPIES)]
    sid_root = environ.get(SID_ROOT_ENV, "")
    if os.path.isabs(sid_root):
        sid_root = os.path.realpath(sid_root)
        candidates += [sid_root, sid_root + ".partial"]
    found: list[str] = []
    for path in dict.fromkeys(candidates):
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        if any(k == path or k.startswith(path + os.sep) for k in keep):
            continue
        found.append(path)
    return found


# The .bazelrc configs for every Bazel command of the gate's runs (config_flags).
BAZEL_CONFIG_ENV = "ORACLE_GATE_BAZEL_CONFIG"
# Names a `--config` may have (one word of a .bazelrc's `build:NAME`).
_CONFIG_NAME = re.compile(r"[A-Za-z0-9_.-]+\Z")


def config_flags(environ: Mapping[str, str]) -> list[str]:
    """`--config=NAME` for each comma-separated name in `$ORACLE_GATE_BAZEL_CONFIG` (BAZEL_CONFIG_ENV),
    in order: the .bazelrc configs every Bazel command of both runs uses (e.g. `bazel7-bzlmod`).

    Args:
        environ: the environment (variable name -> value); only BAZEL_CONFIG_ENV is read.

    Returns:
        The flags, empty when the variable is unset or blank.

    Raises:
        GateError: (exit 1) for a name that is not letters, digits, `_`, `.` or `-`.
    """
    flags = []
    for name in environ.get(BAZEL_CONFIG_ENV, "").split(","):
        name = name.strip()
        if not name:
            continue
        if not _CONFIG_NAME.match(name):
            raise GateError(f"{BAZEL_CONFIG_ENV}: {name!r} is not a .bazelrc config name "
                            "(letters, digits, `_`, `.`, `-`)")
        flags.append(f"--config={name}")
    return flags


def execution_log_flags(help_text: str, path: str) -> list[str]:
    """The flags that make this Bazel write its execution log to `path`, as `read_spawns` reads it,
    from the output of `bazel help test` (`help_text`).

    Bazel 7 writes the binary log (varint-delimited SpawnExec messages) with
    `--execution_log_binary_file` and, with `--noexecution_log_sort`, straight to `path`; it has no
    `--experimental_execution_log_file`. Bazel 4.2 writes the same messages with
    `--experimental_execution_log_file` (its `--execution_log_binary_file` leaves a copy in /tmp).
    A Bazel whose help lists `--[no]execution_log_sort` is taken for the first kind.
    """
    if "--[no]execution_log_sort" in help_text:
        return [f"--execution_log_binary_file={path}", "--noexecution_log_sort"]
    return [f"--experimental_execution_log_file={path}"]


def lockfile_flags(help_text: str) -> list[str]:
    """`--lockfile_mode=off` for a Bazel with bzlmod's lockfile (its `bazel help test` output,
    `help_text`, lists the option), else nothing.

    A committed `MODULE.bazel.lock` records module-extension results (for example which wheels a
    pip extension installs, with what options), which Bazel would reuse instead of evaluating the
    extension; and by default Bazel rewrites the file in the work tree. Off, Bazel neither reads
    nor writes it, so a run resolves from MODULE.bazel and leaves the work tree as it was.
    """
    return ["--lockfile_mode=off"] if "--lockfile_mode" in help_text else []


def oracle_dependents(repo: str, env: Mapping[str, str], startup_flags: Sequence[str], flags: Sequence[str],
                      patterns: Sequence[str], seal: Seal | None = None) -> list[str]:
    """The targets outside the `oracles` package, in the dependency closure of `patterns` (with
    the query `flags`: the .bazelrc configs and the lockfile mode), that
    depend on a file or target of that package: `bazel query 'rdeps(deps(P), //oracles:*) except
    //oracles:*'`. A change's target that depends on one (directly, or through a target of the
    gate that carries the oracle files, such as a test of the manifest) can copy expected values
    into an output the change's code reads: rules like `expand_template` and `write` run inside
    the Bazel server, where no sandbox applies. The gate runs nothing when the list is not empty.

    Raises:
        GateError: (exit 1) when the query fails for another reason than packages that do not load.
    """
    universe = " + ".join(patterns)
    expression = f"rdeps(deps({universe}), //oracles:*) except //oracles:*"
    # --keep_going: a package that does not load (a lock pip refuses, a broken BUILD file) leaves
    # the rest of the answer (exit 3); the build that follows fails on the same package, so
    # nothing the partial answer missed can run.
    proc = subprocess.run(_command(seal, [resolve_bazel(env), *startup_flags, "query", *flags, "--keep_going", "--output=label",
                                          expression], repo),
                          cwd=repo, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 3):
        last = [line for line in proc.stderr.strip().splitlines() if line.startswith("ERROR")][-1:] or [str(proc.returncode)]
        raise GateError(f"`bazel query` of what depends on the oracles package failed: {visible(last[0])}")
    return sorted(line.strip() for line in proc.stdout.splitlines() if line.strip())


def _command(seal: Seal | None, argv: list[str], cwd: str) -> list[str]:
    """`argv` as run: inside `seal`'s root when there is one."""
    return seal.wrap(argv, cwd) if seal is not None else argv


def _help_test(repo: str, env: Mapping[str, str], startup_flags: Sequence[str], seal: Seal | None = None) -> str:
    """The output of `bazel help test` (inside `seal`'s root when given).

    Raises:
        GateError: (exit 1) when Bazel is missing or `bazel help test` fails.
    """
    try:
        proc = subprocess.run(_command(seal, [resolve_bazel(env), *startup_flags, "help", "test"], repo), cwd=repo, env=dict(env),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise GateError("bazel is not installed; run tools/setup.sh, or pass --results FILE") from None
    if proc.returncode != 0:
        raise GateError(f"`bazel help test` failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
    return proc.stdout


def _bazel(repo: str, env: Mapping[str, str], startup_flags: Sequence[str], command: str, flags: Sequence[str],
           targets: Sequence[str], work: str, name: str, log_flags: Callable[[str], list[str]],
           seal: Seal | None = None) -> Invocation:
    """Runs one `bazel COMMAND` with an event file and an execution log in `work` (inside `seal`'s
    root when given).

    Raises:
        GateError: (exit 1) when Bazel is missing, exits for a reason other than a build or test
            failure, or its event file or execution log cannot be read.
    """
    bep = os.path.join(work, f"{name}.events.json")
    execution_log = os.path.join(work, f"{name}.spawns.bin")
    cmd = [resolve_bazel(env), *startup_flags, command, "--symlink_prefix=/", f"--build_event_json_file={bep}",
           *log_flags(execution_log), *flags, "--", *targets]
    print(visible(f"{PREFIX} running " + " ".join(cmd)), file=sys.stderr, flush=True)
    summary: list[str] = []
    missing_mounts: list[str] = []
    try:
        proc = subprocess.Popen(_command(seal, cmd, repo), cwd=repo, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except FileNotFoundError:
        raise GateError("bazel is not installed; run tools/setup.sh, or pass --results FILE") from None
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            sys.stderr.write(RELAY_PREFIX + visible(line) + "\n")
            if _SUMMARY.search(line):
                # Bazel prints its process summary once, at the end; a test's output printed
                # earlier that looks like one is replaced by the real one.
                summary[:] = [visible(line.strip())]
            missing = _MISSING_MOUNT.search(line)
            if missing:
                missing_mounts.append(missing.group(1))
        returncode = proc.wait()
    finally:
        stop(proc)
    sys.stderr.flush()
    if returncode not in _RESULT_EXITS:
        raise GateError(f"`bazel {command} {' '.join(targets)}` exited {returncode}; see Bazel's output above")
    try:
        with open(bep, encoding="utf-8") as f:
            status, xml = parse_bep(f.readlines())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GateError(f"cannot read Bazel's build event file: {exc}") from None
    try:
        with open(execution_log, "rb") as f:
            spawn_log = f.read()
    except FileNotFoundError:
        if returncode != 1:
            raise GateError("Bazel wrote no execution log; the gate cannot tell what ran where") from None
        spawn_log = b""
    return Invocation(returncode, status, xml, spawn_log, summary, missing_mounts)


def _read_results(invocation: Invocation, testlogs: str) -> tuple[list[dict[str, Observed]], dict[str, list[str]]]:
    """The oracle targets' observations and the ids other targets named, from test.xml files that
    must lie in this output base's test-log directory.

    Raises:
        GateError: (exit 1) for a test.xml outside `testlogs` or one that cannot be read.
    """
    xml = {label: [p or junit_path_in_testlogs(testlogs, label) for p in paths] for label, paths in invocation.xml.items()}
    root = os.path.realpath(testlogs) + os.sep
    maps: list[dict[str, Observed]] = []
    ignored: dict[str, list[str]] = {}
    for label in sorted(xml):
        files: list[FileResult] = []
        for path in xml[label]:
            if not os.path.realpath(path).startswith(root):
                raise GateError(f"Bazel's event file names {path!r} as test.xml of {label}, outside {testlogs}")
            try:
                with open(path, "rb") as f:
                    files.append(read_result(f.read(), path))
            except OSError as exc:
                raise GateError(f"cannot read test.xml of {label}: {exc.strerror}") from None
        if is_oracle_target(label):
            # Every attempt, shard and run of the target; a failure naming no id fails all its ids.
            maps.append(judge_target(files))
        else:
            named = {ident for f in files for ident in f.observed}
            if named:
                ignored[label] = sorted(named)
    return maps, ignored


def run_harness(
    repo: str,
    environ: Mapping[str, str],
    extra_flags: Sequence[str] = (),
    startup_flags: Sequence[str] = (),
    exact_env: bool = False,
    block: Sequence[str] = (),
    strategy: str = "linux-sandbox",
    seal: Seal | None = None,
) -> HarnessRun:
    """Runs the oracle test and the harness in `repo` in three Bazel invocations, and returns the
    results of exactly those invocations (docs/design.md section 10).

    1. `bazel build //oracles/...` without the observations and the judge: the pin check and the
       draw, gate code only, with nothing blocked (they read `oracles/`); the execution log must
       show no other spawn.
    2. `bazel test //harness/... //oracles/...` without the judge: every action of the change's code
       (the caller action, the harness) with `--sandbox_block_path` for `block`, `output_seal`, the
       other runs' folders and this run's own, and no fallback to unsandboxed execution: an action
       or test tagged `local` or `no-sandbox` cannot run, and the execution log must show none that did.
    3. `bazel test //oracles/...`: the judge, which reads the sealed expectations view. Every other
       action is an action-cache hit from 1 and 2; the execution log must show that nothing but the
       oracle test ran.

    Every invocation runs with `--spawn_strategy=STRATEGY`, `--incompatible_legacy_local_fallback=false`,
    `--sandbox_default_allow_network=false`, `--modify_execution_info` that removes every action's
    `requires-network`, `--sandbox_fake_username` (actions run as `nobody`, without capabilities)
    and `--noremote_upload_local_results` (nothing this run computes is written to a remote cache).

    Event files and execution logs live in a folder under `runs_dir`, which sandboxed actions can
    neither write (it is not `/tmp`) nor read (it is blocked); test.xml files are read only from
    this output base's test-log directory.

    Args:
        repo: the workspace to test.
        environ: the environment; without `exact_env`, variables `bazel run` set are dropped.
        extra_flags: flags for every invocation (e.g. `run_flags(salt, "workspace")`, `--config=remote`).
        startup_flags: flags before the command (e.g. `--output_user_root=DIR`, `--nohome_rc`).
        exact_env: pass `environ` to Bazel as it is.
        block: paths to block from every sandboxed action of invocation 2, besides `output_seal`
            and the gate's own code when it lies under `/tmp` or `/dev/shm` (`gate_code_blocks`).
        strategy: the spawn strategy of every invocation (`linux-sandbox`, or `remote`).
        seal: run every Bazel command inside this root (seal.py); the event files and logs then
            live in its folder, paths it does not show are not blocked (they do not exist there),
            and other runs' folders are out of sight.

    Raises:
        GateError: (exit 1) when Bazel is missing or fails for a reason other than a build or test
            failure, its event files or execution logs cannot be read, or the gate's own code lies
            directly in `/tmp` or `/dev/shm` (`gate_code_blocks`).
    """
    env = dict(environ) if exact_env else clean_env(environ)
    help_text = _help_test(repo, env, startup_flags, seal)
    extra_flags = [*config_flags(environ), *lockfile_flags(help_text), *extra_flags]
    info = _info(repo, env, startup_flags, extra_flags, "bazel-bin", "bazel-testlogs", "output_base", seal=seal)

    def log_flags(path: str) -> list[str]:
        return execution_log_flags(help_text, path)

    def bazel(command: str, invocation_flags: Sequence[str], targets: Sequence[str], stage: str, name: str) -> Invocation:
        return _bazel(repo, dict(env, TMPDIR=tmp[stage]), startup_flags, command, invocation_flags, targets, logs,
                      name, log_flags, seal)

    # No unsandboxed fallback, and no network in the sandbox (the Bazel servers listen on loopback):
    # a `requires-network` tag cannot opt an action back in. Inside the sandbox an action runs as
    # `nobody` in its own user namespace, without capabilities: run as root it could otherwise
    # unmount the blocked paths and remount the host read-write.
    # No result computed here is written to a remote cache: a shared cache that took a pull
    # request's results would serve them to later runs (docs/remote-execution.md).
    flags = [*extra_flags, f"--spawn_strategy={strategy}", "--incompatible_legacy_local_fallback=false",
             "--sandbox_default_allow_network=false", f"--modify_execution_info={NO_NETWORK_OPT_IN}",
             "--sandbox_fake_username", "--noremote_upload_local_results", "--test_output=errors"]
    harness = [p for p in test_patterns(repo) if p != ORACLE_PATTERN]
    sealing = seal.description() if seal is not None else ""
    # The .bazelrc configs of every command (`common:` lines reach `query`), not the remote ones,
    # which `.bazelrc` defines for `build` only.
    dependents = oracle_dependents(repo, env, startup_flags, [*config_flags(environ), *lockfile_flags(help_text)],
                                   [*harness, ORACLE_PATTERN], seal)
    if dependents:
        return HarnessRun(exit_code=1, build_failed=True, sealing=sealing, oracle_dependents=dependents)
    # Inside a seal, the run's own folder holds everything and other runs do not exist.
    folder = seal.folder if seal is not None else runs_dir(environ)
    siblings = [] if seal is not None else [
        *sibling_runs(folder, repo),
        *gate_cache_entries(folder, environ, [os.path.realpath(p) for p in (repo, info["output_base"])])]
    # The gate's own code, when it lies where the change's actions could rewrite it.
    block = [*block, *gate_code_blocks(gate_code_root(), repo)]
    if seal is not None:
        block = [path for path in block if seal.shows(path)]
    work = tempfile.mkdtemp(prefix="run-", dir=folder)
    try:
        # The event files and execution logs, blocked while the change's code runs; and one fresh
        # TMPDIR per invocation: Bazel 4.2 makes the client's TMPDIR (else /tmp) writable to every
        # sandboxed action, so it must hold nothing the gate or a later invocation reads.
        logs = os.path.join(work, "logs")
        tmp = {stage: os.path.join(work, f"tmp-{stage}") for stage in ("views", "change", "judge")}
        for path in (logs, *tmp.values()):
            os.makedirs(path)
        own = output_seal(info["bazel-bin"], info["bazel-testlogs"], info["output_base"])
        for path in own[:2]:  # the sealed views and the oracle test logs: blocked before they exist
            os.makedirs(path, exist_ok=True)
        sealed = list(dict.fromkeys([*block, *own, *siblings, logs]))
        views = bazel("build", [*flags, f"--build_tag_filters=-{JUDGE_TAG},-{OBSERVATIONS_TAG}"], [ORACLE_PATTERN],
                      "views", "views")
        escaped = unexpected(read_spawns(views.spawn_log), VIEW_MNEMONICS, VIEW_OUTPUTS, "the gate's view-building invocation")
        if views.exit_code == 1:
            return HarnessRun(exit_code=1, build_failed=True, summary=views.summary, sealed=sealed, escapes=escaped,
                              sealing=sealing)
        for attempt in range(VANISHED_RETRIES + 1):
            change = bazel("test", [*flags, f"--build_tag_filters=-{JUDGE_TAG}", f"--test_tag_filters=-{JUDGE_TAG}",
                                    *block_flags(sealed)], [*harness, ORACLE_PATTERN], "change", f"change-{attempt}")
            # Another gate run on this machine may finish, and remove its folder, between the listing
            # above and an action's start; Bazel then cannot block it and the build fails. Such a
            # folder no longer needs blocking: run again without it. Any other missing path is an error.
            vanished = set(change.missing_mounts)
            if change.exit_code != 1 or not vanished:
                break
            others = vanished - set(siblings)
            if others or attempt == VANISHED_RETRIES:
                raise GateError(f"Bazel could not block {sorted(others or vanished)[0]} from the sandbox: it "
                                "vanished during the run; run the gate again")
            siblings = [s for s in siblings if os.path.exists(s)]
            sealed = list(dict.fromkeys([*block, *own, *siblings, logs]))
        escaped += unconfined(read_spawns(change.spawn_log))
        if change.exit_code == 1:
            return HarnessRun(exit_code=1, targets=change.status, build_failed=True,
                              summary=views.summary + change.summary, sealed=sealed, escapes=escaped, sealing=sealing)
        judge = bazel("test", flags, [ORACLE_PATTERN], "judge", "judge")
        escaped += unexpected(read_spawns(judge.spawn_log), JUDGE_MNEMONICS, JUDGE_OUTPUTS, "the judge's invocation")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    maps, ignored = _read_results(judge, info["bazel-testlogs"])
    _, harness_ignored = _read_results(change, info["bazel-testlogs"])
    ignored.update(harness_ignored)
    observed = merge_observed(maps)
    return HarnessRun(
        exit_code=judge.exit_code if judge.exit_code else change.exit_code,
        outcomes={ident: o.outcome for ident, o in observed.items()},
        targets={**change.status, **judge.status},
        build_failed=judge.exit_code == 1,
        summary=views.summary + change.summary + judge.summary,
        observed=observed,
        ignored=ignored,
        sealed=sealed,
        escapes=escaped,
        sealing=sealing,
    )
