"""Style as tests: every Python file of the repository (but oracles/, the owners') passes ruff's
lint (with import order) and ruff's format check, and tools/oracle_gate passes mypy in strict
mode, all with the settings of pyproject.toml. Each check also fails on a copy with a deliberate
violation, so a pass means the tool looked.

The files come in as runfiles (each package's `python_sources`); the tools run on a copy of them
made of plain files, so what they see does not depend on how runfiles are linked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _runfiles_root() -> Path:
    return Path(os.environ["TEST_SRCDIR"]) / os.environ["TEST_WORKSPACE"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the repository's Python files and pyproject.toml, as plain files."""
    root = _runfiles_root()
    copy = tmp_path / "repo"
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        # Bazel 4's runfiles also hold the external repositories under `external/`.
        dirs[:] = [d for d in dirs if not (here == root and d == "external")]
        for name in files:
            if name.endswith(".py") or (here == root and name == "pyproject.toml"):
                target = copy / (here / name).relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(here / name, target)
    assert (copy / "pyproject.toml").is_file() and (copy / "tools/oracle_gate/cli.py").is_file()
    return copy


def _run(tool: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "HOME": str(cwd.parent),
    }
    return subprocess.run(
        [sys.executable, "-m", *tool], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )


def ruff_check(root: Path) -> subprocess.CompletedProcess[str]:
    """`ruff check` (lint and import order) of every file under `root`."""
    return _run(["ruff", "check", "--no-cache", "--config", str(root / "pyproject.toml"), "."], root)


def ruff_format(root: Path) -> subprocess.CompletedProcess[str]:
    """`ruff format --check` of every file under `root`: exit 1 when a file would change."""
    return _run(["ruff", "format", "--check", "--no-cache", "--config", str(root / "pyproject.toml"), "."], root)


def mypy(root: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    """mypy with pyproject.toml's settings (strict) on `paths`, default the package it names."""
    return _run(
        [
            "mypy",
            "--config-file",
            "pyproject.toml",
            "--cache-dir",
            str(root.parent / "mypy-cache"),
            *(paths or ["tools/oracle_gate"]),
        ],
        root,
    )


def test_every_file_passes_the_linter(tree):
    proc = ruff_check(tree)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_file_is_formatted(tree):
    proc = ruff_format(tree)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_gate_passes_the_type_checker(tree):
    proc = mypy(tree)
    assert proc.returncode == 0 and "Success" in proc.stdout, proc.stdout + proc.stderr


def _plant(tree: Path, text: str) -> str:
    path = tree / "tools/oracle_gate/planted.py"
    path.write_text(text)
    return "tools/oracle_gate/planted.py"


@pytest.mark.parametrize(
    "text, rule",
    [
        ('"""Unused import."""\n\nimport os\n', "F401"),
        ('"""Imports out of order."""\n\nimport sys\nimport os\n\nprint(os, sys)\n', "I001"),
        ('"""A bare except."""\n\ntry:\n    pass\nexcept:\n    pass\n', "E722"),
    ],
)
def test_the_linter_fails_on_a_planted_violation(tree, text, rule):
    planted = _plant(tree, text)
    proc = ruff_check(tree)
    assert proc.returncode == 1 and rule in proc.stdout and planted in proc.stdout, proc.stdout + proc.stderr


def test_the_format_check_fails_on_a_planted_violation(tree):
    planted = _plant(tree, '"""Spacing."""\n\nx = ( 1,2 )\n')
    proc = ruff_format(tree)
    assert proc.returncode == 1 and planted in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "text, code",
    [
        ('"""Wrong return type."""\n\n\ndef f(x: int) -> str:\n    return x\n', "return-value"),
        ('"""No annotations: strict refuses them."""\n\n\ndef f(x):\n    return x\n', "no-untyped-def"),
    ],
)
def test_the_type_checker_fails_on_a_planted_violation(tree, text, code):
    planted = _plant(tree, text)
    proc = mypy(tree, planted)
    assert proc.returncode == 1 and f"[{code}]" in proc.stdout and planted in proc.stdout, proc.stdout
