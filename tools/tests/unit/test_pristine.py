"""Unit tests of pristine.py: read_blobs, write_tree, is_dotenv and pristine_tree on real git repositories."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.pristine import is_dotenv, pristine_tree, read_blobs, sync_tree, write_tree
from tools.oracle_gate.git.tree import EXECUTABLE, GITLINK, REGULAR, SYMLINK, Entry, GitTree
from tools.testing.gitrepo import POLICY


def blob(project, data: bytes) -> str:
    project.write("_blob", data)
    oid = project.git("hash-object", "-w", "_blob").strip()
    os.remove(project.path / "_blob")
    return oid


def test_read_blobs_reads_exact_bytes_once_per_id(project):
    one, two, empty = blob(project, b"one\r\n\x00\xff"), blob(project, b"two\n"), blob(project, b"")
    assert read_blobs(str(project.path), [one, two, one, empty]) == {one: b"one\r\n\x00\xff", two: b"two\n", empty: b""}
    assert read_blobs(str(project.path), []) == {}


def test_read_blobs_refuses_missing_and_non_blob_objects(project):
    missing = "0123456789" * 4
    with pytest.raises(GateError, match=f"^git object {missing} is missing or not a blob$"):
        read_blobs(str(project.path), [missing])
    tree = project.git("rev-parse", "HEAD^{tree}").strip()
    with pytest.raises(GateError, match=f"^git object {tree} is missing or not a blob$"):
        read_blobs(str(project.path), [tree])


def test_write_tree_writes_regular_executable_and_symlink_entries(project, tmp_path):
    text, script = blob(project, b"x = 1\n"), blob(project, b"#!/bin/sh\n")
    entries = {
        "pkg/mod.py": Entry(REGULAR, text),
        "bin/run.sh": Entry(EXECUTABLE, script),
        "pkg/alias.py": Entry(SYMLINK, blob(project, b"mod.py")),
        "sub": Entry(GITLINK, "f" * 40),  # submodules are left out (and never read)
    }
    dest = tmp_path / "dest"
    dest.mkdir()
    assert write_tree(str(project.path), str(dest), entries) == 3
    assert sorted(os.listdir(dest)) == ["bin", "pkg"]
    assert (dest / "pkg/mod.py").read_bytes() == b"x = 1\n"
    assert stat.S_IMODE(os.lstat(dest / "pkg/mod.py").st_mode) & 0o111 == 0
    assert (dest / "bin/run.sh").read_bytes() == b"#!/bin/sh\n"
    assert os.lstat(dest / "bin/run.sh").st_mode & stat.S_IXUSR
    assert os.readlink(dest / "pkg/alias.py") == "mod.py"


@pytest.mark.parametrize(
    "path",
    ["../escape", "/abs/file", "a/../../escape", "a//b", "./a", "a/.", ".git/hooks/pre-commit", "sub/.git/config"],
)
def test_write_tree_refuses_paths_leaving_dest(project, tmp_path, path):
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(GateError) as info:
        write_tree(str(project.path), str(dest), {path: Entry(REGULAR, blob(project, b"x"))})
    assert str(info.value) == f"refusing to write {path!r} into the pristine tree"
    assert os.listdir(dest) == [] and not (tmp_path / "escape").exists()


def test_write_tree_never_writes_an_existing_file(project, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "f").write_bytes(b"old")
    with pytest.raises(FileExistsError):
        write_tree(str(project.path), str(dest), {"f": Entry(REGULAR, blob(project, b"new"))})
    assert (dest / "f").read_bytes() == b"old"


def test_write_tree_never_writes_through_a_symlink_entry(project, tmp_path):
    outside, dest = tmp_path / "outside", tmp_path / "dest"
    outside.mkdir()
    dest.mkdir()
    entries = {
        "link": Entry(SYMLINK, blob(project, os.fsencode(outside))),
        "link/x": Entry(REGULAR, blob(project, b"x")),
    }
    with pytest.raises(GateError) as err:
        write_tree(str(project.path), str(dest), entries)
    assert (
        str(err.value)
        == "refusing to write 'link/x' into the pristine tree: 'link' is an entry of its own, not a directory"
    )
    assert os.listdir(outside) == [] and os.listdir(dest) == []


def test_pristine_tree_never_writes_through_a_committed_symlink(project, tmp_path):
    outside, dest = tmp_path / "outside", tmp_path / "dest"
    outside.mkdir()
    dest.mkdir()

    def mktree(text: str) -> str:
        return (
            subprocess.run(
                ["git", "-C", str(project.path), "mktree"], input=text.encode(), check=True, stdout=subprocess.PIPE
            )
            .stdout.decode()
            .strip()
        )

    inner = mktree(f"100644 blob {blob(project, b'x')}\tx\n")
    tree = mktree(f"120000 blob {blob(project, os.fsencode(outside))}\tlink\n040000 tree {inner}\tlink\n")
    commit = project.git("commit-tree", "-m", "crafted", tree).strip()
    with pytest.raises(GateError, match="'link' is an entry of its own, not a directory"):
        pristine_tree(str(project.path), commit, commit, str(dest))
    assert os.listdir(outside) == []


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".env", True),
        ("shop/.env", True),
        (".env.local", True),
        ("a/b/.env.production", True),
        ("shop/not.env", False),
        (".envrc", False),
        ("env", False),
        (".env/x", False),
        ("x.env.local", False),
    ],
)
def test_is_dotenv(path, expected):
    assert is_dotenv(path) is expected


def listing(dest) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(dest):
        for name in files:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, dest)] = (
                os.readlink(full).encode() if os.path.islink(full) else Path(full).read_bytes()
            )
    return out


def test_pristine_tree_is_heads_code_with_the_oracles_of_another_commit(project, tmp_path):
    base = project.git("rev-parse", "main").strip()
    base_oracles = {
        p: project.git("show", f"{base}:{p}").encode() for p in GitTree(str(project.path), base).files("oracles")
    }
    project.write("shop/calc.py", "def add(a, b):\n    return 0\n")
    project.write("oracles/blobs/extra.json", "[]\n")
    project.write("oracles/policy.toml", POLICY.replace("oracle-change", "other"))
    project.write(".env", "TOKEN=1\n")
    project.write("shop/.env.test", "X=1\n")
    os.symlink("calc.py", project.path / "shop/alias.py")
    head = project.commit("change")
    project.write("shop/calc.py", "# uncommitted\n")
    project.write("untracked.py", "x\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    assert pristine_tree(str(project.path), head, base, str(dest)) == 11
    assert listing(dest) == {
        **base_oracles,
        "shop/__init__.py": b"",
        "shop/calc.py": b"def add(a, b):\n    return 0\n",
        "shop/alias.py": b"calc.py",
        "harness/test_shop.py": b"# harness\n",
        "tools/gate.py": b"# the gate\n",
    }
    assert len(base_oracles) == 6 and os.path.islink(dest / "shop/alias.py")


def test_pristine_tree_with_heads_oracles_and_a_non_empty_dest(project, tmp_path):
    project.write("oracles/blobs/extra.json", "[]\n")
    head = project.commit("labelled")
    dest = tmp_path / "dest"
    dest.mkdir()
    assert pristine_tree(str(project.path), head, head, str(dest)) == 11
    assert (dest / "oracles/blobs/extra.json").read_bytes() == b"[]\n"
    with pytest.raises(GateError, match=f"^{dest} is not empty$"):
        pristine_tree(str(project.path), head, head, str(dest))


def _tree_of(folder) -> dict[str, object]:
    """path -> ("link", target) | ("file", executable, bytes) | "dir" | "other", of everything in `folder`."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", bool(st.st_mode & stat.S_IXUSR), Path(path).read_bytes())
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            else:
                out[rel] = "other"
    return out


