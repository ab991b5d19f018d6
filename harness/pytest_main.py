"""Runs the harness's pytest files with the pinned pytest and writes JUnit XML to $XML_OUTPUT_FILE.

Usage (from the py_test's args): pytest_main.py TEST_FILE...
"""

from __future__ import annotations

import os
import sys

import pytest


def main(argv: list[str]) -> int:
    """Runs pytest on the given files; returns pytest's exit code."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    here = os.path.dirname(os.path.abspath(__file__))
    args = [os.path.join(here, os.path.basename(f)) for f in argv]
    args += ["-p", "no:cacheprovider", "-q", "-o", "junit_family=xunit2", "--rootdir", here]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args += ["--junitxml", xml]
    return int(pytest.main(args))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
