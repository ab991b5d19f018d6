"""Fixtures of the end-to-end tests: one committed copy of this workspace per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.testing.workspace_copy import committed_copy, shutdown


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of this workspace's tracked and untracked files, committed as branch `main`; the
    nested Bazel server it starts is stopped when the module's tests are done."""
    ws = committed_copy(tmp_path_factory.mktemp("e2e") / "ws")
    yield ws
    shutdown(ws)
