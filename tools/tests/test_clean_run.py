"""The merge rule: the workspace run and the clean run report the same ids with the same outcomes."""

from __future__ import annotations

import os
import stat

from tools.oracle_gate.bazel_run import HarnessRun
from tools.oracle_gate.check import run_check
from tools.oracle_gate.clean_run import clean_environment, remote_flags
from tools.oracle_gate.pristine import pristine_tree
from tools.oracle_gate.results import load_results, to_junit
from tools.tests.gitrepo import IDS, blob_bytes

PASSED = {i: "passed" for i in IDS}


def runner(outcomes, summary=()):
    return lambda *_a: HarnessRun(exit_code=0, outcomes=dict(outcomes), summary=list(summary))


def run(project, workspace, clean, labels=()):
    return run_check(str(project.path), "main", [], set(labels), {}, harness_runner=runner(workspace),
                     clean=True, clean_runner=runner(clean))


def test_same_ids_same_outcomes_in_another_order_is_ok(project):
    project.commit("nothing")
    report = run(project, PASSED, dict(reversed(list(PASSED.items()))))
    assert report.exit_code == 0, [v.line() for v in report.violations]
    assert report.clean_outcomes == PASSED


def test_workspace_green_clean_red_exits_6(project):
    project.commit("nothing")
    report = run(project, PASSED, {**PASSED, "add_table": "failed"})
    assert report.exit_code == 6
    assert [v.line() for v in report.violations] == [
        "[6] harness/ add_table: workspace run passed, clean sandboxed run failed: the harness depends on "
        "something outside its declared, committed inputs"
    ]


def test_an_id_present_in_one_run_only_exits_6(project):
    project.commit("nothing")
    report = run(project, PASSED, {"sum_in_range": "passed", "add_table": "passed"})
    assert report.exit_code == 6
    assert report.violations[0].id == "norm_is_idempotent"
    assert "clean sandboxed run missing" in report.violations[0].message


def test_a_dirty_work_tree_is_judged_by_the_clean_run(project):
    project.commit("nothing")
    project.write("shop/untracked.txt", "local only\n")
    report = run(project, PASSED, {**PASSED, "sum_in_range": "failed"})
    assert report.exit_code == 6
    assert any("the work tree differs from HEAD" in n for n in report.notes)


def test_the_clean_run_uses_the_base_oracles_unless_labelled(project):
    project.write("oracles/shop.toml", project.read("oracles/shop.toml").replace(b"max = 100", b"max = 1000"))
    project.write_manifest()
    head = project.commit("widen")
    seen = []

    def clean(repo, head_commit, oracles_commit, env, remote):
        seen.append(oracles_commit)
        return HarnessRun(exit_code=0, outcomes=dict(PASSED))

    base = project.git("rev-parse", "main").strip()
    for labels, expected in (((), base), (("oracle-change",), head)):
        run_check(str(project.path), "main", [], set(labels), {}, harness_runner=runner(PASSED), clean=True,
                  clean_runner=clean)
        assert seen[-1] == expected


def test_pristine_tree_holds_committed_bytes_only(project, tmp_path):
    project.write("shop/exec.sh", "#!/bin/sh\n")
    os.chmod(project.path / "shop/exec.sh", 0o755)
    os.symlink("calc.py", project.path / "shop/alias.py")
    project.commit("files")
    base = project.git("rev-parse", "main").strip()
    project.write("oracles/blobs/extra.json", b"[]")
    head = project.commit("new blob")
    project.write("shop/calc.py", "# uncommitted\n")
    project.write("shop/untracked.py", "x = 1\n")
    dest = tmp_path / "tree"
    dest.mkdir()
    pristine_tree(str(project.path), head, base, str(dest))
    assert (dest / "shop/calc.py").read_bytes() == project.git("show", "HEAD:shop/calc.py").encode()
    assert not (dest / "shop/untracked.py").exists()
    assert not (dest / "oracles/blobs/extra.json").exists()  # oracles/ comes from the base
    assert (dest / "oracles/blobs/table.json").read_bytes() == blob_bytes([{"args": [1, 2], "expected": 3}])
    assert os.readlink(dest / "shop/alias.py") == "calc.py"
    assert os.stat(dest / "shop/exec.sh").st_mode & stat.S_IXUSR
    assert not (dest / ".git").exists()


