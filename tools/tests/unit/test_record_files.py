"""record_files.py: the owners' `oracles/` of the work tree, and the build files a commit lacks
(never a Python source, never a file the commit holds, never one git ignores)."""

from __future__ import annotations

from tools.oracle_gate.authoring.record_files import build_files_lacking, work_oracles
from tools.oracle_gate.git.tree import WorkTree
from tools.testing.gitrepo import GitRepo


def test_the_build_files_a_commit_lacks_come_from_the_work_tree(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("shop/calc.py", "x = 1\n")
    repo.write("BUILD.bazel", "# committed\n")
    commit = repo.commit("before init")
    for path in ("WORKSPACE", ".bazelrc", "shop/BUILD.bazel", "tools/rules.bzl", "requirements_lock.txt"):
        repo.write(path, f"# {path}\n")
    repo.write("BUILD.bazel", "# changed in the work tree\n")
    repo.write("shop/new.py", "y = 2\n")
    repo.write("oracles/BUILD.bazel", "# owners'\n")
    repo.write("ignored/BUILD.bazel", "# ignored\n")
    repo.write(".gitignore", "ignored/\n")
    found = build_files_lacking(str(repo.path), commit)
    assert sorted(found) == [".bazelrc", "WORKSPACE", "requirements_lock.txt", "shop/BUILD.bazel", "tools/rules.bzl"]
    assert found["WORKSPACE"] == b"# WORKSPACE\n"


def test_the_owners_oracles_are_every_regular_file_under_oracles(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("oracles/a.toml", "rows")
    repo.write("oracles/blobs/a.json", "[]")
    (repo.path / "oracles" / "link").symlink_to("a.toml")
    assert work_oracles(WorkTree(str(repo.path))) == {"oracles/a.toml": b"rows", "oracles/blobs/a.json": b"[]"}
