"""workspace_seal.py: the workspace run's persistent folder and sealed root, and the refusal (or
the accepted unsealed run) where bubblewrap cannot make it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.runs.workspace_seal import workspace_folder, workspace_seal


@pytest.fixture(autouse=True)
def _runs_under_tmp(monkeypatch):
    from tools.oracle_gate.runs import blocks

    monkeypatch.setattr(blocks, "SANDBOX_WRITABLE", ())  # tmp_path lies under /tmp here


def env(tmp_path: Path, path: str = "/usr/bin:/bin") -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "PATH": path}


def test_the_folder_is_one_per_tree_under_the_runs_folder(tmp_path):
    first = workspace_folder(str(tmp_path / "a"), env(tmp_path))
    assert first.startswith(str(tmp_path / "home" / ".cache" / "oracle-gate" / "runs" / "workspace-"))
    assert (
        first
        == workspace_folder(str(tmp_path / "a"), env(tmp_path))
        != workspace_folder(str(tmp_path / "b"), env(tmp_path))
    )


def test_without_bwrap_the_run_is_refused_and_an_unsealed_run_is_named(tmp_path, monkeypatch):
    from tools.oracle_gate.runs import sealed_root

    def missing(_environ):
        raise GateError("the clean run is sealed with bubblewrap, and `bwrap` is not on PATH; install bubblewrap")

    monkeypatch.setattr(sealed_root, "find_bwrap", missing)
    tree = tmp_path / "tree"
    tree.mkdir()
    no_bwrap = env(tmp_path)
    with (
        pytest.raises(
            GateError,
            match=r"the workspace run is sealed like the clean run, and .*bwrap.*pass "
            r"--unsealed-workspace",
        ),
        workspace_seal(str(tree), str(tree), None, no_bwrap, []),
    ):
        pass
    with workspace_seal(str(tree), str(tree), None, no_bwrap, [], accept_unsealed=True) as seal:
        assert seal.root is None and seal.unsealed.startswith("UNSEALED (--unsealed-workspace): Bazel's server ran")
        assert seal.env == no_bwrap and seal.startup == ()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_the_root_shows_the_tree_read_only_and_hides_its_git_directory(tmp_path):
    tree = tmp_path / "tree"
    (tree / ".git").mkdir(parents=True)
    (tree / ".git" / "config").write_text("secret")
    (tree / "oracles").mkdir()
    try:
        with workspace_seal(str(tree), str(tree), None, env(tmp_path), [str(tree / ".git")]) as seal:
            assert seal.root is not None
            assert seal.root.shows(str(tree / "oracles")) and not seal.root.shows(str(tmp_path / "elsewhere"))
            assert str(tree / ".git") in seal.root.masked and str(tree) in seal.root.trees
            assert (
                "--output_user_root=" + os.path.join(workspace_folder(str(tree), env(tmp_path)), "bazel")
                in seal.startup
            )
    except GateError as exc:  # a machine without user namespaces
        pytest.skip(str(exc))


def test_a_tree_under_tmp_is_refused(tmp_path, monkeypatch):
    from tools.oracle_gate.runs import blocks

    monkeypatch.setattr(blocks, "SANDBOX_WRITABLE", (str(tmp_path / "shm"),))
    tree = tmp_path / "shm" / "tree"
    for unsealed in (False, True):  # an unsealed run's actions could write the tree all the same
        with (
            pytest.raises(UsageError, match=r"lies under .*shm, which Bazel's sandbox leaves writable to every action"),
            workspace_seal(str(tree), str(tree), None, env(tmp_path), [], accept_unsealed=unsealed),
        ):
            pass


def test_a_refused_tree_is_one_line_not_a_run_that_was_not_set_up(tmp_path):
    from tools.oracle_gate.check.runs import _run_or_not_set_up

    def refused(tree, environ):
        raise UsageError(f"the tree {tree} lies under /tmp")

    def broken(tree, environ):
        raise GateError("bazel is not installed")

    with pytest.raises(UsageError, match="lies under /tmp"):
        _run_or_not_set_up(refused, str(tmp_path), {})
    run = _run_or_not_set_up(broken, str(tmp_path), {})
    assert run.build_failed and "bazel is not installed" in run.failure.message
