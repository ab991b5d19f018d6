"""Runs pytest files as a Bazel py_test: pinned pytest, no plugin autoload, JUnit XML to $XML_OUTPUT_FILE.

Usage: pytest_main.py TEST_FILE... (runfiles-relative paths, as `$(rootpath ...)` gives them).

A target with `shard_count` runs its share of the collected tests in each shard: Bazel's test
sharding protocol (the Test Encyclopedia, "Test sharding": TEST_TOTAL_SHARDS, TEST_SHARD_INDEX, and
TEST_SHARD_STATUS_FILE touched to say the runner shards). Test i of the collection order goes to
shard i mod TEST_TOTAL_SHARDS, so each shard gets a share of every module's cases in order.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest


class Shard:
    """A pytest plugin that keeps the collected tests of one Bazel shard (`index` of `total`)."""

    def __init__(self, index: int, total: int) -> None:
        self.index = index
        self.total = total

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Deselects every test that is not this shard's (i mod total != index)."""
        kept = [item for i, item in enumerate(items) if i % self.total == self.index]
        dropped = [item for i, item in enumerate(items) if i % self.total != self.index]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def shard(environ: Mapping[str, str]) -> Shard | None:
    """The plugin of this shard when Bazel runs the target sharded, else None; touches
    TEST_SHARD_STATUS_FILE when Bazel names one.

    Raises:
        SystemExit: (exit 2) when TEST_TOTAL_SHARDS or TEST_SHARD_INDEX is not a number, or the
            index is not below the total.
    """
    total, index = environ.get("TEST_TOTAL_SHARDS", ""), environ.get("TEST_SHARD_INDEX", "")
    if not total:
        return None
    if not (total.isdigit() and index.isdigit() and int(index) < int(total)):
        raise SystemExit(f"pytest_main: TEST_SHARD_INDEX {index!r} of TEST_TOTAL_SHARDS {total!r} is no shard")
    status = environ.get("TEST_SHARD_STATUS_FILE")
    if status:
        Path(status).touch()
    return Shard(int(index), int(total)) if int(total) > 1 else None


def main(argv: list[str]) -> int:
    """Runs pytest on the given files from the runfiles root; returns pytest's exit code (0 too
    for a shard that got no test)."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    args = list(argv) + ["-p", "no:cacheprovider", "-q", "-o", "junit_family=xunit2"]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args += ["--junitxml", xml]
    plugin = shard(os.environ)
    code = int(pytest.main(args, plugins=[plugin] if plugin else []))
    return 0 if plugin and code == int(pytest.ExitCode.NO_TESTS_COLLECTED) else code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
