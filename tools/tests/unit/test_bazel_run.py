"""Reading Bazel's Build Event Protocol: local and remote test.xml locations, statuses."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.bazel_run import RunSpec
from tools.oracle_gate.runs.blocks import gate_cache_entries
from tools.oracle_gate.runs.events import junit_path_in_testlogs, parse_bep
from tools.oracle_gate.runs.flags import clean_env


def event(**kw):
    return json.dumps(kw)


def test_local_and_remote_test_xml_and_statuses():
    lines = [
        event(
            id={"testResult": {"label": "//harness:a", "run": 1, "shard": 1, "attempt": 1}},
            testResult={
                "testActionOutput": [
                    {"name": "test.log", "uri": "file:///x/test.log"},
                    {"name": "test.xml", "uri": "file:///out/a/test%20x.xml"},
                ]
            },
        ),
        event(
            id={"testResult": {"label": "//harness:b"}},
            testResult={"testActionOutput": [{"name": "test.xml", "uri": "bytestream://127.0.0.1:1/blobs/ab/12"}]},
        ),
        event(id={"testSummary": {"label": "//harness:a"}}, testSummary={"overallStatus": "PASSED"}),
        event(id={"targetCompleted": {"label": "//harness:c"}}, completed={"success": False}),
        "",
    ]
    status, xml = parse_bep(lines)
    assert xml == {"//harness:a": ["/out/a/test x.xml"], "//harness:b": [""]}
    assert status == {"//harness:a": "PASSED", "//harness:c": "FAILED_TO_BUILD"}


def test_other_uri_schemes_are_refused():
    with pytest.raises(GateError):
        parse_bep(
            [
                event(
                    id={"testResult": {"label": "//h:a"}},
                    testResult={"testActionOutput": [{"name": "test.xml", "uri": "http://x/test.xml"}]},
                )
            ]
        )


def test_testlog_path_of_a_label():
    assert junit_path_in_testlogs("/logs", "//harness:invariants_test") == "/logs/harness/invariants_test/test.xml"
    with pytest.raises(GateError):
        junit_path_in_testlogs("/logs", "@other//x:y")


def test_nested_bazel_does_not_inherit_bazel_run_variables():
    env = {"PATH": "/bin", "RUNFILES_DIR": "/r", "BUILD_WORKSPACE_DIRECTORY": "/w", "PYTHONPATH": "/p", "HOME": "/h"}
    assert clean_env(env) == {"PATH": "/bin", "HOME": "/h"}


def test_the_run_folder_is_never_where_sandboxed_actions_can_write(tmp_path):
    import os

    import pytest

    from tools.oracle_gate.errors import GateError
    from tools.oracle_gate.runs.blocks import runs_dir

    base = os.path.realpath(os.environ.get("TEST_TMPDIR", str(tmp_path)))
    if not base.startswith(("/tmp/", "/dev/shm/")):  # under Bazel, TEST_TMPDIR is in the output base
        assert runs_dir({"XDG_CACHE_HOME": base + "/cache"}) == base + "/cache/oracle-gate/runs"
    for home in ("/tmp/somebody", "/dev/shm/x"):
        with pytest.raises(GateError, match=r"is under /(tmp|dev/shm), which every sandboxed action can write"):
            runs_dir({"HOME": home})


@pytest.mark.parametrize(
    "root, blocked",
    [
        ("/tmp/base-gate", True),
        ("/dev/shm/x/y", True),
        ("/tmpfoo/gate", False),
        ("/srv/gate", False),
        ("/root/.cache/oracle-gate/base-gate.x", False),
    ],
)
def test_the_gates_own_code_is_blocked_where_sandboxed_actions_could_write_it(root, blocked):
    from tools.oracle_gate.runs.blocks import gate_code_blocks

    assert gate_code_blocks(root, "/srv/change") == ([root] if blocked else [])
    # The gate of the checked repository itself: Bazel mounts the workspace read-only.
    assert gate_code_blocks(root, root) == []
    assert gate_code_blocks(root + "/tools", root) == []


@pytest.mark.parametrize("top", ["/tmp", "/dev/shm"])
def test_a_gate_directly_in_a_writable_top_folder_is_exit_1(top):
    from tools.oracle_gate.runs.blocks import gate_code_blocks

    with pytest.raises(
        GateError,
        match=f"the gate's own code lies directly in {top} .*keep the gate's checkout in a "
        f"folder of its own, outside {top}",
    ):
        gate_code_blocks(top, "/srv/change")


def test_a_link_to_a_gate_under_tmp_is_blocked_by_its_real_path(tmp_path):
    from tools.oracle_gate.runs.blocks import gate_code_blocks

    real = tempfile.mkdtemp(prefix="base-gate-", dir="/tmp")
    try:
        link = tmp_path / "gate"
        link.symlink_to(real)
        assert gate_code_blocks(str(link), "/srv/change") == [real]
    finally:
        os.rmdir(real)


FAKE_BAZEL = r"""#!/bin/bash
# A stand-in for bazel: `info` answers, every other command writes an empty event file and execution
# log; the change's invocation (the one with --sandbox_block_path) fails like Bazel 4.2's
# linux-sandbox when a blocked path is gone, after removing $VANISH (another run finishing). A `test`
# whose tag filter selects no test exits 4 as Bazel does ("No test targets were found").
cmd=""; blocks=(); workers=""; none=""
for a in "$@"; do
  case "$a" in
    --strategy=*=worker,linux-sandbox) workers="$workers ${a#--strategy=}" ;;
    --worker_sandboxing) workers="$workers sandboxed" ;;
    help|info|build|test|query) [ -z "$cmd" ] && cmd=$a ;;
    --build_event_json_file=*) : > "${a#*=}" ;;
    --experimental_execution_log_file=*) : > "${a#*=}" ;;
    --sandbox_block_path=*) blocks+=("${a#*=}") ;;
    --test_tag_filters=oracle_gate_views_select_no_test) none=" no-test" ;;
  esac
