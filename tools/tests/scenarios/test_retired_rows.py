"""Retiring a row on purpose (docs/oracles.md, "Retiring a row"; docs/design.md section 7): a
`[[retired]]` entry makes a dropped id legal under the label with a changelog line, and the id
is never used again."""

from __future__ import annotations

import json

from tools.testing.gitrepo import IDS, default_rows, junit, oracle_toml

TOMBSTONE = (
    '\n[[retired]]\nid = "add_table"\nreason = "add is deprecated; totals use shop.calc:sum_all"\nsince = 2026-12-03\n'
)
KEPT = {i: "passed" for i in IDS[:2]}


def check(gate, repo, results, *extra):
    return gate("--repo", str(repo.path), "check", "--base", "main", "--results", results, *extra)


def retire(
    project,
    *,
    changelog: str | None = "- add_table: retired, add is deprecated\n",
    rows=None,
    tombstone: str = TOMBSTONE,
) -> None:
    project.write("oracles/shop.toml", oracle_toml(rows if rows is not None else default_rows()[:2]) + tombstone)
    if changelog is not None:
        project.write("oracles/CHANGELOG.md", changelog)
    project.write_manifest()
    project.commit("retire add_table")


def land(project) -> None:
    project.git("branch", "-f", "main", "HEAD")


def test_a_retired_row_with_the_label_and_a_changelog_line_passes_and_is_reported(gate, project, tmp_path):
    retire(project)
    code, out, err = check(gate, project, junit(tmp_path, KEPT), "--label", "oracle-change")
    assert code == 0, out + err
    assert "  - add_table (exact_table) from oracles/shop.toml  [row retired]" in out
    assert (
        "      retired: - -> since 2026-12-03 in oracles/shop.toml: add is deprecated; totals use shop.calc:sum_all"
    ) in out
    code, out, _ = check(gate, project, junit(tmp_path, KEPT), "--label", "oracle-change", "--format", "json")
    change = {c["id"]: c for c in json.loads(out)["spec_changes"]}["add_table"]
    assert change["status"] == "removed" and change["marks"] == ["row retired"]


def test_retiring_without_a_changelog_line_exits_5(gate, project, tmp_path):
    retire(project, changelog=None)
    code, out, _ = check(gate, project, junit(tmp_path, KEPT), "--label", "oracle-change")
    assert code == 5, out
    assert (
        "[5] oracles/CHANGELOG.md add_table: row retired (oracles/shop.toml) needs a line in oracles/CHANGELOG.md"
        in out
    )
    assert "[3]" not in out


def test_retiring_without_the_label_exits_2(gate, project, tmp_path):
    retire(project)
    code, out, _ = check(gate, project, junit(tmp_path, KEPT))
    assert code == 2, out
    assert "[2] oracles/shop.toml: protected by 'oracles/**'" in out
    assert "[3]" not in out


def test_a_drop_without_the_tombstone_stays_exit_3_and_says_how_to_retire(gate, project, tmp_path):
    retire(project, tombstone="")
    code, out, _ = check(gate, project, junit(tmp_path, KEPT), "--label", "oracle-change")
    assert code == 3, out
    assert (
        "[3] oracles/ add_table: present at the base, missing at HEAD; to retire a row on purpose, add a [[retired]]"
        in out
    )


def test_a_row_reusing_a_retired_id_exits_5(gate, project, tmp_path, all_passed):
    retire(project)
    land(project)
    rows = default_rows()  # add_table is back, under its retired id
    project.write("oracles/shop.toml", oracle_toml(rows) + TOMBSTONE)
    project.write_manifest()
    project.commit("reuse")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert (
        "[5] oracles/shop.toml add_table: field id: reuses the id 'add_table', retired in oracles/shop.toml since "
        "2026-12-03"
    ) in out


def test_dropping_a_tombstone_to_reuse_the_id_exits_3(gate, project, tmp_path, all_passed):
    retire(project)
    land(project)
    project.write("oracles/shop.toml", oracle_toml(default_rows()))
    project.write_manifest()
    project.commit("tombstone gone, row back")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 3, out
    assert "[3] oracles/shop.toml add_table: retired before this change, and its [[retired]] entry is gone" in out


def test_retiring_an_id_the_base_never_had_exits_5(gate, project, tmp_path, all_passed):
    tombstone = TOMBSTONE.replace('id = "add_table"', 'id = "never_there"')
    retire(project, rows=default_rows(), tombstone=tombstone, changelog="- never_there: retired\n")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert "[5] oracles/shop.toml never_there: retires an id the base never declared" in out


def test_a_landed_tombstone_is_quiet(gate, project, tmp_path):
    retire(project)
    land(project)
    project.write("shop/calc.py", project.read("shop/calc.py").decode() + "\n# later change\n")
    project.commit("production only")
    code, out, _ = check(gate, project, junit(tmp_path, KEPT))
    assert code == 0, out
    assert "spec changes" not in out
