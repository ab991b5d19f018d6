"""Unit tests of tree.py: Entry modes, GitTree (git objects) and WorkTree (disk) listings and reads."""

from __future__ import annotations

import errno
import os

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.tree import EXECUTABLE, GITLINK, REGULAR, SYMLINK, Entry, GitTree, WorkTree
from tools.testing.gitrepo import GitRepo


@pytest.mark.parametrize(
    "mode, regular",
    [
        (REGULAR, True),
        (EXECUTABLE, True),
        (SYMLINK, False),
        (GITLINK, False),
        ("040000", False),
        ("000000", False),
    ],
)
def test_is_regular_for_each_mode(mode, regular):
    assert Entry(mode, "ref").is_regular is regular


def test_mode_constants_are_gits():
    assert (REGULAR, EXECUTABLE, SYMLINK, GITLINK) == ("100644", "100755", "120000", "160000")


@pytest.fixture
def repo(project: GitRepo) -> GitRepo:
    """The project plus an executable, a symlink to a file and one to a folder, and a near-miss prefix."""
    project.write("shop/run.sh", "#!/bin/sh\n")
    os.chmod(project.path / "shop/run.sh", 0o755)
    os.symlink("calc.py", project.path / "shop/alias.py")
    os.symlink("../oracles", project.path / "shop/oracles_link")
    project.write("shopping/list.txt", "eggs\n")
    project.commit("modes")
    return project


def test_git_tree_lists_a_prefix_with_modes(repo):
    tree = GitTree(str(repo.path), repo.git("rev-parse", "HEAD").strip())
    files = tree.files("shop")
    assert sorted(files) == ["shop/__init__.py", "shop/alias.py", "shop/calc.py", "shop/oracles_link", "shop/run.sh"]
    assert {path: entry.mode for path, entry in files.items()} == {
        "shop/__init__.py": REGULAR,
        "shop/alias.py": SYMLINK,
        "shop/calc.py": REGULAR,
        "shop/oracles_link": SYMLINK,
        "shop/run.sh": EXECUTABLE,
    }
    assert files["shop/calc.py"].ref == repo.git("rev-parse", "HEAD:shop/calc.py").strip()


def test_git_tree_prefix_is_a_folder_not_a_string_prefix(repo):
    tree = GitTree(str(repo.path), "HEAD")
    assert tree.files("sho") == {}
    assert list(tree.files("shopping")) == ["shopping/list.txt"]


def test_git_tree_without_prefix_lists_everything_from_the_root(repo):
    tree = GitTree(str(repo.path / "shop"), "HEAD")  # --full-tree: paths stay repository-relative
    files = tree.files("")
    assert "oracles/policy.toml" in files and "shopping/list.txt" in files and "shop/run.sh" in files
    assert len(files) == len(repo.git("ls-files").splitlines())


def test_git_tree_reads_committed_bytes_and_symlink_targets(repo):
    tree = GitTree(str(repo.path), "HEAD")
    repo.write("shop/run.sh", "changed on disk\n")
    files = tree.files("shop")
    assert tree.read(files["shop/run.sh"]) == b"#!/bin/sh\n"
    assert tree.read(files["shop/alias.py"]) == b"calc.py"
    assert tree.symlinks(files) == {"shop/alias.py": "calc.py", "shop/oracles_link": "../oracles"}


def test_git_tree_attributes(repo):
    commit = repo.git("rev-parse", "HEAD").strip()
    tree = GitTree(str(repo.path), commit)
    assert (tree.committed, tree.commit, tree.repo) == (True, commit, str(repo.path))


def test_git_tree_of_an_older_commit(repo):
    tree = GitTree(str(repo.path), "HEAD~1")
    assert sorted(tree.files("shop")) == ["shop/__init__.py", "shop/calc.py"]


def test_work_tree_reports_symlinks_without_following_them(repo):
    tree = WorkTree(str(repo.path))
    files = tree.files("shop")
    assert {path: entry.mode for path, entry in files.items()} == {
        "shop/__init__.py": REGULAR,
        "shop/alias.py": SYMLINK,
        "shop/calc.py": REGULAR,
        "shop/oracles_link": SYMLINK,
        "shop/run.sh": EXECUTABLE,
    }
    assert files["shop/calc.py"].ref == os.path.join(str(repo.path), "shop", "calc.py")
    assert tree.read(files["shop/run.sh"]) == b"#!/bin/sh\n"
    with pytest.raises(GateError) as caught:
        tree.read(files["shop/alias.py"])
    assert str(caught.value) == f"cannot read {files['shop/alias.py'].ref}: {os.strerror(errno.ELOOP)}"


def test_work_tree_follow_symlinks_reads_the_targets(repo):
    tree = WorkTree(str(repo.path), follow_symlinks=True)
    files = tree.files("shop")
    assert files["shop/alias.py"].mode == REGULAR
    assert files["shop/oracles_link"].mode == "000000"  # a folder: neither a file nor a symlink
    assert tree.read(files["shop/alias.py"]) == repo.read("shop/calc.py")
    assert "shop/oracles_link/policy.toml" not in files


def test_work_tree_sees_untracked_files_and_a_missing_prefix(repo):
    repo.write("shop/new.py", "x = 1\n")
    tree = WorkTree(str(repo.path))
    assert tree.read(tree.files("shop")["shop/new.py"]) == b"x = 1\n"
    assert tree.files("sho") == {}
    assert tree.files("nowhere") == {}


def test_work_tree_read_of_a_missing_file_is_a_gate_error(tmp_path):
    tree = WorkTree(str(tmp_path))
    with pytest.raises(GateError) as caught:
        tree.read(Entry(REGULAR, str(tmp_path / "gone")))
    assert str(caught.value) == f"cannot read {tmp_path / 'gone'}: No such file or directory"
    assert caught.value.code == 1


def test_work_tree_attributes(tmp_path):
    tree = WorkTree(str(tmp_path))
    assert (tree.committed, tree.root, tree.follow) == (False, str(tmp_path), False)
    assert WorkTree(str(tmp_path), follow_symlinks=True).follow is True
