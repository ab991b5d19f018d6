"""The Bazel flags and target patterns of the gate's runs: the run salt, the .bazelrc configs
of `$ORACLE_GATE_BAZEL_CONFIG`, the execution-log and lockfile flags each Bazel version needs, and
the environment a nested Bazel is given (docs/design.md section 10).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping

from tools.oracle_gate.errors import GateError

# The protected package whose test targets report invariant outcomes (oracles/BUILD.bazel), and the
# agent-writable one whose tests must pass but count for nothing else.
ORACLE_PATTERN = "//oracles/..."

HARNESS_PATTERN = "//harness/..."

# `--modify_execution_info` value: every mnemonic loses `requires-network` (a tag a BUILD file sets
# to get the host's network in the sandbox).
NO_NETWORK_OPT_IN = ".*=-requires-network"

# The mnemonics of the gate's own actions (tools/bazel/private/gate_action.bzl): gate code only,
# on the oracle files and blobs.
GATE_ACTIONS = ("OraclePinCheck", "OracleDraw", "OracleReferenceCheck")

# JVM flags of every Bazel server the gate starts for its own runs (never the caller's own server;
# `vacuity` and `promote` build many mutants in one server of their own, authoring/bazel_rows.py,
# which keeps Bazel's defaults):
# the JIT compiles with its first tier only. Those servers run one check, or the few commands of a
# warm one, so most of what the second tier would compile is compiled for nothing; measured on a
# cold `bazel test //oracles/... //harness/...` of this repository on 2 cores, the server's CPU time
# went from 17.0-19.6 s to 12.2-13.8 s (docs/performance.md, "Where the time goes").
SERVER_JVM_FLAGS = ("--host_jvm_args=-XX:TieredStopAtLevel=1",)


def own_server_startup(folder: str) -> list[str]:
    """Startup flags of a Bazel server the gate starts for itself in `folder` (an absolute path): no
    home `.bazelrc`, the output user root `folder/bazel`, and SERVER_JVM_FLAGS."""
    return ["--nohome_rc", f"--output_user_root={os.path.join(folder, 'bazel')}", *SERVER_JVM_FLAGS]


def worker_flags(strategy: str) -> list[str]:
    """The flags that run the gate's own actions (GATE_ACTIONS) as Bazel persistent workers, one
    interpreter per mnemonic for the whole build, each request in a worker sandbox of the action's
    declared inputs (`--worker_sandboxing`); the Linux sandbox when the worker cannot run one.

    Only the gate's view-building invocation gets them: it may run nothing but those actions (and
    the human-owned reference implementations), which its execution log shows. In the invocation
    that runs the change's code a rule of the change's BUILD files could take one of those mnemonics
    and ask for a worker, which runs outside the Linux sandbox and its blocked paths.

    Args:
        strategy: the run's spawn strategy (`RunSpec.strategy`); with `remote` the actions run on
            the engine as every other action does, and no flag is returned.
    """
    if strategy != "linux-sandbox":
        return []
    return [*(f"--strategy={mnemonic}=worker,linux-sandbox" for mnemonic in GATE_ACTIONS), "--worker_sandboxing"]


def run_flags(salt: str, run: str, salted: Collection[str] | None = None) -> list[str]:
    """Bazel flags that give the oracle suites their salt and the caller its run environment
    (`tools/bazel/private/oracle_suite.bzl`, `oracle_test.bzl`).

    Args:
        salt: the run salt (SALT_PATTERN of check_cmd.py).
        run: "workspace" or "clean", the caller's run environment.
        salted: the repository-relative paths of the oracle files with a row that draws generated
            samples (`salted_files`). Only the suites holding one of them get the salt
            (`--define=oracle_salted`); every other suite's draw keeps its arguments, so Bazel keeps
            it and everything after it cached from one `check` to the next. With no such file the
            salt is not passed at all, and the analysis Bazel cached stays valid. None: every suite
            gets the salt (also when a path holds a comma, which the list cannot carry).
    """
    if salted is not None and not any("," in path for path in salted):
        if not salted:
            return ["--define=oracle_salted=", f"--define=oracle_run={run}"]
        return [
            f"--define=oracle_salt={salt}",
            f"--define=oracle_salted={','.join(sorted(salted))}",
            f"--define=oracle_run={run}",
        ]
    return [f"--define=oracle_salt={salt}", f"--define=oracle_run={run}"]


def test_patterns(repo: str) -> list[str]:
    """The target patterns of a run: the oracles package, and the harness when it has a BUILD file."""
    patterns = [ORACLE_PATTERN]
    if any(os.path.isfile(os.path.join(repo, "harness", name)) for name in ("BUILD", "BUILD.bazel")):
        patterns.append(HARNESS_PATTERN)
    return patterns


# Variables that `bazel run` sets for the gate itself; a nested Bazel must not inherit them.
_DROP_PREFIXES = ("RUNFILES_", "PYTHON", "BUILD_", "TEST_", "JAVA_RUNFILES", "BAZEL_")


def clean_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Returns `environ` without the variables `bazel run` set for the current process."""
    return {k: v for k, v in environ.items() if not k.startswith(_DROP_PREFIXES)}


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
            raise GateError(
                f"{BAZEL_CONFIG_ENV}: {name!r} is not a .bazelrc config name (letters, digits, `_`, `.`, `-`)"
            )
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
