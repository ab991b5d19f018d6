"""Oracle files that parse but lie (exit 5), and harness results that look green without checking."""

from __future__ import annotations

import pytest

from tools.testing.gitrepo import IDS, default_rows, junit, oracle_toml


def labelled_check(gate, repo, tmp_path, outcomes=None):
    results = junit(tmp_path, outcomes or {i: "passed" for i in IDS})
    return gate("--repo", str(repo.path), "check", "--base", "main", "--label", "oracle-change", "--results", results)


def commit_rows(repo, text: str) -> None:
    repo.write("oracles/shop.toml", text)
    repo.write_manifest()
    repo.commit("edit oracle")


def test_two_rows_with_the_same_id_in_one_file(gate, project, tmp_path):
    rows = default_rows()
    commit_rows(project, oracle_toml(rows + [rows[0]]))
    code, out, _ = labelled_check(gate, project, tmp_path)
    assert code == 5
    assert "[5] oracles/shop.toml sum_in_range: field id: duplicate id 'sum_in_range' in this file" in out


def test_the_same_id_in_two_files(gate, project, tmp_path):
    project.write("oracles/more.toml", oracle_toml([default_rows()[2]]))
    project.write_manifest()
    project.commit("second file")
    code, out, _ = labelled_check(gate, project, tmp_path)
    assert code == 5
    assert (
        "[5] oracles/shop.toml add_table: field id: duplicate id 'add_table', already declared in oracles/more.toml"
        in out
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("min = 0", "min = true", "field min: must be a finite int or float, got a bool"),
        ("min = 0", "min = 1979-05-27T07:32:00Z", "field min: must be a finite int or float, got datetime"),
        ("min = 0", "min = 1979-05-27", "field min: must be a finite int or float, got date"),
        ("max = 100", "max = nan", "field max: must be a finite int or float, got nan"),
        ("max = 100", "max = inf", "field max: must be a finite int or float, got inf"),
        ("max = 100", "max = -inf", "field max: must be a finite int or float, got -inf"),
        ('blob = "oracles/blobs/bound.json"', 'blob = "../x"', "field blob: '../x' is not a normalized path"),
        ('blob = "oracles/blobs/bound.json"', 'blob = "/etc/passwd"', "field blob: '/etc/passwd' is absolute"),
        (
            'blob = "oracles/blobs/bound.json"',
            'blob = "oracles/blobs/../../harness/x.json"',
            "is not a normalized path",
        ),
        (
            'entry = "shop.calc:add"',
            'entry = "os:system"',
            "field entry: 'os:system' is not of the form package.module:function",
        ),
        (
            'entry = "shop.calc:add"',
            'entry = "subprocess.os:system"',
            "field entry: module 'subprocess.os' is outside the production packages",
        ),
        (
            'entry = "shop.calc:add"',
            'entry = "tools.oracle_gate.spec.verdicts:judge_exact"',
            "is outside the production packages",
        ),
    ],
)
def test_rows_that_parse_but_lie(gate, project, tmp_path, old, new, message):
    text = oracle_toml(default_rows())
    assert old in text
    commit_rows(project, text.replace(old, new, 1))
    code, out, _ = labelled_check(gate, project, tmp_path)
    assert code == 5, out
    assert message in out
    assert "oracles/shop.toml sum_in_range:" in out


def test_a_skipped_row_is_not_coverage(gate, project, tmp_path):
    project.commit("nothing")
    code, out, _ = labelled_check(gate, project, tmp_path, {**{i: "passed" for i in IDS}, "add_table": "skipped"})
    assert code == 4 and "add_table: skipped, not executed" in out


def test_a_missing_blob_reported_as_an_error_is_not_coverage(gate, project, tmp_path):
    project.commit("nothing")
    code, out, _ = labelled_check(gate, project, tmp_path, {**{i: "passed" for i in IDS}, "add_table": "error"})
    assert code == 4 and "add_table: error, not executed" in out


def test_a_harness_that_never_writes_xml_output_file(gate, project, tmp_path):
    # Bazel then writes its own test.xml: one testcase named after the target, no ids.
    project.commit("nothing")
    fallback = tmp_path / "test.xml"
    fallback.write_text(
        '<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="harness/invariants_test" '
        'tests="1" failures="0" errors="0"><testcase name="harness/invariants_test" status="run" '
        'duration="1" time="1"></testcase></testsuite></testsuites>'
    )
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", str(fallback))
    assert code == 4
    assert all(f"[4] oracles/shop.toml {i}: no outcome" in out for i in IDS)


def test_runs_compare_as_maps_whatever_the_order_hosts_and_times(gate, tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_text(
        '<testsuites><testsuite hostname="ws-1" timestamp="2026-01-01T00:00:00">'
        '<testcase name="test_invariant[x]" time="0.1"/><testcase name="test_invariant[y]" time="9"/>'
        "</testsuite></testsuites>"
    )
    b.write_text(
        '<testsuites><testsuite hostname="clean-runner" timestamp="2027-06-06T12:00:00">'
        '<testcase name="test_invariant[y]" time="0.001"/><testcase '
        'classname="other" name="test_invariant[x]" time="3"/>'
        "</testsuite></testsuites>"
    )
    code, out, _ = gate("compare", str(a), str(b))
    assert (code, out.strip()) == (0, "runs agree: 2 id(s), same outcomes and observation digests")


def test_an_id_present_in_one_run_only(gate, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = junit(tmp_path / "a", {"x": "passed", "y": "passed"})
    b = junit(tmp_path / "b", {"x": "passed"})
    code, out, _ = gate("compare", a, b)
    assert code == 6
    assert "y   passed    missing" in out


@pytest.mark.parametrize("package", ["os", "subprocess", "builtins", "tools", "harness", "pytest"])
def test_policy_cannot_make_the_standard_library_or_the_gate_production(package):
    from tools.oracle_gate.approval.policy import parse_policy
    from tools.oracle_gate.errors import OracleError

    text = f'schema = 1\nprotected = ["x"]\nproduction_packages = ["shop", "{package}"]\n'
    with pytest.raises(OracleError, match="is the standard library or the gate itself"):
        parse_policy(text.encode())
