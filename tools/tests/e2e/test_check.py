"""The whole gate on a copy of this repository: real git, real nested Bazel, nothing written. It needs
a nested Bazel because `check` runs the gate's own Bazel runs (workspace run, clean run, behaviour
phase)."""

from __future__ import annotations

import hashlib
import json
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


def test_check_runs_the_harness_and_leaves_the_work_tree_byte_for_byte_unchanged(repo, tmp_path):
    before_status = git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all")
    before = snapshot(repo)
    statement = tmp_path / "oracle-gate.intoto.jsonl"
    proc = gate(repo, "check", "--base", "main", "--attest", str(statement))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "invariant outcomes  6 of 6 invariant(s) passed (the oracle test)" in proc.stdout
    assert git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all") == before_status
    assert snapshot(repo) == before
    # The statement: accepted for HEAD with main's claims; refused for another commit and for an
    # altered copy (exit codes: docs/design.md section 6).
    head = git(repo, "rev-parse", "HEAD").strip()
    accepted = gate(repo, "verify", str(statement), "--commit", "HEAD", "--policy-from", "main")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.startswith(f"statement ok: {head} PASSED with the claims of {head}")
    # Another commit, with another tree (the empty one), written without changing a ref.
    empty = git(repo, "hash-object", "-t", "tree", "-w", "/dev/null").strip()
    another = git(repo, "commit-tree", empty, "-m", "another tree").strip()
    other = gate(repo, "verify", str(statement), "--commit", another)
    assert other.returncode == 6 and "not" in other.stderr, other.stderr
    data = statement.read_bytes()
    altered = tmp_path / "altered.jsonl"
    altered.write_bytes(data.replace(b'"outcome":"passed"', b'"outcome":"passes"', 1))
    tampered = gate(repo, "verify", str(altered), "--commit", "HEAD")
    assert tampered.returncode == 5 and "altered" in tampered.stderr, tampered.stderr


