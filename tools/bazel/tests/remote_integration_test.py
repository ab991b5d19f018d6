"""Remote cache and remote execution on a real REAPI engine (BuildGrid on 127.0.0.1).

Proven with Bazel's own process summary lines:
- a second, fresh output root gets remote cache hits for the harness;
- the harness executes remotely (`remote` processes) with the same per-id outcomes as locally;
- a harness that reads a file it did not declare passes locally, fails remotely, and
  `check --clean --remote` reports it with exit 6.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tools.bazel.tests.workspace_copy import copy_workspace, git, nested_env, shutdown
from tools.tests.reapi.engine import cache_server, execution_engine

TIMEOUT_S = 1500


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory):
    ws = copy_workspace(tmp_path_factory.mktemp("remote") / "ws")
    git(ws, "-c", "init.defaultBranch=main", "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "--no-gpg-sign", "-m", "base")
    yield ws
    shutdown(ws)


def bazel(ws: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bazel", "--batch", f"--output_user_root={root}", *args], cwd=ws, env=nested_env(),
                          capture_output=True, text=True, check=False, timeout=TIMEOUT_S)


def gate(ws: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/usr/bin/python3", "-B", "-m", "tools.oracle_gate", *args], cwd=ws, env=env,
                          capture_output=True, text=True, check=False, timeout=TIMEOUT_S)


def summary(output: str) -> str:
    lines = [line for line in output.splitlines() if re.match(r"INFO: \d+ process(es)?: ", line)]
    assert lines, output[-3000:]
    return lines[-1]


def count(line: str, kind: str) -> int:
    match = re.search(rf"(\d+) {kind}\b", line)
    return int(match.group(1)) if match else 0


def test_a_fresh_output_root_gets_remote_cache_hits(repo, tmp_path):
    with cache_server(tmp_path / "cache") as endpoint:
        first = bazel(repo, tmp_path / "root-a", "test", "--config=remote-cache", f"--remote_cache={endpoint}",
                      "//harness/...")
        assert first.returncode == 0, first.stderr[-3000:]
        second = bazel(repo, tmp_path / "root-b", "test", "--config=remote-cache", f"--remote_cache={endpoint}",
                       "//harness/...")
        assert second.returncode == 0, second.stderr[-3000:]
    line = summary(second.stderr)
    print(f"second output root: {line}")
    assert count(line, "remote cache hit") >= 3, line  # at least the three harness test actions


def test_remote_execution_matches_local_outcomes_and_catches_undeclared_reads(repo, tmp_path):
    with execution_engine(tmp_path / "engine") as endpoint:
        env = nested_env() | {"ORACLE_GATE_REMOTE_EXECUTOR": endpoint}
        remote = gate(repo, "clean-run", "--base", "main", "--remote", "--out", str(tmp_path / "remote.xml"), env=env)
        assert remote.returncode == 0, remote.stdout + remote.stderr[-3000:]
        line = next(x for x in remote.stdout.splitlines() if x.startswith("clean run: INFO:"))
        print(f"remote clean run: {line}")
        assert count(line, "remote") >= 3, line
        local = gate(repo, "clean-run", "--base", "main", "--out", str(tmp_path / "local.xml"), env=nested_env())
        assert local.returncode == 0, local.stdout + local.stderr[-3000:]
        compared = gate(repo, "compare", str(tmp_path / "local.xml"), str(tmp_path / "remote.xml"), env=nested_env())
        assert (compared.returncode, compared.stdout.strip()) == (0, "runs agree: 3 id(s), same outcomes")

        # A harness that reads a committed file it never declared as data.
        git(repo, "checkout", "-q", "-b", "undeclared")
        (repo / "harness" / "undeclared_fixture.txt").write_text("read but not declared\n")
        test = repo / "harness" / "invariants_test.py"
        test.write_text(test.read_text().replace(
            "    inv, fn, samples = loaded\n",
            "    inv, fn, samples = loaded\n"
            "    here = os.path.dirname(os.path.realpath(__file__))\n"
            "    assert os.path.exists(os.path.join(here, 'undeclared_fixture.txt')), 'undeclared input missing'\n", 1))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--no-gpg-sign", "-m", "read an undeclared file")
        try:
            workspace = bazel(repo, tmp_path / "root-local", "test", "//harness:invariants_test")
            assert workspace.returncode == 0, workspace.stderr[-3000:]
            checked = gate(repo, "check", "--base", "main", "--clean", "--remote", env=env)
        finally:
            git(repo, "checkout", "-q", "main")
    assert checked.returncode == 6, checked.stdout + checked.stderr[-3000:]
    assert "[6] harness/ tax_round_half_even: workspace run passed, clean remote run failed" in checked.stdout
    print([x for x in checked.stdout.splitlines() if " run: INFO:" in x])
