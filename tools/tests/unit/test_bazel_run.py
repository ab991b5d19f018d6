"""Reading Bazel's Build Event Protocol: local and remote test.xml locations, statuses."""

from __future__ import annotations

import json

import pytest

from tools.oracle_gate.bazel_run import clean_env, parse_bep, junit_path_in_testlogs
from tools.oracle_gate.errors import GateError


def event(**kw):
    return json.dumps(kw)


def test_local_and_remote_test_xml_and_statuses():
    lines = [
        event(id={"testResult": {"label": "//harness:a", "run": 1, "shard": 1, "attempt": 1}},
              testResult={"testActionOutput": [{"name": "test.log", "uri": "file:///x/test.log"},
                                               {"name": "test.xml", "uri": "file:///out/a/test%20x.xml"}]}),
        event(id={"testResult": {"label": "//harness:b"}},
              testResult={"testActionOutput": [{"name": "test.xml", "uri": "bytestream://127.0.0.1:1/blobs/ab/12"}]}),
        event(id={"testSummary": {"label": "//harness:a"}}, testSummary={"overallStatus": "PASSED"}),
        event(id={"targetCompleted": {"label": "//harness:c"}}, completed={"success": False}),
        "",
    ]
    status, xml = parse_bep(lines)
    assert xml == {"//harness:a": ["/out/a/test x.xml"], "//harness:b": [""]}
    assert status == {"//harness:a": "PASSED", "//harness:c": "FAILED_TO_BUILD"}


def test_other_uri_schemes_are_refused():
    with pytest.raises(GateError):
        parse_bep([event(id={"testResult": {"label": "//h:a"}},
                         testResult={"testActionOutput": [{"name": "test.xml", "uri": "http://x/test.xml"}]})])


def test_testlog_path_of_a_label():
    assert junit_path_in_testlogs("/logs", "//harness:invariants_test") == "/logs/harness/invariants_test/test.xml"
    with pytest.raises(GateError):
        junit_path_in_testlogs("/logs", "@other//x:y")


def test_nested_bazel_does_not_inherit_bazel_run_variables():
    env = {"PATH": "/bin", "RUNFILES_DIR": "/r", "BUILD_WORKSPACE_DIRECTORY": "/w", "PYTHONPATH": "/p", "HOME": "/h"}
    assert clean_env(env) == {"PATH": "/bin", "HOME": "/h"}


def test_the_run_folder_is_never_where_sandboxed_actions_can_write(tmp_path):
    import pytest

    from tools.oracle_gate.bazel_run import runs_dir
    from tools.oracle_gate.errors import GateError

    import os

    base = os.path.realpath(os.environ.get("TEST_TMPDIR", str(tmp_path)))
    if not base.startswith(("/tmp/", "/dev/shm/")):  # under Bazel, TEST_TMPDIR is in the output base
        assert runs_dir({"XDG_CACHE_HOME": base + "/cache"}) == base + "/cache/oracle-gate/runs"
    for home in ("/tmp/somebody", "/dev/shm/x"):
        with pytest.raises(GateError, match=r"is under /(tmp|dev/shm), which every sandboxed action can write"):
            runs_dir({"HOME": home})
