"""Runs pytest files as a Bazel py_test: pinned pytest, no plugin autoload, JUnit XML to $XML_OUTPUT_FILE.

Usage: pytest_main.py TEST_FILE... (runfiles-relative paths, as `$(rootpath ...)` gives them).
"""

from __future__ import annotations

import os
import sys

import pytest


def main(argv: list[str]) -> int:
    """Runs pytest on the given files from the runfiles root; returns pytest's exit code."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    args = list(argv) + ["-p", "no:cacheprovider", "-q", "-o", "junit_family=xunit2"]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args += ["--junitxml", xml]
    return int(pytest.main(args))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