def test_clean_environment_keeps_only_pip_settings():
    env = clean_environment({"HOME": "/root", "SECRET": "x", "PIP_INDEX_URL": "u", "BAZELRC": "y"}, "/tmp/h")
    assert env == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp/h", "TMPDIR": "/tmp/h",
                   "LANG": "C.UTF-8", "PIP_INDEX_URL": "u"}


def test_remote_flags_from_the_environment():
    env = {"ORACLE_GATE_REMOTE_EXECUTOR": "grpcs://re.example:443", "ORACLE_GATE_REMOTE_INSTANCE_NAME": "main",
           "ORACLE_GATE_REMOTE_HEADER": "x-api-key=abc\nx-other=1\n"}
    assert remote_flags(env, ["--remote_timeout=60"]) == [
        "--config=remote", "--remote_executor=grpcs://re.example:443", "--remote_instance_name=main",
        "--remote_header=x-api-key=abc", "--remote_header=x-other=1", "--remote_timeout=60"]


def test_clean_results_round_trip_through_junit(tmp_path):
    outcomes = {"a": "passed", "b": "failed", "c": "error", "d": "skipped"}
    path = tmp_path / "clean.xml"
    path.write_bytes(to_junit(outcomes, "clean-run"))
    assert load_results([str(path)]) == outcomes


def test_check_text_prints_both_tables(gate, project, monkeypatch):
    import tools.oracle_gate.check as check_module

    project.commit("nothing")
    monkeypatch.setattr(check_module, "run_harness", runner(PASSED, ["INFO: 5 processes: 2 remote, 3 internal."]))
    monkeypatch.setattr(check_module, "_default_clean_runner", runner({**PASSED, "add_table": "failed"}))
    # run_check's defaults were bound at definition time; call through the CLI with patched defaults.
    monkeypatch.setattr(check_module.run_check, "__defaults__",
                        (check_module.run_harness, False, False, check_module._default_clean_runner))
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--clean")
    assert code == 6, out
    assert "  id                  workspace  clean" in out
    assert "  add_table           passed     failed" in out
    assert "workspace run: INFO: 5 processes: 2 remote, 3 internal." in out


def test_remote_needs_clean_and_clean_excludes_results(gate, project):
    assert gate("--repo", str(project.path), "check", "--remote")[0] == 1
    assert gate("--repo", str(project.path), "check", "--clean", "--results", "x.xml")[0] == 1


def test_dotenv_files_never_reach_the_pristine_tree(project, tmp_path):
    project.write(".env", "TOKEN=committed\n")
    project.write("shop/.env.local", "X=1\n")
    project.write("shop/not.env", "kept\n")
    head = project.commit("dotenv committed")
    dest = tmp_path / "tree"
    dest.mkdir()
    pristine_tree(str(project.path), head, head, str(dest))
    assert not (dest / ".env").exists() and not (dest / "shop/.env.local").exists()
    assert (dest / "shop/not.env").exists()


def test_clean_run_refuses_an_unwritable_out_before_running(gate, project):
    code, _, err = gate("--repo", str(project.path), "clean-run", "--base", "main", "--out", "/nonexistent-dir/x.xml")
    assert code == 1 and "--out /nonexistent-dir/x.xml: its directory does not exist" in err


def test_compare_of_two_runs_without_ids_cannot_decide(gate, tmp_path):
    (tmp_path / "a").mkdir()
    a = tmp_path / "a" / "a.xml"
    a.write_text("<testsuites><testsuite><testcase name='test_other'/></testsuite></testsuites>")
    code, _, err = gate("compare", str(a), str(a))
    assert code == 1 and "neither run reports any invariant id" in err
