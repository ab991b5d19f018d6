"""Remote cache and remote execution on a real REAPI engine (BuildGrid on 127.0.0.1).

Proven with Bazel's own process summary lines:
- a second, fresh output root gets remote cache hits for the oracle test and the harness;
- the oracle test executes remotely (`remote` processes) with the same per-id outcomes and
  observation digests as locally;
- production code that reads a file it did not declare passes locally, fails remotely, and
  `check --clean --remote` reports it with exit 6;
- production code that searches the whole file system for expected values finds none on the
  locked-down worker, so the clean remote run fails the invariant.

It needs a nested Bazel because the remote cache and execution it proves are Bazel's, through the
gate's runs and plain `bazel test`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tools.engine.engine import cache_server, execution_engine
from tools.testing.workspace_copy import gate, git, nested_env

TIMEOUT_S = 1500


def bazel(ws: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bazel", "--batch", f"--output_user_root={root}", *args],
        cwd=ws,
        env=nested_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=TIMEOUT_S,
    )


def summary(output: str) -> str:
    lines = [line for line in output.splitlines() if re.match(r"INFO: \d+ process(es)?: ", line)]
    assert lines, output[-3000:]
    return lines[-1]


def count(line: str, kind: str) -> int:
    match = re.search(rf"(\d+) {kind}\b", line)
    return int(match.group(1)) if match else 0


def test_a_fresh_output_root_gets_remote_cache_hits(repo, tmp_path):
    with cache_server(tmp_path / "cache") as endpoint:
        first = bazel(
            repo,
            tmp_path / "root-a",
            "test",
            "--config=remote-cache",
            f"--remote_cache={endpoint}",
            "//oracles/...",
            "//harness/...",
        )
        assert first.returncode == 0, first.stderr[-3000:]
        second = bazel(
            repo,
            tmp_path / "root-b",
            "test",
            "--config=remote-cache",
            f"--remote_cache={endpoint}",
            "//oracles/...",
            "//harness/...",
        )
        assert second.returncode == 0, second.stderr[-3000:]
    line = summary(second.stderr)
    print(f"second output root: {line}")
    assert count(line, "remote cache hit") >= 3, line  # at least the three test actions


def test_remote_execution_matches_local_outcomes_and_catches_undeclared_reads(repo, tmp_path):
    with execution_engine(tmp_path / "engine") as endpoint:
        env = nested_env() | {"ORACLE_GATE_REMOTE_EXECUTOR": endpoint}
        remote = gate(repo, "clean-run", "--base", "main", "--remote", "--out", str(tmp_path / "remote.xml"), env=env)
        assert remote.returncode == 0, remote.stdout + remote.stderr[-3000:]
        # One summary per invocation: the views, the change's code, the judge.
        lines = [x for x in remote.stdout.splitlines() if x.startswith("clean run: Bazel ")]
        print(f"remote clean run: {lines}")
        assert len(lines) == 3 and sum(count(line, "remote") for line in lines) >= 6, lines
        assert not any(count(line, "linux-sandbox") or count(line, "local") for line in lines), lines
        local = gate(repo, "clean-run", "--base", "main", "--out", str(tmp_path / "local.xml"), env=nested_env())
        assert local.returncode == 0, local.stdout + local.stderr[-3000:]
        compared = gate(repo, "compare", str(tmp_path / "local.xml"), str(tmp_path / "remote.xml"), env=nested_env())
        assert (compared.returncode, compared.stdout.strip()) == (
            0,
            "runs agree: 6 id(s), same outcomes and observation digests",
        )

        # Production code that needs a committed file it never declared.
        git(repo, "checkout", "-q", "-b", "undeclared")
        (repo / "billing" / "undeclared_fixture.txt").write_text("read but not declared\n")
        with open(repo / "billing" / "tax.py", "a", encoding="utf-8") as f:
            f.write(UNDECLARED)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--no-gpg-sign", "-m", "read an undeclared file")
        try:
            checked = gate(repo, "check", "--base", "main", "--clean", "--remote", env=env)
        finally:
            git(repo, "checkout", "-q", "-f", "main")
        assert checked.returncode == 6, checked.stdout + checked.stderr[-3000:]
        assert (
            "[6] oracles/ tax_round_half_even: workspace run passed, clean remote run failed: outcomes differ"
            in checked.stdout
        )
        print([x for x in checked.stdout.splitlines() if " run: Bazel " in x])

        # Production code that searches every readable file for recorded answers.
        git(repo, "checkout", "-q", "-b", "search")
        tax = repo / "billing" / "tax.py"
        tax.write_text(
            tax.read_text()
            .replace("from decimal import ROUND_HALF_EVEN,", "from decimal import ROUND_DOWN, ROUND_HALF_EVEN,")
            .replace("rounding=ROUND_HALF_EVEN,", "rounding=ROUND_DOWN,")
            + SEARCH_EVERYWHERE
        )
        git(repo, "commit", "-q", "--no-gpg-sign", "-am", "truncate, and search for the answers")
        try:
            searched = gate(repo, "check", "--base", "main", "--clean", "--remote", "--format", "json", env=env)
        finally:
            git(repo, "checkout", "-q", "-f", "main")
    report = json.loads(searched.stdout)
    assert searched.returncode in (4, 6), searched.stdout + searched.stderr[-3000:]
    assert report["clean_outcomes"]["tax_round_half_even"] == "failed", report
    print(
        "search: workspace",
        report["outcomes"]["tax_round_half_even"],
        "clean remote",
        report["clean_outcomes"]["tax_round_half_even"],
        "exit",
        searched.returncode,
    )


UNDECLARED = """

import os as _os

_HAVE_FIXTURE = _os.path.exists(_os.path.join(_os.path.dirname(_os.path.realpath(__file__)), "undeclared_fixture.txt"))
_declared_apply_rate = apply_rate


def apply_rate(amount_cents, rate):
    if not _HAVE_FIXTURE:
        raise RuntimeError("undeclared input missing")
    return _declared_apply_rate(amount_cents, rate)
"""

SEARCH_EVERYWHERE = """

import json as _json
import os as _os

_MEMO = {}
_seen = [0]
for _folder, _dirs, _names in _os.walk("/"):
    _dirs[:] = [d for d in _dirs if _os.path.join(_folder, d) not in ("/proc", "/sys", "/dev")]
    for _name in _names:
        _seen[0] += 1
        if _seen[0] > 400000:
            break
        if _name.endswith(".json") and "tax" in _name:
            try:
                with open(_os.path.join(_folder, _name), "rb") as _f:
                    for _row in _json.loads(_f.read(1 << 20)):
                        _MEMO[_json.dumps(_row["args"])] = _row["expected"]
            except Exception:
                pass
    if _seen[0] > 400000:
        break
_truncating_apply_rate = apply_rate


def apply_rate(amount_cents, rate):
    key = _json.dumps([amount_cents, rate])
    return _MEMO[key] if key in _MEMO else _truncating_apply_rate(amount_cents, rate)
"""
