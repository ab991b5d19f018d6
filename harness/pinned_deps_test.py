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
    # Both pip repository rules (pip_lock_repository, rules_python's pip_parse) put the packages in
    # the test's runfiles; the host's copies live elsewhere.
    tree = os.path.abspath(os.environ["TEST_SRCDIR"])
    return os.path.commonpath([tree, os.path.abspath(path)]) == tree


def test_pytest_comes_from_the_pip_repository():
    assert _in_runfiles(pytest.__file__), pytest.__file__


def test_runfiles_comes_from_the_pip_repository():
    assert _in_runfiles(runfiles_pkg.__file__), runfiles_pkg.__file__
