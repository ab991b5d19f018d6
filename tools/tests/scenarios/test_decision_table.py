"""docs/design.md section 7: each decision-table row on a real git repository (base, change, gate run)."""

from __future__ import annotations

import json

from tools.testing.gitrepo import IDS, blob_bytes, default_rows, junit, oracle_toml


def check(gate, repo, results, *extra, environ=None):
    return gate("--repo", str(repo.path), "check", "--base", "main", "--results", results, *extra, environ=environ)


def test_production_and_harness_changed_oracles_untouched_is_ok(gate, project, tmp_path, all_passed):
    project.write("shop/calc.py", "def add(a, b):\n    return b + a\n\n\ndef norm(state, k):\n    return dict(state)\n")
    project.write("harness/test_shop.py", "# harness v2\n")
    project.commit("change production and harness")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed))
    assert code == 0, out
    assert "gate ok (exit 0)" in out
    assert "2 changed path(s), 0 protected" in out


def test_harness_adds_a_test_file_and_every_id_still_runs_is_ok(gate, project, tmp_path, all_passed):
    project.write("harness/test_more.py", "def test_extra():\n    pass\n")
    project.commit("more harness")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed))
    assert code == 0, out


def test_harness_stops_executing_an_id_exits_4(gate, project, tmp_path):
    project.write("harness/test_shop.py", "# dropped add_table\n")
    project.commit("harness drops a row")
    results = junit(tmp_path, {"sum_in_range": "passed", "norm_is_idempotent": "passed"})
    code, out, _ = check(gate, project, results)
    assert code == 4, out
    assert "[4] oracles/shop.toml add_table: no outcome in 1 result file(s); the oracle test must run it" in out


def test_skipped_id_is_not_coverage_exits_4(gate, project, tmp_path, all_passed):
    project.commit("nothing")
    code, out, _ = check(gate, project, junit(tmp_path, {**all_passed, "add_table": "skipped"}))
    assert code == 4
    assert "[4] oracles/shop.toml add_table: skipped, not executed; that is not coverage" in out


def test_failed_invariant_exits_4(gate, project, tmp_path, all_passed):
    project.commit("nothing")
    code, out, _ = check(gate, project, junit(tmp_path, {**all_passed, "sum_in_range": "failed"}))
    assert code == 4
    assert "[4] oracles/shop.toml sum_in_range: failed: the invariant does not hold" in out


def test_blob_bytes_changed_pin_not_updated_exits_2_without_label(gate, project, tmp_path, all_passed):
    project.write("oracles/blobs/bound.json", blob_bytes([{"a": 1, "b": 3}]))
    project.commit("edit blob")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed))
    assert code == 2, out
    assert (
        "[2] oracles/blobs/bound.json: protected by 'oracles/**' and changed (M) without the 'oracle-change' label"
        in out
    )
    assert (
        "[5] oracles/shop.toml sum_in_range: field blob_sha256: oracles/blobs/bound.json does not match its pin" in out
    )


def test_blob_bytes_changed_pin_not_updated_exits_5_with_label(gate, project, tmp_path, all_passed):
    project.write("oracles/blobs/bound.json", blob_bytes([{"a": 1, "b": 3}]))
    project.write_manifest()
    project.commit("edit blob")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert "field blob_sha256: oracles/blobs/bound.json does not match its pin: expected sha256 " in out
    assert "[2]" not in out


def test_oracles_edited_without_label_exits_2(gate, project, tmp_path, all_passed):
    project.write("oracles/shop.toml", oracle_toml(default_rows(max_=1000)))
    project.write_manifest()
    project.commit("widen")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed))
    assert code == 2
    assert "[2] oracles/shop.toml: protected by 'oracles/**'" in out
    assert "[2] oracles/MANIFEST.sha256: protected by 'oracles/**'" in out


WIDENED = [
    "  ~ sum_in_range (bound) in oracles/shop.toml  [bound widened]",
    "      min: 0 -> -5",
    "      max: 100 -> 1000",
]


