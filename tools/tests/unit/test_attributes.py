"""Unit tests of attributes.py: which `.gitattributes` lines make a checkout write other bytes."""

from __future__ import annotations

import os

import pytest

from tools.oracle_gate.git.attributes import MAX_NOTES, Conversion, checkout_notes, conversions
from tools.oracle_gate.git.tree import GitTree
from tools.testing.gitrepo import GitRepo

NOTE_END = ": a checkout writes other bytes than the committed ones the gate judged"


def test_the_held_out_attack_is_named():
    (found,) = conversions({"billing/.gitattributes": b"tax.py ident\n"})
    assert found == Conversion("billing/.gitattributes", 1, "tax.py", "ident")
    assert (
        found.note()
        == "checkout conversion: billing/.gitattributes line 1 gives 'tax.py' ident ($Id$ expanded)" + NOTE_END
    )


@pytest.mark.parametrize(
    ("line", "attributes"),
    [
        ("*.py ident", ["ident"]),
        ("*.py filter=lfs diff=lfs merge=lfs -text", ["filter=lfs"]),
        ("*.py working-tree-encoding=UTF-16LE eol=crlf", ["working-tree-encoding=UTF-16LE", "eol=crlf"]),
        ("*.py text eol=lf", []),  # LF is what git commits: no conversion at checkout
        ("* text=auto", []),  # converts only where the checkout's core.eol or core.autocrlf asks for CRLF
        ("*.py working-tree-encoding=utf-8", []),  # git skips UTF-8, in any case
        ("/oracles/** -text -eol -ident -filter -working-tree-encoding", []),
        ("*.py !ident ident=x filter", []),  # unspecified, a value for a set-only attribute, a filter without a name
        ("*.png binary", []),  # the built-in macro only unsets
        ("!*.py ident", []),  # git ignores negative patterns
        ("# tax.py ident", []),
        ('"a b.py"\tident', ["ident"]),
        ('"open.py ident', []),  # a quoted pattern that is not closed
    ],
)
def test_which_attributes_convert(line, attributes):
    assert [c.attribute for c in conversions({"x/.gitattributes": line.encode() + b"\n"})] == attributes


def test_macros_come_from_the_top_level_file_only_and_expand_when_set():
    files = {
        ".gitattributes": b"[attr]stamp ident\n[attr]both stamp eol=crlf\n[attr]loop loop ident\n",
        "billing/.gitattributes": b"[attr]nested ident\ntax.py both\nrate.py -stamp nested\nx.py loop\n",
    }
    found = conversions(files)
    assert [(c.path, c.line, c.pattern, c.attribute, c.macro) for c in found] == [
        ("billing/.gitattributes", 2, "tax.py", "ident", "both"),
        ("billing/.gitattributes", 2, "tax.py", "eol=crlf", "both"),
        ("billing/.gitattributes", 4, "x.py", "ident", "loop"),
    ]
    assert found[0].note() == (
        "checkout conversion: billing/.gitattributes line 2 gives 'tax.py' ident ($Id$ "
        "expanded, through the macro 'both')" + NOTE_END
    )


def test_checkout_notes_read_the_committed_regular_files_and_are_bounded(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write(".gitattributes", "/oracles/** -ident\n")
    repo.write("billing/.gitattributes", "".join(f"f{i}.py ident\n" for i in range(MAX_NOTES + 2)))
    repo.write("harness/attributes", "*.py ident\n")
    os.symlink("../harness/attributes", repo.path / "harness/.gitattributes")
    commit = repo.commit("attributes")
    repo.write("billing/.gitattributes", "")  # the work tree is not read
    tree = GitTree(str(repo.path), commit)
    notes = checkout_notes(tree, tree.files(""))
    tree.close()
    assert len(notes) == MAX_NOTES + 1
    assert (
        notes[0] == "checkout conversion: billing/.gitattributes line 1 gives 'f0.py' ident ($Id$ expanded)" + NOTE_END
    )
    assert notes[-1] == "checkout conversion: 2 more line(s) of .gitattributes files ask for one"
    assert not any("harness" in note for note in notes)
