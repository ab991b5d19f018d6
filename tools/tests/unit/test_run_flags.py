"""Unit tests of flags.run_flags and flags.worker_flags: the salt reaches only the suites of oracle
files whose rows draw; only the gate's own actions run as persistent workers."""

from __future__ import annotations

import re
from pathlib import Path

from tools.oracle_gate.runs import clean_run
from tools.oracle_gate.runs.flags import GATE_ACTIONS, SERVER_JVM_FLAGS, own_server_startup, run_flags, worker_flags
from tools.oracle_gate.runs.merged_tree import MERGED_TREE_STARTUP


def test_without_a_list_every_suite_gets_the_salt():
    assert run_flags("s1", "workspace") == ["--define=oracle_salt=s1", "--define=oracle_run=workspace"]


def test_only_the_listed_files_get_the_salt_in_a_stable_order():
    assert run_flags("s1", "clean", {"oracles/b.toml", "oracles/a.toml"}) == [
        "--define=oracle_salt=s1",
        "--define=oracle_salted=oracles/a.toml,oracles/b.toml",
        "--define=oracle_run=clean",
    ]


def test_nothing_draws_so_no_salt_and_the_flags_stay_the_same_from_run_to_run():
    assert (
        run_flags("s1", "workspace", set())
        == run_flags("s2", "workspace", frozenset())
        == ["--define=oracle_salted=", "--define=oracle_run=workspace"]
    )


def test_a_path_with_a_comma_cannot_be_listed_so_every_suite_gets_the_salt():
    assert run_flags("s1", "workspace", {"oracles/a,b.toml"}) == [
        "--define=oracle_salt=s1",
        "--define=oracle_run=workspace",
    ]


def test_the_gate_actions_run_as_sandboxed_workers_under_the_linux_sandbox_only():
    assert worker_flags("linux-sandbox") == [
        "--strategy=OraclePinCheck=worker,linux-sandbox",
        "--strategy=OracleDraw=worker,linux-sandbox",
        "--strategy=OracleReferenceCheck=worker,linux-sandbox",
        "--worker_sandboxing",
    ]
    assert worker_flags("remote") == []


def test_every_gate_action_of_oracle_suite_is_named():
    bzl = (Path(__file__).resolve().parents[2] / "bazel" / "private" / "oracle_suite.bzl").read_text()
    assert sorted(GATE_ACTIONS) == sorted(set(re.findall(r'mnemonic = "(\w+)"', bzl)) - {"OracleReference"})


def test_every_server_the_gate_starts_for_itself_gets_the_jvm_flags_and_no_home_rc():
    startup = own_server_startup("/runs/clean-x")
    assert startup[:2] == ["--nohome_rc", "--output_user_root=/runs/clean-x/bazel"]
    assert SERVER_JVM_FLAGS and startup[2:] == list(SERVER_JVM_FLAGS)
    assert clean_run._bazel_flags("/runs/clean-x", {}, False, "salt", None)[0] == startup
    # The merge result's checkout runs on the caller's output user root, with a server of its own.
    assert set(SERVER_JVM_FLAGS) <= set(MERGED_TREE_STARTUP)
