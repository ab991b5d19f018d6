"""The merge rule: the workspace run and the clean run report the same ids with the same outcomes."""

from __future__ import annotations

import os
import stat

from tools.oracle_gate.check import run_check
from tools.oracle_gate.git import pristine
from tools.oracle_gate.git.pristine import pristine_tree
from tools.oracle_gate.report import render_text
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.clean_run import clean_environment, remote_flags
from tools.oracle_gate.runs.results import Observed, load_observed, to_junit
from tools.testing.gitrepo import IDS, blob_bytes

PASSED = {i: "passed" for i in IDS}


def runner(outcomes, summary=()):
    return lambda *_a: BazelRun(observed={i: Observed(o) for i, o in outcomes.items()}, summary=list(summary))


def run(project, workspace, clean, labels=()):
    return run_check(
        str(project.path),
        "main",
        labels=set(labels),
        environ={},
        workspace_runner=runner(workspace),
        clean=True,
        clean_runner=runner(clean),
    )


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
        "[6] oracles/ add_table: workspace run passed, clean sandboxed run failed: outcomes differ; the result "
        "depends on something outside the declared, committed inputs"
    ]


def observed_runner(observed, targets=None):
    return lambda *_a: BazelRun(observed=dict(observed), targets=dict(targets or {}))


def test_same_outcomes_but_different_observation_digests_exit_6_naming_the_sample(project):
    project.commit("nothing")
    same = {i: Observed("passed", f"d-{i}", ("s0", "s1", "s2")) for i in IDS}
    clock = {**same, "sum_in_range": Observed("passed", "other", ("s0", "sX", "s2"))}
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=observed_runner(same),
        clean=True,
        clean_runner=observed_runner(clock),
        salt="s4lt",
    )
    assert report.exit_code == 6
    assert [v.line() for v in report.violations] == [
        "[6] oracles/ sum_in_range: workspace run passed, clean sandboxed run passed: observation digests differ, "
        "first at sample 1 (0-based, over blob then generated samples) (salt s4lt); the result depends on something "
        "outside the declared, committed inputs"
    ]


def test_equal_digests_agree(project):
    project.commit("nothing")
    same = {i: Observed("passed", f"d-{i}", ("s0",)) for i in IDS}
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=observed_runner(same),
        clean=True,
        clean_runner=observed_runner(dict(same)),
    )
    assert report.exit_code == 0, [v.line() for v in report.violations]


def test_a_harness_target_failing_in_one_run_only_exits_6_and_in_both_exits_4(project):
    project.commit("nothing")
    same = {i: Observed("passed", f"d-{i}") for i in IDS}
    green = {"//harness:mine_test": "PASSED", "//oracles:oracle_test": "PASSED"}
    red = {"//harness:mine_test": "FAILED", "//oracles:oracle_test": "PASSED"}
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=observed_runner(same, green),
        clean=True,
        clean_runner=observed_runner(same, red),
    )
    assert [v.line() for v in report.violations] == [
        "[6] harness/: //harness:mine_test: workspace run PASSED, clean sandboxed run FAILED"
    ]
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=observed_runner(same, red),
        clean=True,
        clean_runner=observed_runner(same, red),
    )
    assert [v.line() for v in report.violations] == [
        "[4] harness/: //harness:mine_test FAILED in the workspace run: the harness's own tests must pass"
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


def test_an_unlabelled_oracle_change_runs_nothing_and_a_labelled_one_uses_heads_oracles(project):
    project.write("oracles/shop.toml", project.read("oracles/shop.toml").replace(b"max = 100", b"max = 1000"))
    project.write_manifest()
    head = project.commit("widen")
    seen = []

    def clean(repo, head_commit, oracles_commit, env, remote, block):
        seen.append(oracles_commit)
        return BazelRun(observed={i: Observed(o) for i, o in PASSED.items()})

    ran = []

    def workspace(repo, env):
        ran.append(repo)
        return runner(PASSED)(repo, env)

    # Unlabelled, nothing of the change runs: neither run, whatever oracles it would use.
    report = run_check(
        str(project.path), "main", labels=set(), environ={}, workspace_runner=workspace, clean=True, clean_runner=clean
    )
    assert (seen, ran, report.exit_code) == ([], [], 2)
    assert [(c.name, c.ok, c.detail) for c in report.checks][-1] == (
        "invariant outcomes",
        False,
        "not run: protected paths changed without the label",
    )
    assert "replay" not in render_text(report)  # nothing ran, so there is nothing to replay
    run_check(
        str(project.path),
        "main",
        labels={"oracle-change"},
        environ={},
        workspace_runner=workspace,
        clean=True,
        clean_runner=clean,
    )
    assert seen == [head] and len(ran) == 1


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
    assert env == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp/h",
        "TMPDIR": "/tmp/h",
        "LANG": "C.UTF-8",
        "PIP_INDEX_URL": "u",
    }


