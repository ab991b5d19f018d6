"""Shared fixtures: no ambient git variables, a fresh project repository, a gate runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.oracle_gate.cli import main
from tools.testing.gitrepo import GIT_ENV, IDS, GitRepo, make_project


@pytest.fixture(autouse=True)
def _no_ambient_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("GIT_") or key in ("PR_LABELS", "CI_MERGE_REQUEST_LABELS", "BUILD_WORKSPACE_DIRECTORY"):
            monkeypatch.delenv(key, raising=False)
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def project(tmp_path: Path) -> GitRepo:
    return make_project(tmp_path / "repo")


class Gate:
    """Runs the gate CLI in-process and captures its output."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *argv: str, environ: dict[str, str] | None = None) -> tuple[int, str, str]:
        self.capsys.readouterr()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        env.update(GIT_ENV)
        env.update(environ or {})
        code = main(list(argv), env)
        out, err = self.capsys.readouterr()
        return code, out, err


@pytest.fixture
def gate(capsys: pytest.CaptureFixture[str]) -> Gate:
    return Gate(capsys)


@pytest.fixture
def all_passed() -> dict[str, str]:
    return {i: "passed" for i in IDS}


@pytest.fixture
def gate_factory(capsys: pytest.CaptureFixture[str]):
    """A Gate maker for tests whose examples outlive one fixture instance (hypothesis)."""
    return lambda: Gate(capsys)
