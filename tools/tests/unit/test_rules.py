"""guard/rules.py: the protected globs in force, read from the base tip's and the work tree's policy."""

from __future__ import annotations

import os

import pytest

from tools.oracle_gate.approval.policy import DEFAULT_PROTECTED
from tools.oracle_gate.guard.rules import PolicyUnreadable, load_protection


def test_the_base_tips_policy_and_what_the_work_tree_adds(project):
    rules = load_protection(str(project.path))
    assert rules.source == "oracles/policy.toml at refs/heads/main"
    assert rules.protecting("oracles/shop.toml") == "oracles/**"
    assert rules.protecting("shop/calc.py") is None
    assert rules.protecting(".claude/settings.json") == ".claude/**"
    assert rules.protecting(".git/hooks/pre-push") == ".git/hooks/**"
    policy = project.read("oracles/policy.toml").decode().replace('"oracles/**"', '"oracles/**", "shop/calc.py"')
    project.write("oracles/policy.toml", policy)
    assert load_protection(str(project.path)).protecting("shop/calc.py") == "shop/calc.py"


def test_a_work_tree_policy_cannot_drop_a_glob_of_the_base_tip(project):
    project.write("oracles/policy.toml", 'schema = 1\nprotected = ["x"]\nproduction_packages = ["shop"]\n')
    assert load_protection(str(project.path)).protecting("tools/gate.py") == "tools/**"


def test_folders_wildcards_and_the_root_are_protected_when_they_hold_protected_files(project):
    rules = load_protection(str(project.path))
    assert rules.protecting("oracles") == "oracles/**"
    assert rules.protecting("oracles/*.toml") == "oracles/**"
    assert rules.protecting("*") is not None
    assert rules.protecting(".") is not None
    assert rules.protecting("shop") is None


def test_an_invalid_policy_cannot_be_read(project):
    project.write("oracles/policy.toml", "schema = 2\n")
    with pytest.raises(PolicyUnreadable, match="schema"):
        load_protection(str(project.path))


def test_no_policy_anywhere_is_the_default_policy(tmp_path):
    os.system(f"git init -q {tmp_path}")
    rules = load_protection(str(tmp_path))
    assert set(DEFAULT_PROTECTED) <= set(rules.globs) and "default policy" in rules.source
