"""Unit tests of worktree.py: object_id against git, and differences between the work tree and HEAD."""

from __future__ import annotations

import os
import subprocess

import pytest

from tools.oracle_gate.git.tree import GitTree
from tools.oracle_gate.git.worktree import differences, object_id
from tools.testing.gitrepo import GitRepo

IGNORED = " (ignored, but a BUILD glob could read it)"


def sha256_repo(path) -> GitRepo:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(path)], check=True)
    return GitRepo(path)  # re-initializing keeps the object format


@pytest.mark.parametrize("data", [b"", b"hello\n", b"a\r\nb\x00\xff", bytes(range(256)) * 3])
def test_object_id_is_gits_blob_id(tmp_path, data):
    (tmp_path / "f").write_bytes(data)
    sha1 = GitRepo(tmp_path / "one")
    sha256 = sha256_repo(tmp_path / "two")
    assert object_id(data, "sha1") == sha1.git("hash-object", str(tmp_path / "f")).strip()
    assert object_id(data, "sha256") == sha256.git("hash-object", str(tmp_path / "f")).strip()


def test_object_id_of_the_empty_blob():
    assert object_id(b"", "sha1") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert object_id(b"", "sha256") == "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"


def diff(repo: GitRepo) -> list[str]:
    return differences(str(repo.path), GitTree(str(repo.path), "HEAD"))


def test_a_clean_tree_has_no_differences(project):
    assert diff(project) == []


def test_modified_missing_and_untracked_files(project):
    project.write("shop/calc.py", "def add(a, b):\n    return 0\n")
    os.remove(project.path / "harness/test_shop.py")
    project.write("new.txt", "n\n")
    project.write("newdir/deep/a.py", "n\n")
    assert diff(project) == [
        "harness/test_shop.py (missing)",
        "shop/calc.py (bytes differ from the commit)",
        "new.txt (untracked)",
        "newdir/deep/a.py (untracked)",
    ]


def test_a_staged_but_uncommitted_edit_still_differs(project):
    project.write("shop/calc.py", "x = 1\n")
    project.git("add", "shop/calc.py")
    assert diff(project) == ["shop/calc.py (bytes differ from the commit)"]


def test_ignored_files_are_differences_except_bazel_symlinks_and_bytecode(project):
    project.write(".gitignore", "bazel-*\n__pycache__/\n*.pyc\n*.log\nbuild/\n")
    project.commit("ignore")
    os.symlink("/nonexistent/out", project.path / "bazel-out")  # harmless: a top-level convenience symlink
    os.symlink("/nonexistent/bin", project.path / "bazel-bin")
    project.write("shop/__pycache__/calc.cpython-311.pyc", b"\x00pyc")  # harmless: only .pyc inside
    project.write("bazel-dir/x.py", "x\n")  # a real directory, not a symlink
    os.makedirs(project.path / "shop/sub")
    os.symlink("/nonexistent", project.path / "shop/sub/bazel-out")  # not at the top level
    project.write("harness/__pycache__/evil.py", "x\n")  # a bytecode cache holding source
    project.write("shop/calc.pyc", b"\x00pyc")  # bytecode outside __pycache__
    project.write("debug.log", "x\n")
    project.write("build/gen.py", "x\n")
    assert diff(project) == [
        "bazel-dir/" + IGNORED,
        "build/" + IGNORED,
        "debug.log" + IGNORED,
        "harness/__pycache__/" + IGNORED,
        "shop/calc.pyc" + IGNORED,
        "shop/sub/bazel-out" + IGNORED,
    ]


def test_a_pycache_holding_a_symlink_is_not_harmless(project):
    project.write(".gitignore", "__pycache__/\n")
    project.commit("ignore")
    os.makedirs(project.path / "shop/__pycache__")
    os.symlink("/etc/passwd", project.path / "shop/__pycache__/calc.cpython-311.pyc")
    assert diff(project) == ["shop/__pycache__/" + IGNORED]


def test_type_changes_are_named(project):
    os.symlink("calc.py", project.path / "shop/alias.py")
    project.commit("symlink")
    os.remove(project.path / "shop/alias.py")
    project.write("shop/alias.py", "calc.py")  # same bytes as the link target, but a regular file
    os.remove(project.path / "shop/calc.py")
    os.symlink("__init__.py", project.path / "shop/calc.py")
    assert diff(project) == [
        "shop/alias.py (committed as a symlink, not one here)",
        "shop/calc.py (committed as a regular file, not one here)",
    ]


def test_a_retargeted_symlink_differs(project):
    os.symlink("calc.py", project.path / "shop/alias.py")
    project.commit("symlink")
    os.remove(project.path / "shop/alias.py")
    os.symlink("__init__.py", project.path / "shop/alias.py")
    assert diff(project) == ["shop/alias.py (bytes differ from the commit)"]


def test_a_directory_where_a_file_was_committed(project):
    os.remove(project.path / "tools/gate.py")
    project.write("tools/gate.py/inner", "x\n")
    assert diff(project) == [
        "tools/gate.py (committed as a regular file, not one here)",
        "tools/gate.py/inner (untracked)",
    ]


def test_a_crlf_rewrite_names_the_transformation(project):
    project.write("shop/calc.py", project.read("shop/calc.py").replace(b"\n", b"\r\n"))
    assert diff(project) == [
        "shop/calc.py (bytes differ from the commit, rewritten at checkout: line endings converted from LF to CRLF "
        "(core.autocrlf=true, core.eol=crlf, or a `text`/`eol=crlf` attribute); restore with "
        "`git cat-file blob HEAD:shop/calc.py > shop/calc.py`)"
    ]


def test_a_sha256_repository(tmp_path):
    repo = sha256_repo(tmp_path / "repo")
    repo.write("a.txt", "a\n")
    repo.commit("one")
    assert len(GitTree(str(repo.path), "HEAD").files("")["a.txt"].ref) == 64
    assert diff(repo) == []
    repo.write("a.txt", "b\n")
    assert diff(repo) == ["a.txt (bytes differ from the commit)"]


def test_submodules_are_left_out(project, tmp_path):
    inner = GitRepo(tmp_path / "inner")
    inner.write("x", "x\n")
    oid = inner.commit("inner")
    project.git("update-index", "--add", "--cacheinfo", f"160000,{oid},vendor/inner")
    project.git("commit", "-q", "--no-gpg-sign", "-m", "gitlink")
    assert diff(project) == []