def test_oracles_edited_with_label_bound_widened_needs_a_changelog_line_and_is_reported(
    gate, project, tmp_path, all_passed
):
    project.write("oracles/shop.toml", oracle_toml(default_rows(min_=-5, max_=1000)))
    project.write_manifest()
    project.commit("widen")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert (
        "[5] oracles/CHANGELOG.md sum_in_range: bound widened (oracles/shop.toml) needs a line in "
        "oracles/CHANGELOG.md naming sum_in_range in this change, e.g. `- sum_in_range: bound widened, because ...`"
        in out
    ), out
    lines = out.splitlines()
    start = lines.index("spec changes (merge base -> HEAD): 1 row(s)")
    assert lines[start + 1 : start + 4] == WIDENED, out
    # A line that names another id, or the id inside a longer word, does not count.
    project.write("oracles/CHANGELOG.md", "- sum_in_range_v2: unrelated\n- other: sum_in_ranges widened\n")
    project.write_manifest()
    project.commit("changelog without the id")
    assert check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")[0] == 5
    project.write(
        "oracles/CHANGELOG.md",
        "- sum_in_range_v2: unrelated\n- sum_in_range: widened to [-5, 1000], refunds may be negative\n",
    )
    project.write_manifest()
    project.commit("changelog")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 0, out
    assert "ok    oracle changelog    1 weakened claim(s), each named in oracles/CHANGELOG.md" in out
    assert WIDENED[0] in out


def test_a_removed_row_and_fewer_generated_samples_need_changelog_lines_too(gate, project, tmp_path, all_passed):
    rows = default_rows()
    rows[0]["generate"] = {"count": 9, "a": {"int": [0, 3]}, "b": {"int": [0, 3]}}
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit("generators")
    project.git("branch", "-f", "main", "HEAD")
    rows[0]["generate"] = {"count": 2, "a": {"int": [0, 3]}, "b": {"int": [0, 3]}}
    project.write("oracles/shop.toml", oracle_toml(rows[:2]))
    project.write_manifest()
    project.commit("fewer samples, one row gone")
    code, out, _ = check(
        gate, project, junit(tmp_path, {i: "passed" for i in IDS[:2]}), "--label", "oracle-change", "--format", "json"
    )
    report = json.loads(out)
    assert code == 3, out  # the dropped id is exit 3, the lowest; the changelog lines are missing too
    changelog = sorted((v["id"], v["message"].split(" (")[0]) for v in report["violations"] if v["code"] == 5)
    assert changelog == [("add_table", "row removed"), ("sum_in_range", "fewer generated samples")], report
    changes = {c["id"]: c for c in report["spec_changes"]}
    assert changes["add_table"]["status"] == "removed" and changes["sum_in_range"]["marks"] == [
        "fewer generated samples"
    ]
    assert {"field": "generate", "old": "9 sample(s) a run", "new": "2 sample(s) a run"} in changes["sum_in_range"][
        "fields"
    ]


def test_row_pasted_without_a_correct_hash_exits_5(gate, project, tmp_path, all_passed):
    rows = default_rows() + [
        {
            "id": "pasted_row",
            "entry": "shop.calc:add",
            "kind": "exact_table",
            "blob": "oracles/blobs/table.json",
            "blob_sha256": "0" * 64,
        }
    ]
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit("paste a row")
    code, out, _ = check(
        gate, project, junit(tmp_path, {**all_passed, "pasted_row": "passed"}), "--label", "oracle-change"
    )
    assert code == 5, out
    assert (
        "[5] oracles/shop.toml pasted_row: field blob_sha256: "
        "oracles/blobs/table.json does not match its pin: expected sha256 "
    ) + "0" * 64 in out


def test_id_dropped_at_head_exits_3(gate, project, tmp_path, all_passed):
    project.write("oracles/shop.toml", oracle_toml(default_rows()[:2]))
    project.write_manifest()
    project.commit("drop a row")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 3, out
    assert "[3] oracles/ add_table: present at the base, missing at HEAD" in out


def test_unknown_kind_exits_5(gate, project, tmp_path, all_passed):
    rows = default_rows()
    rows[2]["kind"] = "approximately"
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit("new kind")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5
    assert "[5] oracles/shop.toml add_table: field kind: unknown kind 'approximately'" in out


