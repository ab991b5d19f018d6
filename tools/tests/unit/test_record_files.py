"""record_files.py: the owners' `oracles/` of the work tree, and the build files a commit lacks
(never a Python source, never a file the commit holds, never one git ignores)."""

from __future__ import annotations

from tools.oracle_gate.authoring.record_files import build_files_lacking, work_oracles
from tools.oracle_gate.git.tree import WorkTree
from tools.testing.gitrepo import GitRepo


def test_a_commit_before_init_gets_the_files_init_writes_and_nothing_else(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("shop/calc.py", "x = 1\n")
    commit = repo.commit("before init")
    for path in ("WORKSPACE", ".bazelrc", "BUILD.bazel", "shop/BUILD.bazel", "requirements_lock.txt"):
        repo.write(path, f"# {path}\n")
    # Never taken: another workspace file, a .bzl, a BUILD file outside the production packages.
    for path in ("WORKSPACE.bazel", "tools/rules.bzl", "evil/BUILD.bazel", "shop/rules.bzl"):
        repo.write(path, "# no\n")
    found = build_files_lacking(str(repo.path), commit, ["shop"])
    assert sorted(found) == [".bazelrc", "BUILD.bazel", "WORKSPACE", "requirements_lock.txt", "shop/BUILD.bazel"]
    assert found["WORKSPACE"] == b"# WORKSPACE\n"


def test_a_commit_that_is_a_workspace_gets_nothing_from_the_work_tree(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("shop/calc.py", "x = 1\n")
    repo.write("MODULE.bazel", "module(name = 'shop')\n")
    commit = repo.commit("after init")
    repo.write("WORKSPACE.bazel", "# evil\n")
    repo.write("shop/BUILD.bazel", "# changed\n")
    assert build_files_lacking(str(repo.path), commit, ["shop"]) == {}


def test_the_owners_oracles_are_every_regular_file_under_oracles(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("oracles/a.toml", "rows")
    repo.write("oracles/blobs/a.json", "[]")
    (repo.path / "oracles" / "link").symlink_to("a.toml")
    assert work_oracles(WorkTree(str(repo.path))) == {"oracles/a.toml": b"rows", "oracles/blobs/a.json": b"[]"}
