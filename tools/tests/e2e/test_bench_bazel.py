"""The benchmark's Bazel figures (5: incremental, 7: the harness path, 10, 11, 13, 15: the
behaviour phase on a copy of this checkout, and 16: `record` there) run end to end at a tiny size,
on a generated repository that is a Bazel workspace (no timing is asserted), with figure 17 (`lock`,
which needs pip's configured index, as the adoption test does). It needs a nested Bazel because the
figures time Bazel and the gate's own Bazel runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from bench import run


def test_the_bazel_figures_print_bazels_own_counts_and_ratios(tmp_path: Path) -> None:
    # Not under /tmp: the gate refuses a run folder there (figure 7 runs the gate with this home).
    work = Path(os.environ["TEST_TMPDIR"]) / "bench"
    proc = subprocess.run(
        [
            sys.executable,
            "-B",
            str(Path(run.__file__)),
            "--scale",
            "smoke",
            "--figures",
            "5,7,10,11,13,15,16,17,18",
            "--work",
            str(work),
        ],
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        check=False,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = {
        ln.split()[0]: ln
        for ln in proc.stdout.splitlines()
        if ln.split() and ln.split()[0] in ("5", "7", "10", "11", "13", "15", "15b", "16", "17", "18")
    }
    # One blob of one oracle file changed: only that file's oracle test ran, with its pin check,
    # draw, caller and judge; with nothing changed, nothing ran.
    assert "one blob of 6 changed: Executed 1 out of 4 tests" in lines["5"], lines
    assert "INFO: 5 processes: 1 internal, 4 linux-sandbox." in lines["5"], lines
    assert "nothing changed: Executed 0 out of 4 tests" in lines["5"], lines
    assert "check without --results on 6 invariants: cold Bazel " in lines["7"], lines
    assert all("x  (target " in lines[n] for n in ("5", "7", "10", "11", "13", "15")), lines
    assert "warm check " in lines["10"] and "warm bazel test " in lines["10"], lines
    assert "cold bazel test " in lines["11"], lines
    assert "cold check: 1 invariants " in lines["13"] and ", 6 invariants " in lines["13"], lines
    # The refactor keeps every result: the check passes, with the behaviour diff's inputs counted.
    assert "behaviour phase " in lines["15"] and "(the base tip's probe warm, 200 inputs)" in lines["15"], lines
    assert "skipped at this scale" in lines["15b"], lines
    # record tried the row's stored, fresh and boundary samples at the base tip; lock resolved.
    recorded = r"record tax_round_half_even on a copy of this checkout: [0-9.]+ s \(\d+ samples tried"
    assert re.search(recorded, lines["16"]), lines
    assert "lock of attrs, sortedcontainers, requests" in lines["17"] and "x  (target <= 1.5x)" in lines["17"], lines
    # The agent's quick check: the uncommitted bug is exit 4; a harness-only change runs nothing.
    quick = (
        r"warm check --quick of an uncommitted bug in billing/tax.py on a copy of this checkout: [0-9.]+ s \(exit 4\)"
    )
    assert re.search(quick, lines["18"]) and "(no row reached)" in lines["18"], lines
