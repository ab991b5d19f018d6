"""collection.py: the traces an output collected through a symlinked folder leaves, found without
Bazel on a fake execution root laid out as Bazel lays it."""

from __future__ import annotations

import os
from pathlib import Path

from tools.oracle_gate.runs.collection import CANARY_NAME, arm, execroot, traces
from tools.oracle_gate.runs.execlog import Spawn

VIEW = b'{"rows":[{"id":"tax","expected":[2,5,7]}],"schema":1}\n'


def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(execroot, the judge's folder, the oracle test logs) with one judge's view."""
    root = tmp_path / "execroot" / "ws"
    views = root / "bazel-out/k8-fastbuild/bin/oracles/_sealed"
    logs = root / "bazel-out/k8-fastbuild/testlogs/oracles"
    views.mkdir(parents=True)
    logs.mkdir(parents=True)
    (views / "oracles.expectations.json").write_bytes(VIEW)
    return root, views, logs


def spawn(*outputs: str, runner: str = "linux-sandbox") -> Spawn:
    return Spawn("Genrule", runner, tuple(outputs))


def test_the_execroot_is_three_folders_above_bazel_bin():
    assert execroot("/ob/execroot/ws/bazel-out/k8-fastbuild/bin") == "/ob/execroot/ws"


def test_a_canary_goes_into_each_protected_folder_and_a_clean_run_leaves_no_trace(tmp_path):
    root, views, logs = layout(tmp_path)
    guard = arm([str(views), str(logs), str(tmp_path / "missing")])
    assert (views / CANARY_NAME).read_bytes() != (logs / CANARY_NAME).read_bytes()
    out = root / "bazel-out/k8-fastbuild/bin/harness/out.txt"
    out.parent.mkdir(parents=True)
    out.write_bytes(b"the harness's own output, long enough to be compared\n")
    assert traces(guard, [spawn("bazel-out/k8-fastbuild/bin/harness/out.txt")], str(root)) == []


def test_an_output_with_a_protected_file_s_bytes_names_the_action_and_the_file(tmp_path):
    root, views, logs = layout(tmp_path)
    guard = arm([str(views), str(logs)])
    # The server moved the judge's view into the action's output: gone from its place, in the output.
    loot = root / "bazel-out/k8-fastbuild/bin/harness/loot/oracles.expectations.json"
    loot.parent.mkdir(parents=True)
    os.rename(views / "oracles.expectations.json", loot)
    found = traces(guard, [spawn("bazel-out/k8-fastbuild/bin/harness/loot/oracles.expectations.json")], str(root))
    lines = [e.describe() for e in found]
    assert lines[0].startswith(
        "a Genrule action writing bazel-out/k8-fastbuild/bin/harness/loot/oracles.expectations"
        ".json ran and took bazel-out/k8-fastbuild/bin/oracles/_sealed/oracles.expectations.json"
    )
    assert lines[1] == (
        "bazel-out/k8-fastbuild/bin/oracles/_sealed/oracles.expectations.json is gone or changed while "
        "the change's code ran: Bazel's server moved it out as an action's output (an output folder "
        "replaced by a symlink, which Bazel's server follows when it collects outputs: "
        "docs/threat-model.md)"
    )


def test_a_canary_taken_with_its_whole_folder_is_a_trace(tmp_path):
    root, views, logs = layout(tmp_path)
    guard = arm([str(views), str(logs)])
    taken = root / "bazel-out/k8-fastbuild/bin/harness/dir"
    taken.parent.mkdir(parents=True)
    os.rename(logs, taken)
    found = traces(guard, [spawn("bazel-out/k8-fastbuild/bin/harness/dir")], str(root))
    assert "ran and took bazel-out/k8-fastbuild/testlogs/oracles/.oracle-gate-canary" in found[0].describe()


def test_an_output_that_is_a_link_or_holds_one_is_a_trace_and_cache_hits_are_not_read(tmp_path):
    root, views, logs = layout(tmp_path)
    guard = arm([str(views), str(logs)])
    bin_dir = root / "bazel-out/k8-fastbuild/bin/harness"
    bin_dir.mkdir(parents=True)
    (bin_dir / "link").symlink_to(views)
    (bin_dir / "tree").mkdir()
    (bin_dir / "tree" / "inner").symlink_to("/etc/passwd")
    found = traces(
        guard,
        [spawn("bazel-out/k8-fastbuild/bin/harness/link"), spawn("bazel-out/k8-fastbuild/bin/harness/tree")],
        str(root),
    )
    assert ["left that output a link" in e.why for e in found] == [True, False]
    assert "left a link in that output" in found[1].why
    assert traces(guard, [spawn("bazel-out/k8-fastbuild/bin/harness/link", runner="disk cache hit")], str(root)) == []


def test_small_files_are_not_compared_by_their_bytes(tmp_path):
    root, views, logs = layout(tmp_path)
    (views / "tiny.json").write_bytes(b"[]\n")
    guard = arm([str(views), str(logs)])
    out = root / "bazel-out/k8-fastbuild/bin/harness/tiny.json"
    out.parent.mkdir(parents=True)
    out.write_bytes(b"[]\n")
    assert traces(guard, [spawn("bazel-out/k8-fastbuild/bin/harness/tiny.json")], str(root)) == []


def test_a_read_only_protected_tree_is_hashed_and_never_written(tmp_path):
    root, views, logs = layout(tmp_path)
    tree = tmp_path / "tree" / "oracles"
    (tree / "blobs").mkdir(parents=True)
    (tree / "blobs" / "b.json").write_bytes(b'[{"args": [1, 2], "expected": 3}]\n')
    guard = arm([str(views)], [str(tree)])
    assert not (tree / CANARY_NAME).exists()
    # A harness's honest copy of a committed blob is no trace; the blob gone from the tree is.
    out = root / "bazel-out/k8-fastbuild/bin/harness/b.json"
    out.parent.mkdir(parents=True)
    out.write_bytes((tree / "blobs" / "b.json").read_bytes())
    assert traces(guard, [spawn("bazel-out/k8-fastbuild/bin/harness/b.json")], str(root)) == []
    (tree / "blobs" / "b.json").unlink()
    found = traces(guard, [spawn("bazel-out/k8-fastbuild/bin/harness/b.json")], str(root))
    assert [e.describe().split(" is gone")[0] for e in found] == [str(tree / "blobs" / "b.json")]
