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


def test_pytest_comes_from_the_pip_repository():
    # The repository rule installs into external/pypi/site; the host's copy lives elsewhere.
    assert "/pypi/site/pytest/" in pytest.__file__.replace("\\", "/"), pytest.__file__


def test_runfiles_comes_from_the_pip_repository():
    assert "/pypi/site/runfiles/" in runfiles_pkg.__file__.replace("\\", "/"), runfiles_pkg.__file__
