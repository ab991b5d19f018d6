"""Every gate module imports on its own in a fresh interpreter (no cycles, no import-time effects)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import tools.oracle_gate
import tools.oracle_gate.commands

MODULES = sorted(
    [f"tools.oracle_gate.{m.name}" for m in pkgutil.iter_modules(tools.oracle_gate.__path__) if m.name != "__main__"]
    + [f"tools.oracle_gate.commands.{m.name}" for m in pkgutil.iter_modules(tools.oracle_gate.commands.__path__)]
)


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
                    "tools.oracle_gate.verdicts"}  # verdicts: used by the harness, not by check
    assert set(MODULES) - entry_points <= loaded
