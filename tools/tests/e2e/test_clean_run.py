"""`check --clean` on a copy of this repository: the workspace run and the sandboxed clean run.

Each coupling the merge rule rejects is made real here: an environment variable that reaches the
workspace run through the user's ~/.bazelrc, and a fixture file that was never committed, both read
by a harness test; and production results that depend on the time zone or the clock, which pass in
both runs with different observation digests. Each exits 6.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.testing.workspace_copy import gate, git, nested_env

HARNESS_TEST = "harness/examples_test.py"




def change_harness(ws: Path, branch: str, check_line: str) -> None:
    """Commits, on a new branch, a harness test that fails unless `check_line` holds."""
    git(ws, "checkout", "-q", "-B", branch, "main")
    path = ws / HARNESS_TEST
    path.write_text(path.read_text() + f"\n\ndef test_coupled():\n    import os\n    {check_line}\n")
    git(ws, "commit", "-q", "--no-gpg-sign", "-am", f"harness coupling: {branch}")


def change_production(ws: Path, branch: str, rel: str, old: str, new: str) -> None:
    git(ws, "checkout", "-q", "-B", branch, "main")
    path = ws / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    git(ws, "commit", "-q", "--no-gpg-sign", "-am", f"production coupling: {branch}")


def test_both_runs_agree_on_this_repository(repo):
    proc = gate(repo, "check", "--base", "main", "--clean")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "clean run           3 id(s), same outcomes and observation digests as the workspace run (sandboxed" in proc.stdout
    assert "  tax_round_half_even       passed     " in proc.stdout


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
    assert "[6] harness/: //harness:examples_test: workspace run PASSED, clean sandboxed run FAILED" in proc.stdout


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
    assert "[6] harness/: //harness:examples_test: workspace run PASSED, clean sandboxed run FAILED" in proc.stdout


@pytest.mark.parametrize(("branch", "coupling"), [
    # Only carts of more than three lines: the harness's own examples stay deterministic.
    ("time-zone", "import time\n    taxable += (time.localtime(0).tm_min % 2) * (len(lines) > 3)\n"),
    ("clock", "import time\n    taxable += (time.time_ns() % 2) * (len(lines) > 3)\n"),
])
def test_a_result_that_depends_on_the_time_zone_or_the_clock(repo, branch, coupling):
    change_production(repo, branch, "billing/totals.py", "    taxable = max(subtotal_cents(lines) - discount, 0)\n",
                      "    taxable = max(subtotal_cents(lines) - discount, 0)\n    " + coupling)
    try:
        proc = gate(repo, "check", "--base", "main", "--clean", "--salt", "fixed-salt")
    finally:
        git(repo, "checkout", "-q", "main")
    assert proc.returncode == 6, proc.stdout + proc.stderr[-3000:]
    assert ("[6] oracles/ total_cents_non_negative: workspace run passed, clean sandboxed run passed: observation "
            "digests differ, first at sample ") in proc.stdout
    assert "(salt fixed-salt)" in proc.stdout
