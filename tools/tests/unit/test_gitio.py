"""Unit tests of gitio.py: NUL-separated `git diff --name-status` parsing, failing closed."""

from __future__ import annotations

import pytest

from tools.oracle_gate.errors import GitError
from tools.oracle_gate.git.gitio import parse_name_status


def test_name_status_with_renames_and_odd_names():
    raw = b"M\0a b.txt\0R100\0oracles/old.toml\0harness/new.toml\0A\0oracles/bl\xc3\xb6b.toml\0D\0x\ny\0"
    parsed = [(c.status, c.path) for c in parse_name_status(raw)]
    assert parsed == [
        ("M", "a b.txt"),
        ("R", "oracles/old.toml"),
        ("R", "harness/new.toml"),
        ("A", "oracles/blöb.toml"),
        ("D", "x\ny"),
    ]


@pytest.mark.parametrize("raw", [b"M\0", b"Q\0path\0", b"\0path\0", b"R100\0only-one\0"])
def test_unparseable_name_status_fails_closed(raw):
    with pytest.raises(GitError):
        parse_name_status(raw)


def test_merge_commit_merges_in_memory_the_same_way_every_time(project):
    import pytest

    from tools.oracle_gate.git.gitio import MergeConflict, merge_commit

    project.write("shop/extra.py", "X = 1\n")
    head = project.commit("change")
    project.git("checkout", "-q", "main")
    project.write("harness/more.py", "Y = 2\n")
    tip = project.commit("main moves")
    project.git("checkout", "-q", "change")
    refs = project.git("for-each-ref")
    merged = merge_commit(str(project.path), tip, head)
    assert merge_commit(str(project.path), tip, head) == merged
    assert project.git("rev-parse", f"{merged}^1", f"{merged}^2").split() == [tip, head]
    assert set(project.git("ls-tree", "-r", "--name-only", merged).split()) >= {"shop/extra.py", "harness/more.py"}
    assert project.git("for-each-ref") == refs and project.git("status", "--porcelain") == ""
    project.write("shop/extra.py", "X = 3\n")
    ours = project.commit("change again")
    project.git("checkout", "-q", "main")
    project.write("shop/extra.py", "X = 4\n")
    theirs = project.commit("main too")
    with pytest.raises(MergeConflict, match=r"does not merge cleanly into the base tip .*: conflict in shop/extra.py"):
        merge_commit(str(project.path), theirs, ours)
