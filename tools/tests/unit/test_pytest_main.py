"""tools/testing/pytest_main.py: Bazel's test sharding protocol, each shard a share of the tests."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tools.testing import pytest_main


def collect(total: int) -> list[list[str]]:
    """The tests each of `total` shards keeps of ten collected ones, and what it deselected."""
    shares = []
    for index in range(total):
        items = [f"t{i}" for i in range(10)]
        dropped: list[str] = []
        config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items, seen=dropped: seen.extend(items)))
        pytest_main.Shard(index, total).pytest_collection_modifyitems(config, items)  # type: ignore[arg-type]
        assert sorted(items + dropped) == sorted(f"t{i}" for i in range(10))
        shares.append(items)
    return shares


def test_every_test_runs_in_exactly_one_shard_in_collection_order():
    shares = collect(3)
    assert shares == [["t0", "t3", "t6", "t9"], ["t1", "t4", "t7"], ["t2", "t5", "t8"]]


def test_an_unsharded_run_keeps_every_test(tmp_path):
    assert pytest_main.shard({}) is None
    status = tmp_path / "status"
    assert (
        pytest_main.shard({"TEST_TOTAL_SHARDS": "1", "TEST_SHARD_INDEX": "0", "TEST_SHARD_STATUS_FILE": str(status)})
        is None
    )
    assert status.exists()


def test_a_sharded_run_touches_the_status_file_and_names_its_share(tmp_path):
    status = tmp_path / "status"
    plugin = pytest_main.shard(
        {"TEST_TOTAL_SHARDS": "2", "TEST_SHARD_INDEX": "1", "TEST_SHARD_STATUS_FILE": str(status)}
    )
    assert plugin is not None and (plugin.index, plugin.total) == (1, 2) and status.exists()


@pytest.mark.parametrize("index, total", [("2", "2"), ("x", "2"), ("", "2"), ("0", "two")])
def test_a_shard_that_is_no_shard_is_refused(index, total):
    with pytest.raises(SystemExit, match="is no shard"):
        pytest_main.shard({"TEST_TOTAL_SHARDS": total, "TEST_SHARD_INDEX": index})
