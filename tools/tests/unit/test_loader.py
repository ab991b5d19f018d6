"""Blob pins, blob contents and policy, read from real git commits."""

from __future__ import annotations

import os

from tools.oracle_gate.git.tree import GitTree
from tools.oracle_gate.suite.loader import load_oracles
from tools.testing.gitrepo import blob_bytes, default_rows, oracle_toml, sha256


def repin_table(repo, data: bytes) -> None:
    """Writes new bytes for the exact_table blob and a pin that matches them."""
    repo.write("oracles/blobs/table.json", data)
    rows = default_rows()
    rows[2]["blob_sha256"] = sha256(data)
    repo.write("oracles/shop.toml", oracle_toml(rows))


def head_problems(repo) -> list[str]:
    tree = GitTree(str(repo.path), repo.git("rev-parse", "HEAD").strip())
    return [str(p) for p in load_oracles(tree).problems]


def test_the_fixture_project_is_valid(project):
    assert head_problems(project) == []


def test_missing_blob(project):
    os.remove(project.path / "oracles/blobs/table.json")
    project.commit("drop blob")
    assert head_problems(project) == [
        "oracles/shop.toml: row add_table: field blob: oracles/blobs/table.json does not exist"
    ]


def test_hash_mismatch_names_blob_and_expected_hash(project):
    project.write("oracles/blobs/table.json", blob_bytes([{"args": [1, 2], "expected": 4}]))
    project.commit("edit")
    [problem] = head_problems(project)
    assert problem.startswith(
        "oracles/shop.toml: row add_table: field blob_sha256: "
        "oracles/blobs/table.json does not match its pin: expected sha256 "
    )
    assert problem.endswith(
        "; if you changed the blob on purpose, update blob_sha256 (`pin --write`) in a change labelled oracle-change; "
        "if you did not and HEAD has the file, `git cat-file blob HEAD:oracles/blobs/table.json > "
        "oracles/blobs/table.json` restores the committed bytes"
    )


def test_symlinked_blob_is_refused(project):
    data = project.read("oracles/blobs/table.json")
    project.write("harness/table.json", data)
    os.remove(project.path / "oracles/blobs/table.json")
    os.symlink("../../harness/table.json", project.path / "oracles/blobs/table.json")
    project.commit("symlink")
    assert head_problems(project) == [
        "oracles/shop.toml: row add_table: field blob: oracles/blobs/table.json "
        "is a symlink; blobs must be regular files under oracles/blobs/"
    ]


def test_blob_that_is_not_json(project):
    repin_table(project, b"[1, 2")
    project.commit("bad json")
    found = head_problems(project)
    assert any("field blob: oracles/blobs/table.json is not valid JSON: Expecting" in p for p in found), found


def test_blob_with_nan(project):
    repin_table(project, b'[{"args": [NaN], "expected": 1}]')
    project.commit("nan")
    assert any("NaN is not valid JSON" in p for p in head_problems(project))


def test_blob_of_the_wrong_shape(project):
    repin_table(project, b'[{"args": [1], "expected": 1, "extra": 0}]')
    project.commit("shape")
    assert any("sample 0 must have exactly the keys args and expected" in p for p in head_problems(project))


def test_missing_policy(project):
    os.remove(project.path / "oracles/policy.toml")
    project.commit("no policy")
    assert "oracles/policy.toml: is missing; the gate needs it to know what is protected" in head_problems(project)


def test_invalid_policy(project):
    project.write("oracles/policy.toml", 'schema = 1\nprotected = []\nproduction_packages = ["shop"]\n')
    project.commit("bad policy")
    assert "oracles/policy.toml: field protected: must be a non-empty array of non-empty strings" in head_problems(
        project
    )


def test_oracle_file_that_is_a_symlink(project):
    os.symlink("shop.toml", project.path / "oracles/alias.toml")
    project.commit("alias")
    assert "oracles/alias.toml: must be a regular file, not a symlink or submodule" in head_problems(project)


def test_blob_with_an_integer_beyond_the_conversion_limit(project):
    repin_table(project, b"[" + b"9" * 5000 + b"]")
    project.commit("huge int")
    assert any("is not usable JSON: Exceeds the limit" in p for p in head_problems(project))


def test_blob_nested_too_deeply(project):
    repin_table(project, b"[" * 100000)
    project.commit("deep")
    assert any("nests too deeply" in p for p in head_problems(project))


def test_blob_number_that_overflows_to_infinity(project):
    repin_table(project, b'[{"args": [1e400], "expected": 1}]')
    project.commit("inf")
    assert any("1e400 overflows to infinity" in p for p in head_problems(project))


def test_a_bad_raises_is_one_line_naming_file_row_sample_and_field(project):
    repin_table(project, b'[{"args": [1, 2], "expected": 3, "raises": "ValueError"}]')
    project.commit("raises beside expected")
    found = [p for p in head_problems(project) if "raises" in p]
    assert found == [
        "oracles/shop.toml: row add_table: field blob: oracles/blobs/table.json sample 0: raises: a sample gives "
        "either expected or raises, not both"
    ], found