def test_sync_tree_leaves_files_alike_in_place_and_makes_the_rest_exact(project, tmp_path):
    # A kept Bazel server keeps its analysis only when the files it loaded keep their inode and times.
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    same, script = blob(project, b"x = 1\n"), blob(project, b"#!/bin/sh\n")
    first = {
        "pkg/mod.py": Entry(REGULAR, same),
        "pkg/gone.py": Entry(REGULAR, blob(project, b"old\n")),
        "bin/run.sh": Entry(EXECUTABLE, script),
        "alias": Entry(SYMLINK, blob(project, b"pkg/mod.py")),
    }
    assert sync_tree(str(project.path), str(dest), first, {"oracles/a.toml": b"a"}) == 5
    inode = os.lstat(dest / "pkg/mod.py").st_ino
    # What an earlier session could leave behind besides: a planted file, a fifo, a link out of the
    # tree where a folder goes, a file edited in place, a mode flipped.
    (dest / "pkg/planted.py").write_bytes(b"planted")
    os.mkfifo(dest / "pipe")
    (dest / "lib").symlink_to(outside)
    (dest / "bin/run.sh").chmod(0o644)
    (dest / "oracles/a.toml").write_bytes(b"b")
    second = {
        "pkg/mod.py": Entry(REGULAR, same),
        "bin/run.sh": Entry(EXECUTABLE, script),
        "alias": Entry(REGULAR, blob(project, b"now a file")),
        "lib/x.py": Entry(REGULAR, blob(project, b"y\n")),
    }
    written = sync_tree(str(project.path), str(dest), second, {"oracles/a.toml": b"a"})
    assert written == 4  # bin/run.sh (mode), alias (kind), lib/x.py, oracles/a.toml (bytes)
    assert os.lstat(dest / "pkg/mod.py").st_ino == inode
    assert _tree_of(dest) == {
        "pkg": "dir",
        "bin": "dir",
        "lib": "dir",
        "oracles": "dir",
        "pkg/mod.py": ("file", False, b"x = 1\n"),
        "bin/run.sh": ("file", True, b"#!/bin/sh\n"),
        "alias": ("file", False, b"now a file"),
        "lib/x.py": ("file", False, b"y\n"),
        "oracles/a.toml": ("file", False, b"a"),
    }
    assert os.listdir(outside) == []


