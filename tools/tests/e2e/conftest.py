"""Fixtures of the end-to-end tests: one committed copy of this workspace per test module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.oracle_gate.runs.flags import SERVER_JVM_FLAGS
from tools.testing.workspace_copy import committed_copy, gate, nested_env, shutdown, source_root


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Temporary folders under TEST_TMPDIR, not /tmp: the gate refuses a tree under /tmp, which
    Bazel's sandbox leaves writable to every action (tools/oracle_gate/runs/workspace_seal.py)."""
    if config.option.basetemp is None and os.environ.get("TEST_TMPDIR"):
        config.option.basetemp = str(Path(os.environ["TEST_TMPDIR"]) / "pytest")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of this workspace's tracked and untracked files, committed as branch `main`; the
    nested Bazel server it starts is stopped when the module's tests are done."""
    ws = committed_copy(tmp_path_factory.mktemp("e2e") / "ws")
    yield ws
    shutdown(ws)


@pytest.fixture(scope="session", autouse=True)
def kept_roots_end() -> Iterator[None]:
    """Ends every kept root (tools/oracle_gate/runs/kept_root.py) the target's checks left in the
    nested runs folder, with its Bazel server, when the target's tests are done."""
    yield
    gate(source_root(), "stop", cwd=source_root(), timeout=120)


@pytest.fixture(scope="session", autouse=True)
def nested_server_flags() -> None:
    """The nested Bazel servers the tests start on the host read a `~/.bazelrc` (HOME is
    TEST_TMPDIR, `nested_env`) that gives them the JVM flags of the gate's own servers
    (SERVER_JVM_FLAGS): each serves one test module."""
    rc = Path(nested_env()["HOME"]) / ".bazelrc"
    rc.write_text("".join(f"startup {flag}\n" for flag in SERVER_JVM_FLAGS))