def test_remote_flags_from_the_environment():
    env = {
        "ORACLE_GATE_REMOTE_EXECUTOR": "grpcs://re.example:443",
        "ORACLE_GATE_REMOTE_INSTANCE_NAME": "main",
        "ORACLE_GATE_REMOTE_HEADER": "x-api-key=abc\nx-other=1\n",
    }
    assert remote_flags(env) == [
        "--config=remote",
        "--remote_executor=grpcs://re.example:443",
        "--remote_instance_name=main",
        "--remote_header=x-api-key=abc",
        "--remote_header=x-other=1",
    ]


def test_clean_results_round_trip_through_junit(tmp_path):
    observed = {
        "a": Observed("passed", "d" * 64, ("aa", "bb")),
        "b": Observed("failed", "e" * 64),
        "c": Observed("error"),
        "d": Observed("skipped"),
    }
    path = tmp_path / "clean.xml"
    path.write_bytes(to_junit(observed, "clean-run"))
    assert {i: o.outcome for i, o in load_observed([str(path)]).observed.items()} == {
        i: o.outcome for i, o in observed.items()
    }
    assert {i: (o.digest, o.samples) for i, o in load_observed([str(path)]).observed.items()} == {
        i: (o.digest, o.samples) for i, o in observed.items()
    }


def test_check_text_prints_both_tables(gate, project, monkeypatch):
    import tools.oracle_gate.check as check_module

    project.commit("nothing")
    salts = []
    monkeypatch.setattr(
        check_module,
        "default_workspace_runner",
        lambda salt, _repo, *_: salts.append(salt) or runner(PASSED, ["INFO: 5 processes: 2 remote, 3 internal."]),
    )
    monkeypatch.setattr(
        check_module,
        "default_clean_runner",
        lambda salt, *_: salts.append(salt) or runner({**PASSED, "add_table": "failed"}),
    )
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--clean", "--salt", "replay-1")
    assert code == 6, out
    assert salts == ["replay-1", "replay-1"]
    assert "  id                  workspace                clean" in out
    assert "  add_table           passed     -             failed     -" in out
    assert "workspace run: Bazel 5 processes: 2 remote, 3 internal." in out
    assert "salt replay-1: replay with `check --salt replay-1`" in out


def test_each_check_draws_a_fresh_salt_shared_by_both_runs(gate, project, monkeypatch):
    import tools.oracle_gate.check as check_module

    project.commit("nothing")
    salts = []
    monkeypatch.setattr(
        check_module, "default_workspace_runner", lambda salt, _repo, *_: salts.append(salt) or runner(PASSED)
    )
    monkeypatch.setattr(check_module, "default_clean_runner", lambda salt, *_: salts.append(salt) or runner(PASSED))
    for _ in range(2):
        assert gate("--repo", str(project.path), "check", "--base", "main", "--clean")[0] == 0
    assert salts[0] == salts[1] and salts[2] == salts[3] and salts[0] != salts[2]
    assert len(salts[0]) == 16


def test_a_salt_outside_the_pattern_is_a_usage_error(gate, project):
    code, _, err = gate("--repo", str(project.path), "check", "--base", "main", "--salt", "a b")
    assert code == 1 and "--salt must be" in err


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


def test_a_spawn_where_the_gate_does_not_allow_it_in_the_clean_run_voids_it(project):
    from tools.oracle_gate.runs.execlog import Escape

    project.commit("nothing")
    same = {i: Observed("passed", f"d-{i}") for i in IDS}
    spoiled = BazelRun(
        observed=dict(same),
        escapes=[Escape("OracleCall", "linux-sandbox", "bazel-out/k8/bin/oracles/o.json", "in the judge's invocation")],
    )
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=observed_runner(same),
        clean=True,
        clean_runner=lambda *_a: spoiled,
    )
    assert [v.line() for v in report.violations] == [
        "[4] harness/: a OracleCall action writing bazel-out/k8/bin/oracles/o.json ran in the judge's invocation in "
        "the clean sandboxed run: the change's code runs sandboxed and only the gate's own actions run in its "
        "invocations, so no result of this run counts"
    ]


def _invalid_base_policy(project):
    """main gets a policy that does not parse; the change branches from it."""
    project.git("checkout", "-q", "main")
    project.write("oracles/policy.toml", "label = [unclosed\n")
    project.commit("an invalid policy on main")
    project.git("checkout", "-q", "-B", "change", "main")
    project.write("shop/extra.py", "X = 1\n")
    project.commit("a change")


