"""Every gate module imports on its own in a fresh interpreter (no cycles, no import-time effects)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import tools.oracle_gate
import tools.oracle_gate.commands
import tools.oracle_gate.runner

MODULES = sorted(
    [f"tools.oracle_gate.{m.name}" for m in pkgutil.iter_modules(tools.oracle_gate.__path__) if m.name != "__main__"]
    + [f"tools.oracle_gate.commands.{m.name}" for m in pkgutil.iter_modules(tools.oracle_gate.commands.__path__)]
    + [f"tools.oracle_gate.runner.{m.name}" for m in pkgutil.iter_modules(tools.oracle_gate.runner.__path__)]
)
# Run next to production code, with only the production library on the path: no gate imports.
CALLER_SIDE = ("caller.py", "observe.py")


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module):
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True,
                          env={"PYTHONPATH": ":".join(sys.path)}, check=False)
    assert proc.returncode == 0, proc.stderr


def test_gate_uses_only_the_standard_library():
    allowed_roots = {"tools"} | set(sys.stdlib_module_names)
    import ast
    import pathlib

    root = pathlib.Path(tools.oracle_gate.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in allowed_roots | {"__future__"}, f"{path}: imports {name}"


def test_the_cli_loads_all_of_check_before_running_anything():
    # A harness run by `check` could rewrite the gate's files on disk; every module `check` uses
    # must already be in memory by then.
    code = ("import sys, tools.oracle_gate.cli; "
            "print(sorted(m for m in sys.modules if m.startswith('tools.oracle_gate')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": ":".join(sys.path)})
    loaded = set(eval(proc.stdout))  # noqa: S307 - our own repr of a list of str
    entry_points = {"tools.oracle_gate.__main__", "tools.oracle_gate.pin_check", "tools.oracle_gate.manifest_test_main",
                    "tools.oracle_gate.verdicts"}  # verdicts: used by the judge, not by check
    runner = {m for m in MODULES if m.startswith("tools.oracle_gate.runner")}  # build actions and the oracle test
    assert set(MODULES) - entry_points - runner <= loaded


def test_the_caller_side_imports_nothing_of_the_gate():
    import ast
    import pathlib

    root = pathlib.Path(tools.oracle_gate.runner.__file__).parent
    for name in CALLER_SIDE:
        for node in ast.walk(ast.parse((root / name).read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0 and node.module and node.module.split(".")[0] in sys.stdlib_module_names | {
                    "__future__"}, f"{name}: imports {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in sys.stdlib_module_names, f"{name}: imports {alias.name}"


def test_the_judge_imports_no_production_harness_or_third_party_code():
    code = ("import sys, runpy; sys.argv=['judge', '--help']\n"
            "try:\n    runpy.run_module('tools.oracle_gate.runner.judge', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m.split('.')[0] for m in sys.modules))")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": ":".join(sys.path)})
    roots = set(eval(proc.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own repr of a list of str
    # -S: the host's site-packages hooks are not the judge's doing.
    assert roots <= set(sys.stdlib_module_names) | {"tools", "__main__"}, roots
