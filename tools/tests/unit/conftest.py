"""Fixtures shared by every test folder: defined once in tools/testing/fixtures.py."""

from tools.testing.fixtures import _no_ambient_git, all_passed, gate, gate_factory, project  # noqa: F401
