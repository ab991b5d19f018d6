"""The whole gate on a copy of this repository: real git, real nested Bazel, nothing written."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path


from tools.testing.workspace_copy import gate, git, nested_env


def snapshot(root: Path) -> dict[str, str]:
    """Path -> sha256 (or link target) of everything in the work tree except .git."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not (dirpath == str(root) and d == ".git")]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                out[rel] = "-> " + os.readlink(full)
            else:
                with open(full, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
    return out




def test_check_runs_the_harness_and_leaves_the_work_tree_byte_for_byte_unchanged(repo):
    before_status = git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all")
    before = snapshot(repo)
    proc = gate(repo, "check", "--base", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "invariant outcomes  3 of 3 invariant(s) passed (the oracle test)" in proc.stdout
    assert git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all") == before_status
    assert snapshot(repo) == before


def test_without_dash_b_only_python_bytecode_caches_appear(repo):
    before = git(repo, "status", "--porcelain", "--untracked-files=all")
    proc = subprocess.run(["/usr/bin/python3", "-m", "tools.oracle_gate", "check", "--base", "main"], cwd=repo,
                          env=nested_env(), capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == before
    ignored = git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all").splitlines()
    assert all("__pycache__/" in line for line in ignored), ignored
    assert not any("tools/oracle_gate/__pycache__/check." in line for line in ignored)


def test_bazel_run_from_a_subdirectory(repo):
    proc = subprocess.run(["bazel", "run", "//tools:oracle_gate", "--", "check", "--base", "main", "--format", "json"],
                          cwd=repo / "billing", env=nested_env(), capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '"exit_code": 0' in proc.stdout


def test_a_committed_production_bug_fails_the_gate(repo):
    git(repo, "checkout", "-q", "-b", "bug")
    tax = repo / "billing" / "tax.py"
    tax.write_text(tax.read_text().replace("ROUND_HALF_EVEN, Context", "ROUND_HALF_UP, ROUND_HALF_EVEN, Context")
                   .replace("rounding=ROUND_HALF_EVEN,", "rounding=ROUND_HALF_UP,"))
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "round half up")
    proc = gate(repo, "check", "--base", "main")
    assert proc.returncode == 4, proc.stdout + proc.stderr[-2000:]
    assert "[4] oracles/ tax_round_half_even: failed: the invariant does not hold" in proc.stdout
    git(repo, "checkout", "-q", "main")
