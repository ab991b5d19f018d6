"""authoring/bazel_rows.py without running Bazel: the copy of the work tree beside the repository,
the sources written into the copy only (never through a link into the owner's tree), the target
names, and the copy removed at the end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.oracle_gate.authoring.bazel_rows import BazelRows, observations_target
from tools.oracle_gate.errors import GateError
from tools.testing.gitrepo import GitRepo


def env(tmp_path):
    return {**os.environ, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    # The output user root goes under the gate's cache folder, which may not lie under /tmp; no
    # Bazel runs here, so the test's own folder stands in for it.
    from tools.oracle_gate.authoring import bazel_rows

    monkeypatch.setattr(bazel_rows, "runs_dir", lambda environ: str(tmp_path / "cache" / "oracle-gate" / "runs"))


def test_a_mutant_goes_into_the_copy_and_the_original_comes_back(tmp_path):
    repo = GitRepo(tmp_path / "lib")
    repo.write("shop/calc.py", "def f(x):\n    return x + 1\n")
    repo.write("notes.txt", "untracked but not ignored\n")
    rows = BazelRows(str(repo.path), env(tmp_path))
    try:
        assert os.path.dirname(rows.tree) == str(tmp_path) and os.path.basename(rows.tree).startswith(
            ".lib.oracle-gate-"
        )
        assert Path(rows.tree, "notes.txt").read_text() == "untracked but not ignored\n"
        rows.set_sources({"shop/calc.py": "def f(x):\n    return x - 1\n"})
        assert "x - 1" in Path(rows.tree, "shop/calc.py").read_text()
        assert "x + 1" in repo.read("shop/calc.py").decode()
        rows.set_sources({})
        assert "x + 1" in Path(rows.tree, "shop/calc.py").read_text()
    finally:
        rows.close()
    assert not os.path.exists(rows.tree) and not os.path.exists(rows.out)


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_source_reached_through_a_link_is_refused_and_the_owners_tree_is_untouched(tmp_path, link):
    repo = GitRepo(tmp_path / "repo")
    repo.write("real/real.py", "def f(x):\n    return x\n")
    if link == "file":
        (repo.path / "shop").mkdir()
        # Inside the repository when read from there; from a copy beside it, the owner's file.
        os.symlink("../../repo/real/real.py", repo.path / "shop" / "calc.py")
    else:
        os.symlink("real", repo.path / "shop")
        os.rename(repo.path / "real" / "real.py", repo.path / "real" / "calc.py")
    rows = BazelRows(str(repo.path), env(tmp_path))
    try:
        with pytest.raises(GateError, match="is a symbolic link, lies under one, or is not a file"):
            rows.set_sources({"shop/calc.py": "MUTANT\n"})
    finally:
        rows.close()
    for path in (repo.path / "real").iterdir():
        assert "MUTANT" not in path.read_text()


def test_each_oracle_file_has_its_callers_target():
    assert observations_target("oracles/shop.toml") == "//oracles:shop_test.observations"