def test_check_and_clean_run_both_refuse_an_invalid_base_policy(gate, project, tmp_path, monkeypatch):
    from tools.oracle_gate.commands import clean_run_cmd

    ran = []
    monkeypatch.setattr(clean_run_cmd, "clean_run", lambda *a, **k: ran.append(a) or BazelRun())
    _invalid_base_policy(project)
    for argv in (
        ["check", "--base", "main", "--results", str(tmp_path)],
        ["clean-run", "--base", "main", "--out", str(tmp_path / "clean.xml")],
    ):
        code, _, err = gate("--repo", str(project.path), *argv)
        assert code == 1 and "the base revision's policy is invalid" in err, (argv, err)
    assert ran == []


def test_clean_run_learns_the_label_without_reading_a_blob(gate, project, tmp_path, monkeypatch):
    from tools.oracle_gate.commands import clean_run_cmd
    from tools.oracle_gate.git import objects

    monkeypatch.setattr(
        clean_run_cmd, "clean_run", lambda *a, **k: BazelRun(observed={i: Observed("passed") for i in IDS})
    )
    read = []
    original = objects.CatFile.chunks

    def chunks(self, oid):
        read.append(oid)
        return original(self, oid)

    monkeypatch.setattr(objects.CatFile, "chunks", chunks)
    code, text, _ = gate("--repo", str(project.path), "clean-run", "--base", "main", "--out", str(tmp_path / "c.xml"))
    policy = {project.git("rev-parse", f"{rev}:oracles/policy.toml").strip() for rev in ("main", "HEAD")}
    assert code == 0, text
    assert set(read) <= policy, "clean-run read more than the two policy files"


def test_clean_run_prints_and_writes_the_failing_samples_of_a_failed_id(gate, project, tmp_path, monkeypatch):
    from tools.oracle_gate.commands import clean_run_cmd
    from tools.oracle_gate.spec.judgement import FailingSample, FailingSamples

    failing = FailingSamples((FailingSample(1, False, "", "[2,2]", "0", "4", "result 0 != expected 4"),), 1)
    observed = {i: Observed("passed", "d" * 64) for i in IDS}
    observed["add_table"] = Observed(
        "failed", "e" * 64, message="sample 1 (0-based): result 0 != expected 4", failing=failing
    )
    monkeypatch.setattr(clean_run_cmd, "clean_run", lambda *a, **k: BazelRun(observed=observed))
    out = tmp_path / "c.xml"
    code, text, _ = gate("--repo", str(project.path), "clean-run", "--base", "main", "--out", str(out))
    assert code == 0, text
    assert (
        "failing samples (indexes count from 0):\n  add_table: 1 failing sample(s)\n"
        "    sample 1 (0-based): result 0 != expected 4\n      inputs [2,2] -> result 0; expected 4\n"
    ) in text
    back = load_observed([str(out)]).observed["add_table"]
    assert back.failing == failing and back.message == observed["add_table"].message


def test_both_runs_salt_the_same_files_those_with_a_row_that_draws(gate, tmp_path, monkeypatch):
    import tools.oracle_gate.check as check_module
    from tools.testing.gitrepo import default_rows, make_project

    given = []
    monkeypatch.setattr(
        check_module,
        "default_workspace_runner",
        lambda _salt, _repo, salted, *_: given.append(salted) or runner(PASSED),
    )
    monkeypatch.setattr(
        check_module, "default_clean_runner", lambda _salt, salted: given.append(salted) or runner(PASSED)
    )
    plain = make_project(tmp_path / "plain")
    plain.commit("nothing")
    assert gate("--repo", str(plain.path), "check", "--base", "main", "--clean")[0] == 0
    assert given == [frozenset(), frozenset()]
    rows = default_rows()
    rows[0]["generate"] = {"count": 2, "a": {"int": [0, 9]}, "b": {"int": [0, 9]}}
    drawing = make_project(tmp_path / "drawing", rows)
    drawing.commit("nothing")
    given.clear()
    assert gate("--repo", str(drawing.path), "check", "--base", "main", "--clean")[0] == 0
    assert given == [frozenset({"oracles/shop.toml"})] * 2


def test_removing_a_run_folder_never_changes_a_mode_through_a_link(tmp_path, monkeypatch):
    import shutil

    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    run = tmp_path / "run"
    (run / "out").mkdir(parents=True)
    (run / "out" / "l").symlink_to(secret)
    real = shutil.rmtree

    def failing_once(path, onerror):  # as when an unlink is refused (a read-only folder, not root)
        onerror(os.unlink, str(run / "out" / "l"), None)
        real(path)

    monkeypatch.setattr(pristine.shutil, "rmtree", failing_once)
    pristine.remove_folder(str(run), strict=False)
    assert not run.exists() and oct(secret.stat().st_mode & 0o777) == "0o700"