def test_stale_manifest_exits_5(gate, project, tmp_path, all_passed):
    project.write("oracles/shop.toml", oracle_toml(default_rows(max_=99)))
    project.commit("narrow, forgot the manifest")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5
    assert "[5] oracles/MANIFEST.sha256: is stale (" in out
    assert "manifest --write`) in a change labelled oracle-change" in out


def test_workspace_green_clean_red_exits_6(gate, tmp_path, all_passed):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = junit(tmp_path / "a", all_passed)
    b = junit(tmp_path / "b", {**all_passed, "add_table": "failed"})
    code, out, _ = gate("compare", a, b)
    assert code == 6
    assert "add_table" in out and "passed" in out and "failed" in out


def test_same_outcomes_in_another_order_compare_equal(gate, tmp_path, all_passed):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = junit(tmp_path / "a", all_passed)
    b = junit(tmp_path / "b", dict(reversed(list(all_passed.items()))))
    code, out, _ = gate("compare", a, b)
    assert (code, out.strip()) == (0, "runs agree: 3 id(s), same outcomes and observation digests")


def test_protected_gate_code_changed_without_label_exits_2(gate, project, tmp_path, all_passed):
    project.write("tools/gate.py", "# always pass\n")
    project.commit("weaken the gate")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed))
    assert code == 2
    assert "[2] tools/gate.py: protected by 'tools/**'" in out


def test_labels_come_from_every_source(gate, project, tmp_path, all_passed):
    project.write("oracles/shop.toml", oracle_toml(default_rows(max_=99)))
    project.write_manifest()
    head = project.commit("narrow")
    results = junit(tmp_path, all_passed)
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "action": "labeled",
                "label": {"name": "oracle-change"},
                "pull_request": {"head": {"sha": head}, "labels": [{"name": "oracle-change"}]},
            }
        )
    )
    # A CI label counts only where the CI data names the commit it was given on (tools/tests/unit/test_labels.py).
    for env in ({"PR_LABELS": "bug, oracle-change", "PR_HEAD_SHA": head}, {"GITHUB_EVENT_PATH": str(event)}):
        code, out, _ = check(gate, project, results, environ=env)
        assert code == 0, (env, out)
    for env in (
        {"PR_LABELS": "oracle-changes", "PR_HEAD_SHA": head},
        {"PR_LABELS": "oracle-change"},
        {"CI_MERGE_REQUEST_LABELS": "oracle-change", "CI_COMMIT_SHA": head},
    ):
        code, _, _ = check(gate, project, results, environ=env)
        assert code == 2, env


