"""The gate's build and test entry points ignore files next to them in the source tree.

Python puts a script's real folder first on `sys.path`; under Bazel that is the source tree's
`tools/oracle_gate/...`, where a change could leave an untracked module or bytecode file. The judge,
the pin check and the draw drop that folder before importing anything else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tools.oracle_gate as gate_pkg

GATE = Path(gate_pkg.__file__).parent
REPO_ROOT = GATE.parent.parent


@pytest.mark.parametrize("script", ["runner/judge.py", "pin_check.py", "runner/draw.py"])
def test_a_module_planted_next_to_an_entry_point_is_not_imported(tmp_path, script):
    folder = tmp_path / "src"
    folder.mkdir()
    shutil.copy(GATE / script, folder / Path(script).name)
    (folder / "argparse.py").write_text("raise SystemExit('SHADOWED: the planted argparse was imported')\n")
    (folder / "json.py").write_text("raise SystemExit('SHADOWED: the planted json was imported')\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-S", str(folder / Path(script).name), "--help"], env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "SHADOWED" not in proc.stdout + proc.stderr
    assert "usage:" in proc.stdout
