"""The lock check fails on every kind of drift between requirements.in and the lock."""

from __future__ import annotations

from tools.lock.lock_check import problems

LOCK = """\
pytest==9.2.0 \\
    --hash=sha256:aaaa
    # via -r requirements.in
pluggy==1.7.0 \\
    --hash=sha256:bbbb
    # via pytest
"""


def test_consistent():
    assert problems("pytest\n", LOCK) == []


def test_requirement_missing_from_lock():
    assert problems("pytest\nhypothesis\n", LOCK) == [
        "requirements.in asks for `hypothesis` but the lock has no pin for hypothesis"
    ]


def test_requirement_removed_from_in():
    assert problems("# nothing\n", LOCK) == [
        "the lock keeps pytest as a direct requirement that requirements.in no longer lists"
    ]


def test_pin_mismatch():
    assert problems("pytest==9.0.0\n", LOCK) == ["requirements.in pins `pytest==9.0.0` but the lock has pytest==9.2.0"]


def test_missing_hash_and_host_path():
    lock = LOCK.replace("    --hash=sha256:bbbb\n", "") + "--find-links /opt/wheels\n"
    found = problems("pytest\n", lock)
    assert "pluggy==1.7.0 has no --hash line; --require-hashes would refuse the lock" in found
    assert any("names an index or a host path" in p for p in found)
