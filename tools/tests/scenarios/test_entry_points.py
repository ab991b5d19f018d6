"""The gate's build and test entry points ignore files next to them in the source tree.

Python puts a script's real folder first on `sys.path`; under Bazel that is the source tree's
`tools/oracle_gate/actions/`, where a change could leave an untracked module or bytecode file. Every
entry point in `actions/` drops that folder with the same first line (`actions.GUARD`) before
importing anything else, `__future__` included. `python3 -m tools.oracle_gate` run from a
checkout the change wrote puts the standard library before that checkout's root-level modules.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tools.oracle_gate as gate_pkg
from tools.oracle_gate.actions import GUARD

GATE = Path(gate_pkg.__file__).parent
REPO_ROOT = GATE.parent.parent


ENTRY_POINTS = sorted(p.name for p in (GATE / "actions").glob("*.py") if 'if __name__ == "__main__":' in p.read_text())
# The entry points with an argparse command line (`--help` prints usage and exits 0).
WITH_USAGE = {"draw.py", "judge.py", "observe.py", "pin_check.py", "reference_check.py"}


def test_every_action_module_with_a_main_is_an_entry_point_here():
    assert set(ENTRY_POINTS) == {
        "caller.py",
        "draw.py",
        "judge.py",
        "manifest_test.py",
        "observe.py",
        "pin_check.py",
        "reference_check.py",
    }


@pytest.mark.parametrize("script", ENTRY_POINTS)
def test_each_entry_point_starts_with_the_guard(script):
    tree = ast.parse((GATE / "actions" / script).read_text())
    first = (
        tree.body[1]
        if isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
        else tree.body[0]
    )
    guard = ast.parse(GUARD).body
    assert ast.dump(first) == ast.dump(guard[0]), f"{script}: the first statement is not actions.GUARD"
    lines = (GATE / "actions" / script).read_text().splitlines()
    assert GUARD in lines, f"{script}: the guard line differs from actions.GUARD"


def _plant(folder: Path) -> None:
    for name in ("argparse", "json", "__future__", "hashlib"):
        (folder / f"{name}.py").write_text(f"raise SystemExit('SHADOWED: the planted {name} was imported')\n")


@pytest.mark.parametrize("via_symlink", [False, True], ids=["copy", "symlink"])
@pytest.mark.parametrize("script", ENTRY_POINTS)
def test_a_module_planted_next_to_an_entry_point_is_not_imported(tmp_path, script, via_symlink):
    # Bazel starts an entry point through a runfiles symlink; Python puts the symlink's target
    # folder first on sys.path, so the guard must compare real paths.
    folder = tmp_path / "src"
    folder.mkdir()
    shutil.copy(GATE / "actions" / script, folder / script)
    _plant(folder)
    start = folder / script
    if via_symlink:
        (tmp_path / "runfiles").mkdir()
        start = tmp_path / "runfiles" / script
        start.symlink_to(folder / script)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(
        [sys.executable, "-S", str(start), "--help"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert "SHADOWED" not in proc.stdout + proc.stderr
    if script in WITH_USAGE:
        assert proc.returncode == 0, proc.stderr
        assert "usage:" in proc.stdout


TOOLS_DIR = Path(__file__).resolve().parents[2]


def test_root_level_modules_of_the_checkout_do_not_shadow_the_standard_library(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(TOOLS_DIR, checkout / "tools", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    for name in ("textwrap", "json", "argparse", "shutil"):
        (checkout / f"{name}.py").write_text(f'raise SystemExit("SHADOWED {name}")\n')
    for flags in ([], ["-B", "-s", "-E"]):
        proc = subprocess.run(
            [sys.executable, *flags, "-m", "tools.oracle_gate", "init", "--help"],
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0 and "SHADOWED" not in proc.stdout + proc.stderr, proc.stderr
        assert proc.stdout.startswith("usage: oracle_gate init"), proc.stdout