def test_json_format_lists_checks_outcomes_and_violations(gate, project, tmp_path):
    project.commit("nothing")
    code, out, _ = check(gate, project, junit(tmp_path, {"sum_in_range": "passed"}), "--format", "json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 4
    assert doc["outcomes"] == {"sum_in_range": "passed", "norm_is_idempotent": "missing", "add_table": "missing"}
    assert {v["id"] for v in doc["violations"]} == {"norm_is_idempotent", "add_table"}
    assert [c["name"] for c in doc["checks"]] == [
        "protected paths",
        "oracle files",
        "manifest",
        "invariant ids",
        "invariant outcomes",
    ]


def test_check_never_writes_to_the_work_tree(gate, project, tmp_path, all_passed):
    project.commit("nothing")
    before = project.git("status", "--porcelain", "--ignored")
    check(gate, project, junit(tmp_path, all_passed))
    assert project.git("status", "--porcelain", "--ignored") == before


def test_ids_are_all_the_fixture_declares():
    assert [r["id"] for r in default_rows()] == IDS


def test_results_directory_of_test_logs_is_accepted(gate, project, tmp_path, all_passed):
    project.commit("nothing")
    logs = tmp_path / "testlogs" / "oracles" / "oracle_test"
    logs.mkdir(parents=True)
    junit(logs, all_passed, name="test.xml")
    code, out, _ = check(gate, project, str(tmp_path / "testlogs"))
    assert code == 0, out
    code, out, _ = check(gate, project, str(tmp_path / "testlogs" / "oracles"))
    assert code == 0, out


def test_harness_testcases_naming_invariant_ids_are_ignored_and_noted(gate, project, tmp_path, all_passed):
    project.commit("nothing")
    oracle = tmp_path / "testlogs" / "oracles" / "oracle_test"
    oracle.mkdir(parents=True)
    junit(oracle, {**all_passed, "add_table": "failed"}, name="test.xml")
    forged = tmp_path / "testlogs" / "harness" / "forged_test"
    forged.mkdir(parents=True)
    junit(forged, all_passed, name="test.xml")
    code, out, _ = check(gate, project, str(tmp_path / "testlogs"))
    assert code == 4, out
    assert f"ignored [<id>] testcases of {forged / 'test.xml'} (not an oracle test target): add_table, " in out
    # Only a harness writes them: no id has an outcome.
    code, out, _ = check(gate, project, str(tmp_path / "testlogs" / "harness"))
    assert code == 4, out
    assert "[4] oracles/shop.toml add_table: no outcome" in out


def test_bootstrap_base_without_oracles(gate, tmp_path, all_passed):
    from tools.testing.gitrepo import GitRepo, make_project

    plain = GitRepo(tmp_path / "boot")
    plain.write("README", "before the gate\n")
    plain.commit("no oracles yet")
    project = make_project(tmp_path / "other")
    # Graft the project's files onto a branch of the plain repository.
    plain.git("checkout", "-q", "-b", "adopt")
    for rel in project.git("ls-files").split():
        plain.write(rel, project.read(rel))
    plain.commit("adopt the gate")
    code, out, _ = check(gate, plain, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 0, out
    assert "bootstrap: the base has no oracles/policy.toml" in out


def test_a_failed_invariant_names_its_first_failing_sample_on_one_line(gate, project, tmp_path, all_passed):
    project.commit("nothing")
    path = tmp_path / "r.xml"
    cases = "".join(f'<testcase name="invariant[{i}]"/>' for i in all_passed if i != "add_table")
    path.write_text(
        '<testsuites><testsuite name="oracle">'
        + cases
        + '<testcase name="invariant[add_table]"><failure message="sample 2: raised ValueError: a&#10;'
        'gate ok (exit 0)&#13;x"/></testcase></testsuite></testsuites>'
    )
    code, out, _ = check(gate, project, str(path))
    assert code == 4, out
    assert (
        "[4] oracles/shop.toml add_table: failed: the invariant does not hold: sample 2: raised ValueError: a\\n"
        "gate ok (exit 0)\\rx"
    ) in out
    assert "gate ok (exit 0)" not in out.splitlines()


def test_a_labelled_change_of_generators_or_time_limit_is_reported_for_review(gate, project, tmp_path, all_passed):
    text = project.read("oracles/shop.toml").decode()
    text = text.replace('kind = "bound"\n', 'kind = "bound"\ntimeout_s = 5\n', 1)
    head, bound_row, others = text.split("[[invariant]]", 2)
    generated = "[invariant.generate]\ncount = 7\na = { int = [0, 3] }\nb = { int = [0, 3] }\n\n"
    text = head + "[[invariant]]" + bound_row + generated + "[[invariant]]" + others
    project.write("oracles/shop.toml", text)
    project.write_manifest()
    project.commit("tighter time limit, generated samples")
    code, out, err = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 0, out + err
    assert "  ~ sum_in_range (bound) in oracles/shop.toml  [generated samples changed]" in out
    assert "      timeout_s: 60 -> 5.0" in out
    assert "      generate: - -> 7 sample(s) a run" in out
    assert "oracle changelog" not in out  # more samples and a tighter limit weaken nothing


def test_an_unparsable_oracle_file_is_not_reported_as_removed_rows(gate, project, tmp_path, all_passed):
    project.write("oracles/shop.toml", project.read("oracles/shop.toml").decode() + "this is = = not toml\n")
    project.write_manifest()
    project.commit("broken file")
    code, out, _ = check(gate, project, junit(tmp_path, all_passed), "--label", "oracle-change")
    assert code == 5, out
    assert "row removed" not in out and "CHANGELOG" not in out
    assert "spec changes: not listed while HEAD's oracle files are invalid" in out
