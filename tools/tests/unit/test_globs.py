"""Unit tests of globs.py: protected-path globs (`**` spans folders, `*` and `?` do not)."""

from __future__ import annotations

import pytest

from tools.oracle_gate.approval.globs import matches


@pytest.mark.parametrize(("path", "pattern", "hit"), [
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
])
def test_globs(path, pattern, hit):
    assert (matches(path, (pattern,)) is not None) == hit
