"""Figures 16 and 17 of bench/run.py: the owners' commands against what they stand in for, measured
in the same run (docs/performance.md says what each measures).

 16 recording     `record tax_round_half_even --count N` on a committed copy of this checkout (the
                  entry run at the base tip in the probe: a fresh sealed root and Bazel server) / a
                  plain loop calling the base tip's `apply_rate` on as many inputs in one interpreter
 17 dependencies  `lock` of a library's third-party requirements (pins and sha256 from pip's
                  configured index) / pip's own resolution of the same file
                  (`pip install --dry-run --report`, wheels only)

Timed pairs run A/B interleaved and report medians.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench import speed

# Figure 16's row (oracles/billing.toml), a fixed salt so that every round records the same samples,
# and the fresh samples drawn from its generator per round.
RECORDED_ROW = "tax_round_half_even"
RECORD_SALT = "0123456789abcdef"
RECORD_COUNT = {"full": 200, "small": 50, "smoke": 5}
# The plain loop of figure 16: the base tip's `apply_rate` (its file given as argv[1]) called on
# argv[2] generated inputs in one interpreter.
PLAIN_LOOP = """
import importlib.util, random, sys
sys.path.insert(0, sys.argv[3])
spec = importlib.util.spec_from_file_location("billing.tax_base", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
rng = random.Random(16)
inputs = [(rng.randrange(0, 10**9), rng.choice(["0.5", "0.01", "0.0825", "0.125"])) for _ in range(int(sys.argv[2]))]
results = [module.apply_rate(a, r) for a, r in inputs]
"""
# Figure 17's library: the third-party requirements of tools/testing/adoption.py's library, and one
# with dependencies of its own.
REQUIREMENTS = "attrs\nsortedcontainers\nrequests\n"


def record_seconds(repo: Path, env: dict[str, str], count: int) -> tuple[float, int]:
    """(wall seconds, samples tried) of `record RECORDED_ROW --base main --count COUNT` in `repo`,
    nothing written.

    Raises:
        SystemExit: when `record` fails or prints no sample count.
    """
    cmd = speed.gate_command(
        repo, "record", RECORDED_ROW, "--base", "main", "--count", str(count), "--salt", RECORD_SALT
    )
    seconds, proc = _timed(cmd, speed.GATE, env)
    tried = re.search(r"(\d+) sample\(s\) for ", proc.stdout)
    if proc.returncode != 0 or tried is None:
        raise SystemExit(f"bench: figure 16: record exited {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    return seconds, int(tried.group(1))


def record_figure(
    work: Path, env_for: Callable[[Path], dict[str, str]], scale: str, times: int
) -> tuple[dict[str, float], int]:
    """Figure 16: `record` of one row on a committed copy of this checkout (speed.refactor_copy: the
    base tip `main`) / a plain loop over as many inputs, interleaved `times` times after one warm-up
    round of `record`. Returns ({"record", "plain loop"} -> median seconds, the samples `record` tried)."""
    repo = speed.refactor_copy(work)
    # `record` reads the base tip, and refuses to run on a branch that is not on its history.
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True, capture_output=True)
    env = env_for(speed.fresh_home(work / "behaviour" / "record-home"))
    base = work / "behaviour" / "tax_base.py"
    base.write_bytes(
        subprocess.run(["git", "-C", str(repo), "show", "main:billing/tax.py"], capture_output=True, check=True).stdout
    )
    count = RECORD_COUNT[scale]
    try:
        _, tried = record_seconds(repo, env, count)
        loop = [sys.executable, "-B", "-c", PLAIN_LOOP, str(base), str(tried), str(repo)]
        seconds = speed.interleaved(
            {"record": lambda: record_seconds(repo, env, count)[0], "plain loop": lambda: speed.wall(loop, repo)},
            times,
        )
        return seconds, tried
    finally:
        speed.shutdown(repo, env)


def lock_figure(work: Path, times: int) -> dict[str, float]:
    """Figure 17: `lock` of REQUIREMENTS in a git repository of its own (the lock removed before
    each round, so that every round resolves and writes it) / `pip install --dry-run --report` of
    the same file with the same interpreter, wheels only, interleaved `times` times after one
    warm-up round each. Returns {"lock", "pip resolve"} -> median seconds.

    Raises:
        SystemExit: when either command fails (pip's index cannot be reached, say).
    """
    repo = speed.fresh_home(work / "dependencies")
    (repo / "requirements.in").write_text(REQUIREMENTS)
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    lock = speed.gate_command(repo, "lock")
    report = repo.parent / "dependencies-report.json"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--quiet",
        "--ignore-installed",
        "--only-binary=:all:",
        "--report",
        str(report),
        "-r",
        str(repo / "requirements.in"),
    ]

    def run(cmd: list[str], what: str) -> float:
        (repo / "requirements_lock.txt").unlink(missing_ok=True)
        seconds, proc = _timed(cmd, speed.GATE, None)
        if proc.returncode != 0:
            raise SystemExit(f"bench: figure 17: {what} exited {proc.returncode}: {proc.stderr[-2000:]}")
        return seconds

    run(lock, "lock")
    run(pip, "pip")
    return speed.interleaved({"lock": lambda: run(lock, "lock"), "pip resolve": lambda: run(pip, "pip")}, times)


def _timed(cmd: list[str], cwd: Path, env: dict[str, str] | None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """(wall seconds, the finished process, its output captured as text) of `cmd`."""
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, proc
