"""Bypasses found by attacking the gate: each kind closed, each example a test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.oracle_gate.check import run_check
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.results import Observed
from tools.testing.gitrepo import IDS, junit, make_project

ROOT = Path(__file__).resolve().parents[3]


def ok_results(tmp_path: Path) -> str:
    return junit(tmp_path, {i: "passed" for i in IDS})


def widen(repo) -> None:
    repo.write("oracles/shop.toml", repo.read("oracles/shop.toml").replace(b"max = 100", b"max = 1000"))
    repo.write_manifest()
    repo.commit("widen without label")


@pytest.fixture
def remote_clone(tmp_path, project):
    """A clone whose origin/main is the project's main, checked out on the change branch."""
    widen(project)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--branch", "change", f"file://{project.path}", str(clone)], check=True)
    return clone


def test_a_tag_named_like_the_base_cannot_stand_in_for_it(gate, remote_clone, tmp_path):
    subprocess.run(["git", "-C", str(remote_clone), "tag", "origin/main", "HEAD"], check=True)
    code, _, err = gate(
        "--repo", str(remote_clone), "check", "--base", "origin/main", "--results", ok_results(tmp_path)
    )
    assert code == 1
    assert "base 'origin/main' is ambiguous (refs/remotes/origin/main, refs/tags/origin/main)" in err
    code, out, _ = gate("--repo", str(remote_clone), "check", "--results", ok_results(tmp_path))
    assert code == 2 and "base refs/remotes/origin/main (" in out


def test_a_branch_named_like_the_remote_base_cannot_stand_in_for_it(gate, remote_clone, tmp_path):
    subprocess.run(["git", "-C", str(remote_clone), "branch", "origin/main", "HEAD"], check=True)
    code, out, _ = gate("--repo", str(remote_clone), "check", "--results", ok_results(tmp_path))
    assert code == 2, out


def test_a_same_commit_tag_is_not_ambiguous(gate, project, tmp_path):
    project.git("tag", "main", "main")
    project.commit("nothing")
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", ok_results(tmp_path))
    assert code == 0, out


def test_a_directory_symlink_named_after_a_protected_folder(gate, project, tmp_path):
    project.write("shop/ci/pipeline.yml", "steps: []\n")
    os.symlink("shop/ci", project.path / ".ci")
    project.commit("ci through a symlink")
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", ok_results(tmp_path))
    assert code == 2
    assert "[2] .ci: is a symlink standing where '.ci/**' protects content" in out


def test_replace_refs_cannot_show_the_gate_a_fake_commit(gate, project, tmp_path):
    widen(project)
    fake = project.git("commit-tree", "main^{tree}", "-p", "main", "-m", "innocent").strip()
    project.git("replace", "HEAD", fake)
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", ok_results(tmp_path))
    assert code == 2, out


def test_a_grafts_file_is_refused(gate, project, tmp_path):
    project.commit("nothing")
    (project.path / ".git/info/grafts").write_text(project.git("rev-parse", "HEAD").strip() + "\n")
    code, _, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", ok_results(tmp_path))
    assert code == 1 and "info/grafts exists and rewrites history" in err


def test_ambient_git_dir_cannot_redirect_the_gate(project, tmp_path, gate):
    widen(project)
    decoy = make_project(tmp_path / "decoy")
    code, out, _ = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--results",
        ok_results(tmp_path),
        environ={"GIT_DIR": str(decoy.path / ".git"), "GIT_WORK_TREE": str(decoy.path)},
    )
    assert code == 2, out


def test_a_report_with_non_utf8_paths_survives_a_strict_stdout(project, tmp_path):
    name = os.fsencode(str(project.path / "tools")) + b"/a\xff"
    with open(name, "wb") as f:
        f.write(b"x")
    project.commit("odd name")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"PYTHONIOENCODING": "utf-8", "PYTHONPATH": os.pathsep.join(sys.path)})
    proc = subprocess.run(
        [
            sys.executable,
            "-B",
            "-m",
            "tools.oracle_gate",
            "--repo",
            str(project.path),
            "check",
            "--base",
            "main",
            "--results",
            ok_results(tmp_path),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "[2] tools/a\\udcff: protected by 'tools/**'" in proc.stdout


def test_an_empty_repo_option_is_an_error(gate):
    code, _, err = gate("--repo", "", "check", "--base", "main", "--results", "x")
    assert code == 1 and "--repo is empty" in err


def _passing(_repo, _env):
    return BazelRun(observed={i: Observed("passed") for i in IDS})


def test_an_ignored_real_directory_named_like_bazel_output_is_refused(project):
    project.write(".gitignore", "/bazel-*\n")
    project.commit("ignore")
    project.write("bazel-evil/BUILD", "py_library(name = 'x')\n")
    with pytest.raises(GateError, match=r"bazel-evil/ \(ignored, but a BUILD glob could read it\)"):
        run_check(str(project.path), "main", environ={}, workspace_runner=_passing)


def test_a_bytecode_directory_holding_other_files_is_refused(project):
    project.write(".gitignore", "__pycache__/\n")
    project.commit("ignore")
    project.write("shop/__pycache__/evil.py", "x = 1\n")
    with pytest.raises(GateError, match=r"shop/__pycache__/ \(ignored"):
        run_check(str(project.path), "main", environ={}, workspace_runner=_passing)


def test_a_harness_that_does_not_build_fails_even_with_partial_outcomes(project):
    project.commit("nothing")
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=lambda _r, _e: BazelRun(observed={i: Observed("passed") for i in IDS}, build_failed=True),
    )
    assert report.exit_code == 4
    assert report.violations[0].line() == (
        "[4] oracles/: the change's targets did not build in the workspace run: see Bazel's output (an action or "
        "test that cannot run sandboxed, e.g. tagged local or no-sandbox, fails too)"
    )


def test_manifest_write_without_an_oracles_directory(gate, tmp_path):
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(tmp_path / "empty")], check=True)
    code, _, err = gate("--repo", str(tmp_path / "empty"), "manifest", "--write")
    assert code == 5 and "there is no oracles/ directory" in err


@pytest.mark.parametrize("path", ["ORACLE~1/shop.toml", "TOOLS~1/gate.py", "oracles\u200c/x.toml", "\ufefftools/x.py"])
def test_more_spellings_of_protected_paths(gate, project, tmp_path, path):
    project.write(path, b"x\n")
    project.commit("spelling")
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", ok_results(tmp_path))
    assert code == 2, out