def test_sync_tree_refuses_what_write_tree_refuses_and_a_path_given_twice(project, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    x = blob(project, b"x")
    with pytest.raises(GateError, match="^refusing to write '../escape' into the pristine tree$"):
        sync_tree(str(project.path), str(dest), {}, {"../escape": b"x"})
    with pytest.raises(GateError, match="'link' is an entry of its own, not a directory$"):
        sync_tree(str(project.path), str(dest), {"link": Entry(SYMLINK, blob(project, b"/"))}, {"link/x": b"x"})
    with pytest.raises(GateError, match="^refusing to write 'a' into the pristine tree twice$"):
        sync_tree(str(project.path), str(dest), {"a": Entry(REGULAR, x)}, {"a": b"x"})
    assert os.listdir(dest) == []


def test_a_path_too_deep_is_refused_in_one_line(project, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    deep = "/".join(["d"] * 201) + "/f.py"
    with pytest.raises(GateError, match=r"folders deep, more than 200$"):
        sync_tree(str(project.path), str(dest), {}, {deep: b"x"})
    assert os.listdir(dest) == []


def test_sync_tree_removes_a_folder_deeper_than_python_recurses(project, tmp_path):
    # Not the gate's own writing (it refuses such paths): a Bazel server's repository rule can
    # leave one in a kept checkout, and every later check must still make the tree exact.
    dest = tmp_path / "dest"
    dest.mkdir()
    fd = os.open(dest, os.O_RDONLY)
    try:
        for _ in range(1200):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    assert sync_tree(str(project.path), str(dest), {}, {"f.py": b"x"}) == 1
    assert os.listdir(dest) == ["f.py"]
