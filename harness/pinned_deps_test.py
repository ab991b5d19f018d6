"""The harness imports the pytest and runfiles pinned in requirements_lock.txt, not the host's."""

from __future__ import annotations

import os
import re

import pytest
import runfiles as runfiles_pkg
from runfiles import runfiles


def _pins() -> dict[str, str]:
    found = runfiles.Create()
    assert found is not None, "run with `bazel test //harness/...`"
    path = found.Rlocation(os.environ.get("TEST_WORKSPACE", "oracle_gate") + "/requirements_lock.txt")
    with open(path, encoding="utf-8") as f:
        return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", f.read(), re.M)}


def test_pytest_is_the_pinned_version():
    assert pytest.__version__ == _pins()["pytest"]


def _in_runfiles(path: str) -> bool:
    # Both pip repository rules put the packages in a pip repository of the test's runfiles
    # (pip_lock_repository: pypi_site/site/, rules_python: pypi_<name>/site-packages/);
    # the host's copies live elsewhere, and a copy in this workspace would sit under its own name.
    tree = os.path.abspath(os.environ["TEST_SRCDIR"])
    full = os.path.abspath(path)
    if os.path.commonpath([tree, full]) != tree:
        return False
    # Under bzlmod the folder is the canonical name, e.g. rules_python~~pip~pypi_pytest.
    repository = re.split(r"[~+]", os.path.relpath(full, tree).split(os.sep)[0])[-1]
    return repository.startswith("pypi_")


def test_pytest_comes_from_the_pip_repository():
    assert _in_runfiles(pytest.__file__), pytest.__file__


def test_runfiles_comes_from_the_pip_repository():
    assert _in_runfiles(runfiles_pkg.__file__), runfiles_pkg.__file__
