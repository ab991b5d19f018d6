"""Unit tests of policy.py: parse_policy's result and errors, label_name and has_label."""

from __future__ import annotations

import pytest

from tools.oracle_gate.approval.globs import matches
from tools.oracle_gate.approval.policy import (
    ALWAYS_PROTECTED,
    ATTRIBUTES_GLOB,
    DEFAULT_LABEL,
    DEFAULT_PROTECTED,
    POLICY_PATH,
    Policy,
    has_label,
    label_name,
    parse_policy,
)
from tools.oracle_gate.errors import INVALID_ORACLE, OracleError

LISTS = 'protected = ["tools/**"]\nproduction_packages = ["shop"]\n'


def policy_bytes(*lines: str, lists: str = LISTS) -> bytes:
    return ("\n".join(lines) + "\n" + lists).encode()


def test_a_valid_policy():
    data = (
        b'schema = 1\nlabel = "oracle-change"\nprotected = ["tools/**", "WORKSPACE", "oracles/**"]\n'
        b'production_packages = ["shop", "billing"]\n'
    )
    assert parse_policy(data) == Policy(
        label="oracle-change",
        protected=ALWAYS_PROTECTED + ("tools/**",),
        production_packages=("shop", "billing"),
    )


def test_defaults_and_normalization():
    assert POLICY_PATH == "oracles/policy.toml" and DEFAULT_LABEL == "oracle-change"
    # The oracles, git's checkout controls, and everything Bazel or its launcher reads before any
    # sandbox exists.
    assert set(ALWAYS_PROTECTED) == {
        "oracles/**",
        "**/.gitattributes",
        ".gitmodules",
        "tools/bazel",
        "tools/bazel/**",
        ".bazelversion",
        ".bazeliskrc",
        ".bazelrc",
        "user.bazelrc",
        "WORKSPACE",
        "WORKSPACE.bazel",
        "WORKSPACE.bzlmod",
        "MODULE.bazel",
        "MODULE.bazel.lock",
        "REPO.bazel",
        ".bazelignore",
    }
    policy = parse_policy(policy_bytes("schema = 1"))
    assert policy == Policy("oracle-change", ALWAYS_PROTECTED + ("tools/**",), ("shop",))
    assert parse_policy(policy_bytes("schema = 1", 'label = "  approved  "')).label == "approved"
    duplicated = parse_policy(
        policy_bytes("schema = 1", lists='protected = [".gitmodules", "a", "a"]\nproduction_packages = ["shop"]\n')
    )
    assert duplicated.protected == ALWAYS_PROTECTED + ("a",)


@pytest.mark.parametrize("path", [".gitattributes", "billing/.gitattributes", "billing/deep/.gitattributes"])
def test_every_gitattributes_is_protected_though_the_policy_does_not_list_it(path):
    policy = parse_policy(policy_bytes("schema = 1"))
    assert "**/.gitattributes" not in LISTS and ".gitattributes" not in LISTS
    assert matches(path, policy.protected) == ATTRIBUTES_GLOB == "**/.gitattributes"
    assert matches(path, DEFAULT_PROTECTED) == ATTRIBUTES_GLOB


def error(data: bytes, path: str = "p.toml") -> OracleError:
    with pytest.raises(OracleError) as info:
        parse_policy(data, path)
    return info.value


