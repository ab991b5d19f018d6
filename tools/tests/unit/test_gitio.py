"""Unit tests of gitio.py: NUL-separated `git diff --name-status` parsing, failing closed."""

from __future__ import annotations

import pytest

from tools.oracle_gate.errors import GitError
from tools.oracle_gate.gitio import parse_name_status


def test_name_status_with_renames_and_odd_names():
    raw = b"M\0a b.txt\0R100\0oracles/old.toml\0harness/new.toml\0A\0oracles/bl\xc3\xb6b.toml\0D\0x\ny\0"
    parsed = [(c.status, c.path) for c in parse_name_status(raw)]
    assert parsed == [("M", "a b.txt"), ("R", "oracles/old.toml"), ("R", "harness/new.toml"),
                      ("A", "oracles/blöb.toml"), ("D", "x\ny")]


@pytest.mark.parametrize("raw", [b"M\0", b"Q\0path\0", b"\0path\0", b"R100\0only-one\0"])
def test_unparseable_name_status_fails_closed(raw):
    with pytest.raises(GitError):
        parse_name_status(raw)
