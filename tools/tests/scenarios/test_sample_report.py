"""The per-sample spec-change report (docs/oracles.md, "Reviewing an oracle change"): a labelled
change that rewrites expected answers shows each one, old and new, and needs a changelog line."""

from __future__ import annotations

import json

from tools.testing.gitrepo import blob_bytes, default_rows, junit, oracle_toml, sha256

THREE = [{"args": [1, 2], "expected": 3}, {"args": [2, 2], "expected": 4}, {"args": [5, 5], "expected": 10}]


def check(gate, repo, results, *extra):
    return gate("--repo", str(repo.path), "check", "--base", "main", "--results", results, *extra)


def set_table(project, samples, message):
    rows = default_rows()
    rows[2]["blob_sha256"] = sha256(blob_bytes(samples))
    project.write("oracles/blobs/table.json", blob_bytes(samples))
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit(message)


def test_two_rewritten_expected_answers_are_listed_and_need_a_changelog_line(gate, project, tmp_path, all_passed):
    set_table(project, THREE, "three samples")
    project.git("branch", "-f", "main", "HEAD")
    bent = [
        {"args": [1, 2], "expected": 4},
        {"args": [2, 2], "expected": 4},
        {"args": [5, 5], "expected": 11},
        {"args": [0, 0], "expected": 0},
    ]
    set_table(project, bent, "fix the answers to match the bug")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert "  ~ add_table (exact_table) in oracles/shop.toml  [blob content changed, expected value changed]" in out
    lines = out.splitlines()
    start = lines.index("      samples: 1 added, 0 removed, 2 with a changed expected value (3 at the base, 4 at HEAD)")
    assert lines[start + 1 : start + 4] == [
        '        changed {"args":[1,2]}: expected 3 -> 4',
        '        changed {"args":[5,5]}: expected 10 -> 11',
        '        added {"args":[0,0]}: expected 0',
    ]
    assert "[5] oracles/CHANGELOG.md add_table: expected value changed (oracles/shop.toml) needs a line" in out
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change", "--format", "json")
    change = {c["id"]: c for c in json.loads(out)["spec_changes"]}["add_table"]
    assert change["samples"]["changed"] == 2 and change["samples"]["shown"]["changed"][0] == {
        "inputs": '{"args":[1,2]}',
        "old": "3",
        "new": "4",
    }
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change", "--format", "markdown")
    assert '        changed {"args":[1,2]}: expected 3 -> 4' in out
    project.write("oracles/CHANGELOG.md", "- add_table: 1+2 is 4 now, on purpose\n")
    project.write_manifest()
    project.commit("changelog")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 0, out
    assert '        changed {"args":[5,5]}: expected 10 -> 11' in out


def test_added_samples_alone_weaken_nothing(gate, project, tmp_path, all_passed):
    set_table(project, THREE, "more samples")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 0, out
    assert "      samples: 2 added, 0 removed, 0 with a changed expected value (1 at the base, 3 at HEAD)" in out
    assert "oracle changelog" not in out


def test_removed_samples_and_retyped_inputs_need_a_changelog_line(gate, project, tmp_path, all_passed):
    set_table(project, THREE, "three samples")
    project.git("branch", "-f", "main", "HEAD")
    set_table(project, [{"args": [1.0, 2], "expected": 4}, {"args": [2, 2], "expected": 4}], "retyped, one gone")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert "[blob content changed, stored samples removed]" in out
    assert '        removed {"args":[1,2]}: expected 3' in out and '        added {"args":[1.0,2]}: expected 4' in out


def test_an_edited_reference_needs_a_changelog_line_for_each_row_it_answers(gate, project, tmp_path, all_passed):
    project.write("oracles/reference/__init__.py", "")
    project.write("oracles/reference/ref.py", "def add(a, b):\n    return a + b\n")
    rows = default_rows()
    rows[2].update(
        {
            "reference": "oracles.reference.ref:add",
            "args_names": ["a", "b"],
            "generate": {"count": 5, "a": {"int": [0, 3]}, "b": {"int": [0, 3]}},
        }
    )
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit("a reference")
    project.git("branch", "-f", "main", "HEAD")
    project.write("oracles/reference/ref.py", "def add(a, b):\n    return a + b + (a == 1)\n")
    project.write_manifest()
    project.commit("the reference agrees with the bug now")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert "  ~ add_table (exact_table) in oracles/shop.toml  [reference code changed]" in out
    assert "      reference code: - -> oracles/reference/ref.py" in out
    assert "[5] oracles/CHANGELOG.md add_table: reference code changed (oracles/shop.toml) needs a line" in out
