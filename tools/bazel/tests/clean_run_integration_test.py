"""`check --clean` on a copy of this repository: the workspace run and the sandboxed clean run.

Each coupling the merge rule rejects is made real here: an environment variable that reaches the
workspace run through the user's ~/.bazelrc, and a fixture file that was never committed. Both
pass in the workspace and fail in the clean run: exit 6.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools.bazel.tests.workspace_copy import copy_workspace, git, nested_env, shutdown

HARNESS_TEST = "harness/invariants_test.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory):
    ws = copy_workspace(tmp_path_factory.mktemp("clean") / "ws")
    git(ws, "-c", "init.defaultBranch=main", "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "--no-gpg-sign", "-m", "base")
    yield ws
    shutdown(ws)


def gate(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/usr/bin/python3", "-B", "-m", "tools.oracle_gate", *args], cwd=ws,
                          env=env or nested_env(), capture_output=True, text=True, check=False, timeout=1500)


def change_harness(ws: Path, branch: str, check_line: str) -> None:
    """Commits, on a new branch, a harness that fails tax_round_half_even unless `check_line` holds."""
    git(ws, "checkout", "-q", "-B", branch, "main")
    path = ws / HARNESS_TEST
    text = path.read_text()
    hook = ("    inv, fn, samples = loaded\n"
            f"    if inv.id == 'tax_round_half_even':\n        {check_line}\n")
    path.write_text(text.replace("    inv, fn, samples = loaded\n", hook, 1))
    git(ws, "commit", "-q", "--no-gpg-sign", "-am", f"harness coupling: {branch}")


def test_both_runs_agree_on_this_repository(repo):
    proc = gate(repo, "check", "--base", "main", "--clean")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "clean run         3 id(s), same outcomes as the workspace run (sandboxed" in proc.stdout
    assert "  tax_round_half_even       passed     passed" in proc.stdout


def test_an_environment_variable_from_the_users_bazelrc(repo, tmp_path):
    change_harness(repo, "env-coupling", "assert os.environ.get('ORACLE_DEMO_FLAG') == '1'")
    env = nested_env()
    Path(env["HOME"], ".bazelrc").write_text("test --test_env=ORACLE_DEMO_FLAG=1\n")
    try:
        proc = gate(repo, "check", "--base", "main", "--clean", env=env)
    finally:
        Path(env["HOME"], ".bazelrc").unlink()
        git(repo, "checkout", "-q", "main")
    assert proc.returncode == 6, proc.stdout + proc.stderr[-3000:]
    assert "[6] harness/ tax_round_half_even: workspace run passed, clean sandboxed run failed" in proc.stdout


def test_a_fixture_file_left_uncommitted(repo):
    change_harness(repo, "uncommitted", "assert os.path.exists(os.path.join(os.path.dirname(os.path.realpath(__file__)), 'local_fixture.txt'))")
    fixture = repo / "harness" / "local_fixture.txt"
    fixture.write_text("only in this work tree\n")
    try:
        proc = gate(repo, "check", "--base", "main", "--clean")
    finally:
        fixture.unlink()
        git(repo, "checkout", "-q", "main")
    assert proc.returncode == 6, proc.stdout + proc.stderr[-3000:]
    assert "the work tree differs from HEAD (1 path(s), e.g. harness/local_fixture.txt (untracked))" in proc.stdout
    assert "[6] harness/ tax_round_half_even: workspace run passed, clean sandboxed run failed" in proc.stdout