INTEGER = "must be the integer 1"
LABEL = "must be a non-empty string without commas"
LIST = "must be a non-empty array of non-empty strings"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (policy_bytes("schema = 2"), "schema", INTEGER),
        (policy_bytes("schema = true"), "schema", INTEGER),
        (policy_bytes("schema = 1.0"), "schema", INTEGER),
        (policy_bytes('schema = "1"'), "schema", INTEGER),
        (policy_bytes(""), "schema", INTEGER),
        (policy_bytes("schema = 1", 'label = ""'), "label", LABEL),
        (policy_bytes("schema = 1", 'label = "   "'), "label", LABEL),
        (policy_bytes("schema = 1", 'label = "a,b"'), "label", LABEL),
        (policy_bytes("schema = 1", "label = 3"), "label", LABEL),
        (policy_bytes("schema = 1", lists='protected = []\nproduction_packages = ["shop"]\n'), "protected", LIST),
        (policy_bytes("schema = 1", lists='protected = "a"\nproduction_packages = ["shop"]\n'), "protected", LIST),
        (policy_bytes("schema = 1", lists='protected = [""]\nproduction_packages = ["shop"]\n'), "protected", LIST),
        (policy_bytes("schema = 1", lists='protected = ["a", 1]\nproduction_packages = ["shop"]\n'), "protected", LIST),
        (policy_bytes("schema = 1", lists='protected = ["a"]\n'), "production_packages", LIST),
        (
            policy_bytes("schema = 1", lists='protected = ["a"]\nproduction_packages = []\n'),
            "production_packages",
            LIST,
        ),
        (
            policy_bytes("schema = 1", lists='protected = ["/abs/**"]\nproduction_packages = ["shop"]\n'),
            "protected",
            "'/abs/**' must be a repository-relative glob",
        ),
        (
            policy_bytes("schema = 1", lists='protected = ["a\\\\b"]\nproduction_packages = ["shop"]\n'),
            "protected",
            "'a\\\\b' must be a repository-relative glob",
        ),
        (
            policy_bytes("schema = 1", lists='protected = ["a"]\nproduction_packages = ["shop.calc"]\n'),
            "production_packages",
            "'shop.calc' is not a top-level Python package name",
        ),
        (
            policy_bytes("schema = 1", lists='protected = ["a"]\nproduction_packages = ["1shop"]\n'),
            "production_packages",
            "'1shop' is not a top-level Python package name",
        ),
        (
            policy_bytes("schema = 1", lists='protected = ["a"]\nproduction_packages = ["os"]\n'),
            "production_packages",
            "'os' is the standard library or the gate itself, not production code",
        ),
        (
            policy_bytes("schema = 1", lists='protected = ["a"]\nproduction_packages = ["shop", "tools"]\n'),
            "production_packages",
            "'tools' is the standard library or the gate itself, not production code",
        ),
        (
            policy_bytes("schema = 1", lists='protected = ["a"]\nproduction_packages = ["pytest"]\n'),
            "production_packages",
            "'pytest' is the standard library or the gate itself, not production code",
        ),
        (
            policy_bytes("schema = 1", 'uncovered_changes = "Fail"'),
            "uncovered_changes",
            'must be "note" or "fail", not \'Fail\'',
        ),
        (
            policy_bytes("schema = 1", 'uncovered_changes = "warn"'),
            "uncovered_changes",
            'must be "note" or "fail", not \'warn\'',
        ),
        (
            policy_bytes("schema = 1", 'uncovered_changes = ""'),
            "uncovered_changes",
            'must be "note" or "fail", not \'\'',
        ),
        (
            policy_bytes("schema = 1", "uncovered_changes = true"),
            "uncovered_changes",
            'must be "note" or "fail", not a boolean',
        ),
        (
            policy_bytes("schema = 1", "uncovered_changes = 1"),
            "uncovered_changes",
            'must be "note" or "fail", not an integer',
        ),
        (
            policy_bytes("schema = 1", 'uncovered_changes = ["fail"]'),
            "uncovered_changes",
            'must be "note" or "fail", not an array',
        ),
    ],
)
def test_each_invalid_field_names_path_and_field(data, field, message):
    exc = error(data)
    assert (exc.code, exc.path, exc.field, exc.message) == (INVALID_ORACLE, "p.toml", field, message)
    assert str(exc) == f"p.toml: field {field}: {message}"


def test_unknown_keys_are_refused_first_in_sorted_order():
    exc = error(policy_bytes("schema = 3", "zeta = 1", "alpha = 2"))
    assert (exc.code, exc.field) == (5, "alpha")
    assert str(exc) == (
        "p.toml: field alpha: unknown key 'alpha'; allowed: behaviour_changes, hidden, label, "
        "production_packages, protected, schema, uncovered_changes"
    )
    assert error(policy_bytes("schema = 1", "[extra]")).field == "extra"