def test_without_dash_b_only_python_bytecode_caches_appear(repo):
    before = git(repo, "status", "--porcelain", "--untracked-files=all")
    proc = subprocess.run(
        ["/usr/bin/python3", "-m", "tools.oracle_gate", "check", "--base", "main"],
        cwd=repo,
        env=nested_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == before
    ignored = git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all").splitlines()
    assert all("__pycache__/" in line for line in ignored), ignored
    assert not any("tools/oracle_gate/__pycache__/check." in line for line in ignored)


def test_bazel_run_from_a_subdirectory(repo):
    proc = subprocess.run(
        ["bazel", "run", "//tools:oracle_gate", "--", "check", "--base", "main", "--format", "json"],
        cwd=repo / "billing",
        env=nested_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '"exit_code": 0' in proc.stdout


def test_a_committed_production_bug_fails_the_gate(repo, tmp_path):
    git(repo, "checkout", "-q", "-b", "bug")
    tax = repo / "billing" / "tax.py"
    tax.write_text(
        tax.read_text()
        .replace("ROUND_HALF_EVEN, Context", "ROUND_HALF_UP, ROUND_HALF_EVEN, Context")
        .replace("rounding=ROUND_HALF_EVEN,", "rounding=ROUND_HALF_UP,")
    )
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "round half up")
    statement = tmp_path / "failed.intoto.jsonl"
    proc = gate(repo, "check", "--base", "main", "--attest", str(statement))
    assert proc.returncode == 4, proc.stdout + proc.stderr[-2000:]
    assert "[4] oracles/billing.toml tax_round_half_even: failed: the invariant does not hold" in proc.stdout
    refused = gate(repo, "verify", str(statement), "--commit", "HEAD")
    assert refused.returncode == 4 and "FAILED verdict (exit 4)" in refused.stderr, refused.stderr
    git(repo, "checkout", "-q", "main")


def test_quick_judges_the_work_tree_and_only_when_a_row_is_reached(repo):
    """`check --quick`: an uncommitted bug fails (exit 4, in JSON an agent reads); a change that
    reaches no row's entry runs nothing; an uncommitted oracle edit is exit 2."""
    git(repo, "checkout", "-q", "-b", "quick")
    tax = repo / "billing" / "tax.py"
    original = tax.read_text()
    try:
        examples = repo / "harness" / "examples_test.py"
        examples.write_text(examples.read_text() + "\n# one more example to come\n")
        git(repo, "commit", "-q", "--no-gpg-sign", "-am", "harness only")
        proc = gate(repo, "check", "--quick", "--format", "json")
        assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
        report = json.loads(proc.stdout)
        assert report["checks"][-1]["not_run"] and report["head_only"], report["checks"]
        tax.write_text(
            original.replace("rounding=ROUND_HALF_EVEN,", "rounding=ROUND_DOWN,").replace(
                "from decimal import ROUND_HALF_EVEN,", "from decimal import ROUND_DOWN, ROUND_HALF_EVEN,"
            )
        )
        for _ in range(2):  # the second is warm: the kept root's server
            proc = gate(repo, "check", "--quick", "--format", "json")
            assert proc.returncode == 4, proc.stdout + proc.stderr[-2000:]
            report = json.loads(proc.stdout)
            assert [v["id"] for v in report["violations"]] == ["tax_round_half_even"]
            assert any(n.startswith("quick: the change reached") for n in report["notes"])
        tax.write_text(original)
        (repo / "oracles" / "billing.toml").write_text((repo / "oracles" / "billing.toml").read_text() + "\n")
        proc = gate(repo, "check", "--quick")
        assert proc.returncode == 2 and "not committed" in proc.stdout, proc.stdout
    finally:
        git(repo, "checkout", "-q", "-f", "main")


def _without_tax_row(ws: Path) -> None:
    """Removes the `tax_round_half_even` row from the oracle file (the blob stays, unused)."""
    path = ws / "oracles" / "billing.toml"
    text = path.read_text()
    start = text.index('[[invariant]]\nid = "tax_round_half_even"')
    end = text.find("[[invariant]]", start + 1)
    path.write_text(text[:start] + (text[end:] if end != -1 else ""))


def test_a_change_branched_before_main_gained_a_row_is_judged_on_the_merge_with_main(repo, tmp_path):
    # An older main without the tax row; the change forks from it and truncates apply_rate; main
    # then gains the row. Judged against the merge base, no run would call the row.
    git(repo, "checkout", "-q", "-B", "old-main", "main")
    _without_tax_row(repo)
    assert gate(repo, "manifest", "--write").returncode == 0
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "old main: no tax row yet")
    git(repo, "checkout", "-q", "-B", "stale", "old-main")
    tax = repo / "billing" / "tax.py"
    tax.write_text(
        tax.read_text()
        .replace("from decimal import ROUND_HALF_EVEN,", "from decimal import ROUND_DOWN, ROUND_HALF_EVEN,")
        .replace("rounding=ROUND_HALF_EVEN,", "rounding=ROUND_DOWN,")
    )
    examples = repo / "harness" / "examples_test.py"  # and the change's own tests agree with it
    examples.write_text(examples.read_text().replace("    assert ", "    _ = "))
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "truncate")
    git(repo, "checkout", "-q", "-B", "new-main", "old-main")
    git(repo, "checkout", "main", "--", "oracles")
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "main gains the tax row")
    tip = git(repo, "rev-parse", "new-main").strip()
    git(repo, "checkout", "-q", "stale")
    try:
        before = gate(repo, "check", "--base", "new-main", "--head-only")
        assert before.returncode == 0, before.stdout + before.stderr[-3000:]
        statement = tmp_path / "merge.intoto.jsonl"
        proc = gate(repo, "check", "--base", "new-main", "--clean", "--attest", str(statement))
        assert proc.returncode == 4, proc.stdout + proc.stderr[-3000:]
        # verify recomputes the merge result from the recorded head and tip before it reads the verdict.
        merged = json.loads(statement.read_text().splitlines()[1])["predicate"]["judged"]
        assert merged != git(repo, "rev-parse", "HEAD").strip()
        refused = gate(repo, "verify", str(statement), "--commit", merged, "--policy-from", "new-main")
        assert refused.returncode == 4, refused.stderr
        shown = proc.stdout + "\n".join(err for err in proc.stderr.splitlines() if "ERROR" in err or "rror:" in err)
        assert "[4] oracles/billing.toml tax_round_half_even: failed: the invariant does not hold" in proc.stdout, shown
        row = [line for line in proc.stdout.splitlines() if line.strip().startswith("tax_round_half_even ")]
        assert len(row) == 1 and row[0].split()[1] == "failed" and row[0].split()[3] == "failed", shown
        assert f"into the base tip {tip[:12]}" in proc.stdout and "with the base tip's claims" in proc.stdout, shown
        assert "workspace run: in the gate's checkout of the merge result" in proc.stdout, shown
    finally:
        git(repo, "checkout", "-q", "-f", "main")
