"""The benchmark scripts run end to end at a tiny size (bench/; no timing is asserted). The Bazel
figures (5 and 7) start a nested Bazel: //tools/tests/e2e:test_bench_bazel runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench import make_repo, run

FIGURES = (
    "1  hashing floor",
    "2  linear growth",
    "3  memory",
    "4  harness",
    "6  warm",
    "8  rows, 1 suite",
    "9  rows, 2 suites",
    "12  memory, speed",
)


def test_run_prints_every_figure_as_a_ratio(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-B",
            str(Path(run.__file__)),
            "--scale",
            "smoke",
            "--work",
            str(tmp_path),
            "--figures",
            "1,2,3,4,6,8,9,12",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    for figure in FIGURES:
        line = next((ln for ln in lines if " ".join(ln.split()).startswith(" ".join(figure.split()))), None)
        assert line is not None and "x  (target " in line, (figure, proc.stdout)


def _head(path: Path) -> str:
    return make_repo.git(path, "rev-parse", "HEAD", "main").strip()


def test_make_repo_is_deterministic_and_each_change_shape_is_judged(tmp_path):
    # Without the label a blob or a row edit is a protected change (2); with it, a re-pinned blob is
    # hashed again and passes (0), and a dropped id is still missing (3).
    shapes = {"production": (0, 0), "blob": (2, 0), "drop": (2, 3)}
    for shape, (code, labelled) in shapes.items():
        first, second = tmp_path / f"{shape}-1", tmp_path / f"{shape}-2"
        for path in (first, second):
            make_repo.generate(path, 6, 2, 4096, 3, 2, shape, 7)
        assert _head(first) == _head(second)
        results = run.results_for(first, 6)
        proc = subprocess.run(
            [
                sys.executable,
                "-B",
                "-m",
                "tools.oracle_gate",
                "--repo",
                str(first),
                "check",
                "--base",
                "main",
                "--results",
                str(results),
            ],
            cwd=run.GATE,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert proc.returncode == code, (shape, proc.stdout)
        if shape == "drop":
            assert "[3]" in proc.stdout  # the dropped id is reported too
        proc = subprocess.run(
            [
                sys.executable,
                "-B",
                "-m",
                "tools.oracle_gate",
                "--repo",
                str(first),
                "check",
                "--base",
                "main",
                "--results",
                str(results),
                "--label",
                "oracle-change",
            ],
            cwd=run.GATE,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert proc.returncode == labelled, (shape, proc.stdout)


def test_an_unknown_figure_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-B", str(Path(run.__file__)), "--figures", "1,19", "--work", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 2 and "names a figure other than 1 to 18" in proc.stderr, proc.stderr
