"""Unit tests of globs.py: protected-path globs (`**` spans folders, `*` and `?` do not)."""

from __future__ import annotations

import pytest

from tools.oracle_gate.approval.globs import matches


@pytest.mark.parametrize(
    ("path", "pattern", "hit"),
    [
        ("oracles/a.toml", "oracles/**", True),
        ("oracles/blobs/x/y.json", "oracles/**", True),
        ("oracles", "oracles/**", False),
        ("oraclesX/a", "oracles/**", False),
        ("tools/x/BUILD.bazel", "tools/**/BUILD.bazel", True),
        ("tools/BUILD.bazel", "tools/**/BUILD.bazel", True),
        (".bazelrc", ".bazelrc", True),
        ("sub/.bazelrc", ".bazelrc", False),
        ("a/b.py", "a/*.py", True),
        ("a/c/b.py", "a/*.py", False),
        ("WORKSPACE", "WORKSPAC?", True),
        ("a.b", "a?b", True),
        ("a[x]", "a[x]", True),
        # `**/` spans zero folders too: the root's attributes file and every nested one.
        (".gitattributes", "**/.gitattributes", True),
        ("billing/.gitattributes", "**/.gitattributes", True),
        ("a/b/c/.gitattributes", "**/.gitattributes", True),
        ("billing/.gitattributes.bak", "**/.gitattributes", False),
        ("billing/x.gitattributes", "**/.gitattributes", False),
        ("billing/.gitattributes/x", "**/.gitattributes", False),
    ],
)
def test_globs(path, pattern, hit):
    assert (matches(path, (pattern,)) is not None) == hit