def test_the_default_path_is_named():
    exc = error(b"schema = 2\n" + LISTS.encode(), POLICY_PATH)
    assert str(exc) == "oracles/policy.toml: field schema: must be the integer 1"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'schema = 1\nprotected = ["a"\n', "is not valid TOML: Unclosed array (at end of document)"),
        (
            b"\xef\xbb\xbfschema = 1\n",
            "starts with a UTF-8 byte order mark (EF BB BF); save the file as UTF-8 without BOM",
        ),
        (
            b'schema = 1\nlabel = "caf\xe9"\n',
            "is not UTF-8: byte 0xE9 at line 2, column 13 (byte offset 23) is 'é' in Latin-1/Windows-1252, so the "
            "file was probably saved in that encoding; save it as UTF-8",
        ),
        (
            b"schema = 1\n\xc2\xa0x = 1\n",
            "is not valid TOML: Invalid statement (at line 2, column 1); line 2, "
            "column 1 holds U+00A0 (no-break space), "
            "which looks like a space or nothing but is not whitespace to TOML; retype it",
        ),
    ],
)
def test_unreadable_bytes_are_named_without_a_field(data, message):
    exc = error(data)
    assert (exc.code, exc.path, exc.field, exc.message) == (5, "p.toml", None, message)


A = Policy("base-label", ALWAYS_PROTECTED, ("shop",))
B = Policy("head-label", ALWAYS_PROTECTED, ("shop",))


@pytest.mark.parametrize(
    ("base", "head", "expected"),
    [
        (A, B, "base-label"),  # the change may not rename the label
        (A, None, "base-label"),
        (None, B, "head-label"),  # bootstrap: no base policy yet
        (None, None, "oracle-change"),
    ],
)
def test_label_name(base, head, expected):
    assert label_name(base, head) == expected


@pytest.mark.parametrize(
    ("label", "labels", "expected"),
    [
        ("oracle-change", {"oracle-change"}, True),
        ("oracle-change", {"bug", "Oracle-Change"}, True),
        ("ORACLE-CHANGE", {"oracle-change"}, True),
        ("Stra\u00dfe", {"STRASSE"}, True),  # casefold, not lower
        ("oracle-change", {"oracle-changes", "oracle change"}, False),
        ("oracle-change", set(), False),
    ],
)
def test_has_label(label, labels, expected):
    assert has_label(label, labels) is expected


def test_uncovered_changes_is_note_by_default_or_fail():
    from tools.oracle_gate.approval.policy import UNCOVERED_FAIL, UNCOVERED_NOTE

    assert parse_policy(policy_bytes("schema = 1")).uncovered_changes == UNCOVERED_NOTE == "note"
    assert parse_policy(policy_bytes("schema = 1", 'uncovered_changes = "note"')).uncovered_changes == "note"
    assert parse_policy(policy_bytes("schema = 1", 'uncovered_changes = "fail"')).uncovered_changes == UNCOVERED_FAIL
    # One line naming the file and the field, exit 5, as `check` prints it.
    exc = error(policy_bytes("schema = 1", 'uncovered_changes = "strict"'), POLICY_PATH)
    assert exc.code == INVALID_ORACLE and str(exc) == (
        'oracles/policy.toml: field uncovered_changes: must be "note" or "fail", not \'strict\''
    )


def test_behaviour_changes_is_note_by_default_or_fail():
    assert parse_policy(policy_bytes("schema = 1")).behaviour_changes == "note"
    assert parse_policy(policy_bytes("schema = 1", 'behaviour_changes = "fail"')).behaviour_changes == "fail"
    exc = error(policy_bytes("schema = 1", "behaviour_changes = true"), POLICY_PATH)
    assert (exc.code, exc.field) == (INVALID_ORACLE, "behaviour_changes")
    assert str(exc) == 'oracles/policy.toml: field behaviour_changes: must be "note" or "fail", not a boolean'