done
[ "$cmd" = help ] && exit 0  # no help text: the gate takes Bazel 4.2's execution log flag
if [ "$cmd" = query ]; then  # $QUERY_OUT: what depends on the oracles package; $QUERY_EXIT: its code
  [ -n "${QUERY_OUT:-}" ] && echo "$QUERY_OUT"
  exit "${QUERY_EXIT:-0}"
fi
if [ "$cmd" = info ]; then
  echo "bazel-bin: $FAKE_OUT/bin"; echo "bazel-testlogs: $FAKE_OUT/testlogs"; echo "output_base: $FAKE_OUT/base"
  exit 0
fi
echo "$cmd ${#blocks[@]}$workers$none" >> "$FAKE_OUT/calls"
for b in "${blocks[@]}"; do
  if [ "$b" = "$VANISH" ] || [ "$b" = "$MISSING" ]; then
    rm -rf "$VANISH"
    echo "ERROR: /w/oracles/BUILD.bazel:18:12: Calling production entries failed: Mount target '$b' does not exist."
    exit 1
  fi
done
[ -n "$none" ] && exit 4
exit 0
"""


def _fake_bazel(tmp_path, monkeypatch, missing="", vanish=True):
    from tools.oracle_gate.runs import bazel_run, blocks

    monkeypatch.setattr(blocks, "SANDBOX_WRITABLE", ())  # tmp_path lies under /tmp here
    bin_dir, out, cache = tmp_path / "bin", tmp_path / "out", tmp_path / "cache"
    bin_dir.mkdir()
    out.mkdir()
    (bin_dir / "bazel").write_text(FAKE_BAZEL)
    (bin_dir / "bazel").chmod(0o755)
    sibling = cache / "oracle-gate" / "runs" / "clean-other"
    sibling.mkdir(parents=True)
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "XDG_CACHE_HOME": str(cache),
        "FAKE_OUT": str(out),
        "VANISH": str(sibling) if vanish else "",
        "MISSING": missing,
        "ORACLE_GATE_BAZEL": str(bin_dir / "bazel"),
    }
    return bazel_run, repo, env, sibling, out


def test_a_run_folder_that_vanishes_mid_run_is_not_blocked_again(tmp_path, monkeypatch):
    # Two gate runs under one HOME: the other one finished and removed its folder after this run
    # listed it, so Bazel could not block it. The change's invocation runs again without it.
    bazel_run, repo, env, sibling, out = _fake_bazel(tmp_path, monkeypatch)
    run = bazel_run.run_bazel(str(repo), env, RunSpec(exact_env=True))
    assert not run.build_failed
    assert str(sibling) not in run.blocked
    calls = (out / "calls").read_text().split("\n")
    assert [c.split()[0] for c in calls if c] == ["test", "test", "test", "test"]


@pytest.mark.parametrize("strategy", ["linux-sandbox", "remote"])
def test_only_the_view_building_invocation_runs_the_gate_actions_as_workers(tmp_path, monkeypatch, strategy):
    # The change's and the judge's invocations must not: a rule of the change's could take one of
    # those mnemonics and so run outside the sandbox and its blocked paths.
    bazel_run, repo, env, _, out = _fake_bazel(tmp_path, monkeypatch, vanish=False)
    run = bazel_run.run_bazel(str(repo), env, RunSpec(exact_env=True, strategy=strategy))
    assert not run.build_failed
    calls = [c.split(" ", 2) for c in (out / "calls").read_text().splitlines()]
    workers = (
        (
            "OraclePinCheck=worker,linux-sandbox OracleDraw=worker,linux-sandbox "
            "OracleReferenceCheck=worker,linux-sandbox sandboxed no-test"
        )
        if strategy == "linux-sandbox"
        else "no-test"
    )
    assert [(c[0], c[2] if len(c) > 2 else "") for c in calls] == [("test", workers), ("test", ""), ("test", "")]


def test_every_invocation_of_a_run_is_a_bazel_test(tmp_path, monkeypatch):
    # A .bazelrc's `test` lines are build options: a `bazel build` between two `bazel test`s would
    # discard the analysis cache twice a run. The views' invocation selects no test, so Bazel exits
    # 4 once the views are built, which is no failure.
    bazel_run, repo, env, _, out = _fake_bazel(tmp_path, monkeypatch, vanish=False)
    run = bazel_run.run_bazel(str(repo), env, RunSpec(exact_env=True))
    assert not run.build_failed and run.failure is None
    calls = (out / "calls").read_text().splitlines()
    assert [c.split()[0] for c in calls] == ["test"] * 3
    assert calls[0].endswith(" no-test") and not any(c.endswith(" no-test") for c in calls[1:])


def test_a_path_of_the_run_that_went_missing_mid_run_is_exit_4(tmp_path, monkeypatch):
    # Not another run's folder: only an output collected through a symlinked folder moves it away.
    from tools.oracle_gate.errors import TakenError

    bazel_run, repo, env, _, _ = _fake_bazel(
        tmp_path, monkeypatch, missing=str(tmp_path / "repo" / "oracles"), vanish=False
    )
    (repo / "oracles").mkdir()
    with pytest.raises(TakenError) as err:
        bazel_run.run_bazel(str(repo), env, RunSpec(exact_env=True, block=[str(tmp_path / "repo" / "oracles")]))
    assert err.value.code == 4
    assert str(err.value).startswith(
        f"Bazel could not block {tmp_path / 'repo' / 'oracles'} from the sandbox: it went "
        "missing while the change's code ran"
    )


def test_local_copies_git_names_are_blocked_too(project, tmp_path):
    # A clone's origin on this host, a bare copy, and an alternates object store all hold the oracles.
    from tools.oracle_gate.runs.blocks import repository_blocks

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(project.path), str(clone)], check=True, capture_output=True)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(project.path), str(bare)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(clone), "remote", "add", "mirror", f"file://{bare}"], check=True)
    subprocess.run(["git", "-C", str(clone), "remote", "add", "far", "git@example.invalid:x/y.git"], check=True)
    (clone / ".git/objects/info/alternates").write_text(f"{project.path}/.git/objects\n")
    blocked = repository_blocks(str(clone))
    real = lambda p: os.path.realpath(p)  # noqa: E731
    assert blocked[:2] == [real(clone / "oracles"), real(clone / ".git")]
    assert set(blocked[2:]) == {real(project.path / "oracles"), real(project.path / ".git"), real(bare)}


def test_the_execution_log_flag_follows_the_bazel_version():
    from tools.oracle_gate.runs.flags import execution_log_flags

    # Bazel 7's `help test` lists --[no]execution_log_sort; Bazel 4.2's does not.
    seven = "  --execution_log_binary_file (a path; default: see description)\n  --[no]execution_log_sort (a boolean)\n"
    four = "  --execution_log_binary_file (a path)\n  --experimental_execution_log_file (a path)\n"
    assert execution_log_flags(seven, "/r/x.bin") == ["--execution_log_binary_file=/r/x.bin", "--noexecution_log_sort"]
    assert execution_log_flags(four, "/r/x.bin") == ["--experimental_execution_log_file=/r/x.bin"]
    assert execution_log_flags("", "/r/x.bin") == ["--experimental_execution_log_file=/r/x.bin"]


@pytest.mark.parametrize(
    "value, flags",
    [
        ("", []),
        ("bazel7-bzlmod", ["--config=bazel7-bzlmod"]),
        (" ci , bazel7-workspace,", ["--config=ci", "--config=bazel7-workspace"]),
    ],
)
def test_bazel_configs_come_from_the_environment(value, flags):
    from tools.oracle_gate.runs.flags import BAZEL_CONFIG_ENV, config_flags

    assert config_flags({BAZEL_CONFIG_ENV: value}) == flags


@pytest.mark.parametrize("value", ["ci --remote_executor=grpc://x", "--config=x", "a/b", "x;y", "é"])
def test_a_bazel_config_that_is_not_a_name_is_refused(value):
    from tools.oracle_gate.runs.flags import BAZEL_CONFIG_ENV, config_flags

    with pytest.raises(GateError, match="ORACLE_GATE_BAZEL_CONFIG: .* is not a .bazelrc config name"):
        config_flags({BAZEL_CONFIG_ENV: value})


def test_bzlmod_lockfile_is_neither_read_nor_written_where_bazel_has_one():
    from tools.oracle_gate.runs.flags import lockfile_flags

    seven = "  --lockfile_mode (one of 'off', 'update', 'refresh' or 'error'; default: \"update\")\n"
    assert lockfile_flags(seven) == ["--lockfile_mode=off"]
    assert lockfile_flags("  --experimental_execution_log_file (a path)\n") == []


def test_a_failing_bazel_help_is_an_error_not_a_guess(tmp_path):
    from tools.oracle_gate.runs import launch

    fake = tmp_path / "bazel"
    fake.write_text("#!/bin/sh\necho 'FATAL: cannot start server' >&2\necho 'see the server log' >&2\nexit 37\n")
    fake.chmod(0o755)
    with pytest.raises(GateError, match=r"`bazel help test` failed \(exit 37\): FATAL: cannot start server$"):
        launch.HostLauncher(
            str(tmp_path), {"PATH": f"{tmp_path}:/usr/bin:/bin", "ORACLE_GATE_BAZEL": str(fake)}
        ).help_test()


def test_the_gates_own_cache_folders_are_blocked_but_the_runs_and_what_the_run_needs(tmp_path):
    cache = tmp_path / "cache" / "oracle-gate"
    for name in ("runs", "sid-root", "engine", "remote7-abc", "buildgrid-0.4.4-py3.11", "module-test-x"):
        (cache / name).mkdir(parents=True)
    (cache / "engine" / "repo").mkdir()
    (cache / "sid-root.partial").write_text("")  # a file, not a folder
    other = tmp_path / "og"
    (other / "sid-root").mkdir(parents=True)
    (other / "remote7").symlink_to(tmp_path)
    found = gate_cache_entries(
        str(cache / "runs"),
        {"ORACLE_GATE_CACHE": str(other)},
        [str(cache / "engine" / "repo"), str(tmp_path / "output-base")],
    )
    # Not the run folder, BuildGrid's venv, a checkout a test depends on, or a folder the run needs.
    assert found == [str(cache / "remote7-abc"), str(cache / "sid-root"), str(other / "sid-root")]


def test_a_sid_root_kept_elsewhere_is_blocked_too(tmp_path):
    elsewhere = tmp_path / "kept" / "my-root"
    elsewhere.mkdir(parents=True)
    (tmp_path / "kept" / "my-root.partial").mkdir()
    found = gate_cache_entries(str(tmp_path / "cache" / "runs"), {"ORACLE_GATE_SID_ROOT": str(elsewhere)}, [])
    assert found == [str(elsewhere), str(elsewhere) + ".partial"]
    assert gate_cache_entries(str(tmp_path / "cache" / "runs"), {"ORACLE_GATE_SID_ROOT": "relative"}, []) == []


def test_no_gate_cache_folders_when_there_are_none(tmp_path):
    assert gate_cache_entries(str(tmp_path / "missing" / "runs"), {}, []) == []


@pytest.mark.parametrize("environ", [{"XDG_CACHE_HOME": "relcache"}, {"HOME": "relhome"}])
def test_a_relative_cache_folder_is_refused(environ):
    from tools.oracle_gate.runs.blocks import runs_dir

    with pytest.raises(GateError, match="is not an absolute path; set XDG_CACHE_HOME"):
        runs_dir(environ)


def test_a_target_that_depends_on_the_oracles_package_stops_the_run_before_any_build(tmp_path, monkeypatch):
    bazel_run, repo, env, _, out = _fake_bazel(tmp_path, monkeypatch, vanish=False)
    run = bazel_run.run_bazel(str(repo), dict(env, QUERY_OUT="//harness:answers"), RunSpec(exact_env=True))
    assert run.oracle_dependents == ["//harness:answers"] and run.build_failed and not run.observed
    assert not (out / "calls").exists()  # no build, no test


@pytest.mark.parametrize(("code", "fails"), [(3, False), (2, True), (7, True)])
def test_a_partial_query_answer_is_used_and_a_failed_query_is_exit_1(tmp_path, monkeypatch, code, fails):
    # Exit 3 (--keep_going): some package did not load; the build fails on it anyway.
    bazel_run, repo, env, _, _ = _fake_bazel(tmp_path, monkeypatch, vanish=False)
    if fails:
        with pytest.raises(GateError, match="`bazel query` of what depends on the oracles package failed"):
            bazel_run.run_bazel(str(repo), dict(env, QUERY_EXIT=str(code)), RunSpec(exact_env=True))
    else:
        assert not bazel_run.run_bazel(str(repo), dict(env, QUERY_EXIT=str(code)), RunSpec(exact_env=True)).build_failed


def test_a_path_inside_another_blocked_folder_is_not_blocked_again(tmp_path):
    # The sandbox hides a blocked folder behind an empty one; blocking a path below it as well
    # fails the action (a gate kept under /tmp blocks its own checkout, which holds its .git).
    from tools.oracle_gate.runs.blocks import block_flags

    gate = tmp_path / "gate"
    (gate / ".git").mkdir(parents=True)
    (tmp_path / "gatekeeper").mkdir()
    paths = [str(gate / ".git"), str(gate), str(tmp_path / "gatekeeper"), str(tmp_path / "missing"), str(gate)]
    assert block_flags(paths) == [f"--sandbox_block_path={gate}", f"--sandbox_block_path={tmp_path / 'gatekeeper'}"]


def test_the_gate_code_root_is_the_folder_that_holds_the_tools_package():
    from tools.oracle_gate.runs.blocks import gate_code_root

    assert os.path.isfile(os.path.join(gate_code_root(), "tools", "oracle_gate", "__init__.py"))


def _events(*events: dict, finished: bool = True) -> list[str]:
    lines = [json.dumps(e) for e in events]
    if finished:
        lines.append(
            json.dumps({"id": {"buildFinished": {}}, "finished": {"exitCode": {"name": "BUILD_FAILURE", "code": 1}}})
        )
    return lines


# Measured on Bazel 4.2.3: an http_archive whose host is unknown, a deps label that does not exist,
# a genrule that exits 3 (the event shapes below are those of its event files, shortened).
FETCH_FAILED = {
    "id": {"unconfiguredLabel": {"label": "//external:far"}},
    "aborted": {
        "reason": "LOADING_FAILURE",
        "description": "Traceback (most recent call last):\n\tFile "
        '"http.bzl", line 111\nError in download_and_extract: java.io.IOException: Error '
        "downloading [https://nowhere.invalid/far.tar.gz]: Unknown host: nowhere.invalid",
    },
}
MISSING_DEP = {
    "id": {"configuredLabel": {"label": "//billing:billing"}},
    "aborted": {
        "reason": "ANALYSIS_FAILURE",
        "description": "in deps attribute of py_library rule //billing:billing: rule '//billing:gone' does not exist",
    },
}
ACTION_FAILED = {
    "id": {"actionCompleted": {"primaryOutput": "bazel-out/k8-fastbuild/bin/e/o", "label": "//e:g"}},
    "action": {
        "exitCode": 1,
        "label": "//e:g",
        "type": "Genrule",
        "failureDetail": {"message": "bash failed: error executing command (Exit 3)"},
    },
}


@pytest.mark.parametrize(
    "events, setup, label, message",
    [
        (
            _events(MISSING_DEP, FETCH_FAILED),
            True,
            "@far",
            "Error in download_and_extract: java.io.IOException: Error "
            "downloading [https://nowhere.invalid/far.tar.gz]: Unknown host: nowhere.invalid",
        ),
        (
            _events(
                {
                    "id": {"configuredLabel": {"label": "@@rules_python~//python:defs"}},
                    "aborted": {"description": "boom"},
                }
            ),
            True,
            "@rules_python~",
            "boom",
        ),
        (_events(MISSING_DEP), False, "//billing:billing", MISSING_DEP["aborted"]["description"]),
        (_events(ACTION_FAILED), False, "//e:g", "bash failed: error executing command (Exit 3)"),
        (
            _events(
                {
                    "id": {"pattern": {"pattern": ["//c:t"]}},
                    "aborted": {"reason": "LOADING_FAILURE", "description": "no such target '//c:t'"},
                }
            ),
            False,
            "//c:t",
            "no such target '//c:t'",
        ),
        (_events(MISSING_DEP, finished=False), True, "", "Bazel ended without finishing the build"),
    ],
)
def test_why_a_build_failed_is_read_from_its_events(events, setup, label, message):
    from tools.oracle_gate.runs.events import build_failure

    failure = build_failure(events)
    assert (failure.setup, failure.label) == (setup, label)
    assert failure.message.startswith(message)


@pytest.mark.parametrize(
    "label, setup",
    [
        ("//oracles:billing_draw", True),
        ("", True),
        ("//billing:billing", False),
        ("@//harness:t", False),
    ],
)
def test_a_failure_of_the_gates_own_invocations_is_set_up_unless_a_change_target_caused_it(label, setup):
    from tools.oracle_gate.runs.bazel_run import gate_failure
    from tools.oracle_gate.runs.events import BuildFailure

    assert gate_failure(BuildFailure(False, label, "x")).setup is setup
    assert gate_failure(None).setup


@pytest.mark.parametrize(
    "label, external",
    [
        ("//external:far", "@far"),
        ("@far//:x", "@far"),
        ("@@rules_cc~//cc:x", "@rules_cc~"),
        ("@//x:y", ""),
        ("@@//x:y", ""),
        ("//x:y", ""),
        ("", ""),
    ],
)
def test_external_repository_of_a_label(label, external):
    from tools.oracle_gate.runs.events import external_repository

    assert external_repository(label) == external


def test_a_failed_gate_action_is_named_by_its_own_reason_never_by_the_sandbox_hint(tmp_path):
    from tools.oracle_gate.runs.events import build_failure

    hint = "Use --sandbox_debug to see verbose messages from the sandbox"
    stderr = tmp_path / "stderr"
    stderr.write_text(f"{hint}\noracle-gate: [1] cannot read oracles/policy.toml: Permission denied\n")
    detail = f"Checking oracle hash pins of //oracles:s failed: (Exit 1): pin_check failed\n\n{hint}"
    gate_action = {
        "id": {"actionCompleted": {"label": "//oracles:s"}},
        "action": {
            "exitCode": 1,
            "label": "//oracles:s",
            "type": "OraclePinCheck",
            "stderr": {"uri": f"file://{stderr}"},
            "failureDetail": {"message": detail},
        },
    }
    assert (
        build_failure(_events(gate_action)).message
        == "oracle-gate: [1] cannot read oracles/policy.toml: Permission denied"
    )
    # Another action's stderr is the change's text: never quoted; the hint is skipped all the same.
    other = {**gate_action, "action": {**gate_action["action"], "type": "OracleCall"}}
    assert (
        build_failure(_events(other)).message
        == "Checking oracle hash pins of //oracles:s failed: (Exit 1): pin_check failed"
    )


def test_the_persistent_workers_folder_is_blocked_from_the_change(tmp_path):
    # The gate's workers stage oracle files, blobs and judge's views there for each request.
    from tools.oracle_gate.runs.blocks import output_base_blocks

    base = tmp_path / "0123456789abcdef0123456789abcdef"
    paths = output_base_blocks(str(base / "execroot" / "bin"), str(base / "execroot" / "testlogs"), str(base))
    assert str(base / "bazel-workers") in paths and str(base / "server") in paths


@pytest.mark.parametrize(
    "stderr, cause",
    [
        (
            "Extracting Bazel installation...\nbwrap: Can't mount proc on /newroot/proc\n",
            "bwrap: Can't mount proc on /newroot/proc",
        ),
        ("INFO: x\nERROR: no such package\nINFO: y\n", "ERROR: no such package"),
        ("one\ntwo\n", "two"),
        ("", "no output"),
    ],
)
def test_a_failed_commands_cause_is_its_first_error_line(stderr, cause):
    from tools.oracle_gate.runs.launch import failure_cause

    assert failure_cause(stderr) == cause


def test_every_invocation_builds_what_it_names_whatever_the_bazelrc_says():
    # The views' invocation is a `bazel test` selecting no test: with a team's `test
    # --build_tests_only` it would build nothing, and the views would first be built in the
    # invocation of the change's code. A later flag wins over the .bazelrc's.
    from tools.oracle_gate.runs.bazel_run import confined_flags

    flags = confined_flags(["--config=ci"], "linux-sandbox")
    assert "--nobuild_tests_only" in flags and flags[0] == "--config=ci"


def test_no_invocation_reads_or_writes_a_disk_cache():
    # Bazel 6 and later write local results to a .bazelrc's --disk_cache despite
    # --noremote_upload_local_results; in the run's home it would hold the views where the change's
    # actions can read them, and a server-side write there could stand for the judge's result.
    from tools.oracle_gate.runs.bazel_run import confined_flags

    flags = confined_flags(["--config=ci"], "linux-sandbox")
    assert "--disk_cache=" in flags
