"""report.py and `check --format github|markdown --junit`: CI reports, with every value from the
change escaped for the format it lands in; the failing samples of a failed id in every format, and
a JUnit testcase per invariant id."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tools.oracle_gate.actions.judge import to_junit as judge_junit
from tools.oracle_gate.check.findings import NOT_RUN, CheckLine, Report
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.report import id_line, junit_xml, render_github, render_json, render_markdown, render_text
from tools.oracle_gate.runs.results import Observed
from tools.oracle_gate.spec.judgement import FailingSample, FailingSamples, Judgement, judge_row
from tools.oracle_gate.suite.spec_changes import RowChange
from tools.oracle_gate.text import visible
from tools.testing.gitrepo import IDS, junit


def report(*violations: Violation) -> Report:
    r = Report("main", "a" * 40, "b" * 40, "c" * 40, ["oracle-change"])
    r.checks = [
        CheckLine("protected paths", True, "0 changed path(s)"),
        CheckLine("invariant outcomes", not violations, "x", tuple(violations)),
    ]
    r.violations = list(violations)
    r.invariants = ["sum_in_range"]
    r.outcomes = {"sum_in_range": "failed" if violations else "passed"}
    return r


EVIL = Violation(4, "oracles/", "sum_in_range", "50% off\n::error::forged, a:b | <script> `x`")


def test_github_annotations_escape_data_and_properties_and_point_at_the_row(tmp_path):
    (tmp_path / "oracles").mkdir()
    (tmp_path / "oracles" / "shop.toml").write_text('schema = 1\n\n[[invariant]]\nid = "sum_in_range"\n')
    r = report(EVIL, Violation(2, "oracles/a,b:c.json", "", "changed"))
    r.spec_changes = [RowChange("sum_in_range", "changed", "oracles/shop.toml", "bound")]
    lines = render_github(r, "TEXT", str(tmp_path)).split("\n")
    assert lines[0] == "TEXT"
    assert lines[1].startswith(
        "::error file=oracles/shop.toml,line=4,title=oracle-gate [4]::[4] oracles/ sum_in_range: 50%25 off"
    )
    # The forged command stays inside the data of one line (escaped line break): no line of its own.
    assert len(lines) == 4 and not any(line.startswith("::error::forged") for line in lines)
    assert lines[2].startswith("::error file=oracles/a%2Cb%3Ac.json,title=oracle-gate [2]::")
    assert lines[-1] == "::error title=oracle-gate::gate FAILED (exit 2)"
    assert (
        render_github(report(), "TEXT", str(tmp_path)).split("\n")[-1] == "::notice title=oracle-gate::gate ok (exit 0)"
    )


def test_id_line_finds_the_row_and_nothing_else(tmp_path):
    (tmp_path / "o.toml").write_text('id = "other"\n  id = "sum_in_range"  # the row\n')
    assert id_line(str(tmp_path), "o.toml", "sum_in_range") == 2
    assert id_line(str(tmp_path), "o.toml", "sum_in") is None
    assert id_line(str(tmp_path), "missing.toml", "sum_in_range") is None


def test_markdown_has_the_verdict_the_tables_and_escapes_cells():
    text = render_markdown(report(EVIL))
    assert text.startswith("## oracle-gate: gate FAILED (exit 4)\n")
    assert "| invariant outcomes | **FAIL** | x |" in text and "| sum\\_in\\_range | failed | - |" in text
    violation = next(line for line in text.split("\n") if line.startswith("- \\[4\\]"))
    assert "&lt;script&gt;" in violation and "\\|" in violation and "\\`x\\`" in violation
    assert "<script>" not in text


def test_junit_has_one_testcase_per_check_failed_with_its_violations():
    root = ET.fromstring(junit_xml(report(EVIL)))
    suite = root.find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["protected paths"].find("failure") is None
    failure = cases["invariant outcomes"].find("failure")
    assert failure is not None and failure.text == EVIL.line()


def test_the_cli_writes_junit_and_refuses_a_missing_folder(project, gate, tmp_path):
    results = junit(tmp_path, {i: "passed" for i in IDS})
    out_file = tmp_path / "gate.xml"
    code, out, _ = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--results",
        results,
        "--format",
        "markdown",
        "--junit",
        str(out_file),
    )
    assert code == 0 and out.startswith("## oracle-gate: gate ok (exit 0)"), out
    assert ET.parse(out_file).getroot().find("testsuite").get("failures") == "0"
    code, _, err = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--results",
        results,
        "--junit",
        str(tmp_path / "no" / "such" / "gate.xml"),
    )
    assert code == 1 and "--junit" in err and len(err.splitlines()) == 1


def test_the_cli_appends_markdown_to_a_summary_file_beside_the_text(project, gate, tmp_path):
    results = junit(tmp_path, {i: "passed" for i in IDS})
    summary = tmp_path / "summary.md"
    summary.write_text("# an earlier step\n")
    code, out, _ = gate(
        "--repo", str(project.path), "check", "--base", "main", "--results", results, "--markdown", str(summary)
    )
    assert code == 0 and out.splitlines()[-1] == "gate ok (exit 0)", out
    text = summary.read_text()
    assert text.startswith("# an earlier step\n## oracle-gate: gate ok (exit 0)"), text
    code, _, err = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--results",
        results,
        "--markdown",
        str(tmp_path / "no" / "summary.md"),
    )
    assert code == 1 and err.startswith("oracle-gate: [1] --markdown") and len(err.splitlines()) == 1, err


def test_a_failed_row_that_did_not_change_points_at_its_line_too(tmp_path):
    (tmp_path / "oracles").mkdir()
    (tmp_path / "oracles" / "shop.toml").write_text('schema = 1\n\n[[invariant]]\nid = "sum_in_range"\n')
    r = report(Violation(4, "oracles/", "sum_in_range", "failed: result -1 is outside [0, 10]"))
    r.sources = {"sum_in_range": "oracles/shop.toml"}
    assert (
        render_github(r, "T", str(tmp_path))
        .split("\n")[1]
        .startswith("::error file=oracles/shop.toml,line=4,title=oracle-gate [4]::")
    )


@pytest.mark.parametrize("option", ["--junit", "--markdown"])
def test_a_report_path_that_is_a_link_a_folder_or_empty_is_exit_1_before_any_verdict(project, gate, tmp_path, option):
    results = junit(tmp_path, {i: "passed" for i in IDS})
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    link = tmp_path / "report"
    link.symlink_to(victim)
    folder = tmp_path / "folder"
    folder.mkdir()
    for path, why in ((str(link), "is a symbolic link"), (str(folder), "Is a directory"), ("", "is empty")):
        code, out, err = gate(
            "--repo", str(project.path), "check", "--base", "main", "--results", results, option, path
        )
        errors = [line for line in err.splitlines() if line.startswith("oracle-gate: [")]  # not the phase lines
        assert code == 1 and out == "" and len(errors) == 1 and why in errors[0], (path, out, err)
    assert victim.read_text() == "keep me\n"


# The failing samples of a failed id, in every format.

ODD = "x\x1b[31m\n::error::forged ##[add-mask] ]]> <b>&amp; | `tick` ```fence \ud800\u202e"
FAILING = FailingSamples(
    (
        FailingSample(2, False, "", f"[{json.dumps(ODD)}]", json.dumps(ODD), "-1", f"result {ODD!r} != expected -1"),
        FailingSample(0, True, "s4lt", '{"a":-5}', "-5", "a number in [0, 10]", "result -5 is outside [0, 10]"),
    ),
    12,
    "s4lt",
)


def failed_report() -> Report:
    message = f"{FAILING.shown[0].label()}: {FAILING.shown[0].message}"
    r = report(Violation(4, "oracles/", "sum_in_range", f"failed: the invariant does not hold: {message}"))
    r.invariants = ["add_table", "sum_in_range"]
    r.outcomes = {"add_table": "passed", "sum_in_range": "failed"}
    r.observed = {
        "add_table": Observed("passed", "a" * 64),
        "sum_in_range": Observed("failed", "f" * 64, message=message, failing=FAILING),
    }
    r.sources = {"add_table": "oracles/shop.toml", "sum_in_range": "oracles/shop.toml"}
    return r


def test_the_text_report_shows_each_failing_sample_with_its_inputs_and_a_replay_line():
    lines = render_text(failed_report()).split("\n")
    at = lines.index("failing samples (indexes count from 0):")
    assert lines[at + 1] == "  sum_in_range: 12 failing sample(s)"
    assert lines[at + 2].startswith("    sample 2 (0-based): result 'x\\x1b[31m\\n::error::forged #\\x23[add-mask]")
    assert lines[at + 3].startswith('      inputs ["x\\u001b[31m\\n::error::forged #\\x23[add-mask]')
    assert lines[at + 4 : at + 8] == [
        "    generated sample 0 (salt s4lt, 0-based): result -5 is outside [0, 10]",
        '      inputs {"a":-5} -> result -5; expected a number in [0, 10]',
        "    and 10 more failing sample(s)",
        "    replay: check --salt s4lt (a plain bazel test: --define=oracle_salt=s4lt)",
    ]
    assert not any(line.startswith("::") for line in lines) and "add_table:" not in "\n".join(lines)


def test_the_json_report_has_structured_failing_samples():
    doc = json.loads(render_json(failed_report()))
    observation = doc["observations"]["sum_in_range"]
    assert observation["failing_count"] == 12 and observation["message"].startswith("sample 2 (0-based)")
    assert observation["failing_samples"][1] == {
        "index": 0,
        "generated": True,
        "salt": "s4lt",
        "inputs": '{"a":-5}',
        "result": "-5",
        "expected": "a number in [0, 10]",
        "message": "result -5 is outside [0, 10]",
    }
    assert observation["failing_samples"][0]["inputs"] == f"[{json.dumps(ODD)}]"
    assert doc["observations"]["add_table"]["failing_samples"] == [] and "##[" not in render_json(failed_report())


def test_markdown_shows_the_failing_samples_in_a_block_they_cannot_close():
    text = render_markdown(failed_report())
    section = text[text.index("### Failing samples (indexes count from 0)") :]
    assert "sum\\_in\\_range: 12 failing sample(s)" in section
    block = section.split("```\n", 1)[1].split("\n```", 1)[0].split("\n")
    assert len(block) == 6 and block[-1] == "replay: check --salt s4lt (a plain bazel test: --define=oracle_salt=s4lt)"
    assert all("```" not in line for line in block) and "'''fence" in block[0]


def test_a_github_annotation_of_a_failed_row_holds_its_failing_samples(tmp_path):
    lines = render_github(failed_report(), "T", str(tmp_path)).split("\n")
    assert len(lines) == 3 and lines[1].startswith(
        "::error file=oracles/shop.toml,title=oracle-gate [4]::[4] oracles/ "
    )
    parts = lines[1].split("::", 2)[2].split("%0A")
    assert parts[0].startswith("[4] oracles/ sum_in_range: failed: the invariant does not hold: sample 2 (0-based)")
    assert parts[1:] == [_data(line) for line in FAILING.lines()]
    assert parts[-1] == "replay: check --salt s4lt (a plain bazel test: --define=oracle_salt=s4lt)"
    assert "\x1b" not in lines[1] and "\ud800" not in lines[1]


def _data(line: str) -> str:
    return visible(line).replace("%", "%25")


def invariant_cases(r: Report) -> dict[str, ET.Element]:
    root = ET.fromstring(junit_xml(r))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    return {c.get("name", ""): c for c in suites["oracle_gate.invariants"].iter("testcase")}


def test_junit_has_a_testcase_per_invariant_id_with_its_outcome_and_digest():
    r = failed_report()
    root = ET.fromstring(junit_xml(r))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"oracle-gate", "oracle_gate.invariants"}
    assert (suites["oracle_gate.invariants"].get("tests"), suites["oracle_gate.invariants"].get("failures")) == (
        "2",
        "1",
    )
    cases = invariant_cases(r)
    assert set(cases) == {"add_table", "sum_in_range"}
    assert {c.get("classname") for c in cases.values()} == {"oracle_gate.invariants"}
    passed = cases["add_table"]
    props = {p.get("name"): p.get("value") for p in passed.iter("property")}
    assert props == {"outcome": "passed", "observation_sha256": "a" * 64, "oracle_file": "oracles/shop.toml"}
    assert passed.find("failure") is None and passed.find("error") is None
    assert passed.findtext("system-out") == f"observation_sha256={'a' * 64}"
    failure = cases["sum_in_range"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("sample 2 (0-based): result 'x\\x1b[31m\\n")
    text = failure.text or ""
    assert text.split("\n")[2:] == [visible(line) for line in FAILING.lines()][2:]
    assert "\x1b" not in text and "\ud800" not in text and not any(line.startswith("::") for line in text.split("\n"))


def test_junit_gives_an_id_without_an_executed_outcome_an_error_and_a_disagreeing_clean_run_a_failure():
    r = failed_report()
    r.invariants = ["add_table", "gone", "skipped_one", "sum_in_range"]
    r.observed["skipped_one"] = Observed("skipped")
    r.clean_outcomes = {"add_table": "passed", "skipped_one": "skipped", "sum_in_range": "failed", "gone": "passed"}
    r.clean_observed = {
        "add_table": Observed("passed", "b" * 64),
        "sum_in_range": r.observed["sum_in_range"],
        "skipped_one": Observed("skipped"),
        "gone": Observed("passed", "c" * 64),
    }
    cases = invariant_cases(r)
    assert cases["gone"].find("error").get("message") == "no outcome: the oracle test did not report it"
    assert cases["skipped_one"].find("error").get("message") == "skipped, not executed; that is not coverage"
    differs = cases["add_table"].find("failure")
    assert differs is not None and "digest differs" in differs.get("message", "")
    props = {p.get("name"): p.get("value") for p in cases["add_table"].iter("property")}
    assert props["clean_outcome"] == "passed" and props["clean_observation_sha256"] == "b" * 64
    suite = next(s for s in ET.fromstring(junit_xml(r)).iter("testsuite") if s.get("name") == "oracle_gate.invariants")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "2")


def test_junit_escapes_any_id_and_names_the_rows_when_the_outcomes_were_not_run():
    r = report()
    r.invariants, r.outcomes = [], {}
    r.checks.append(CheckLine("invariant outcomes", False, NOT_RUN))
    r.sources = {'a\x00b<&>"]]>\ud800': "oracles/x.toml", "plain": "oracles/x.toml"}
    data = junit_xml(r)
    cases = invariant_cases(r)
    assert set(cases) == {'a\\x00b<&>"]]>\\ud800', "plain"}, data
    assert {c.find("error").get("message") for c in cases.values()} == {"no outcome: not run"}


def test_the_cli_shows_the_failing_samples_of_a_judge_made_result_file_in_text_and_junit(project, gate, tmp_path):
    expect = {
        "id": "add_table",
        "kind": "exact_table",
        "blob_samples": 3,
        "generated": 0,
        "expected": [3, 4, 5],
        "inputs": [[1, 2], [2, 2], [2, 3]],
    }
    reply = json.dumps({"id": "add_table", "results": [{"value": 3}, {"value": 0}, {"value": 5}]})
    judged = [
        judge_row(expect, {"id": "add_table", "reply": reply}, ""),
        *(Judgement(i, True, digest="0" * 64) for i in IDS if i != "add_table"),
    ]
    results = tmp_path / "test.xml"
    results.write_bytes(judge_junit(judged, "", "oracle_test"))
    out_file = tmp_path / "gate.xml"
    code, out, _ = gate(
        "--repo", str(project.path), "check", "--base", "main", "--results", str(results), "--junit", str(out_file)
    )
    assert code == 4, out
    assert (
        "failing samples (indexes count from 0):\n  add_table: 1 failing sample(s)\n"
        "    sample 1 (0-based): result 0 != expected 4\n      inputs [2,2] -> result 0; expected 4\n"
    ) in out
    assert (
        "[4] oracles/shop.toml add_table: failed: the invariant does not hold: "
        "sample 1 (0-based): result 0 != expected 4"
    ) in out
    assert "expected 3" not in out and "expected 5" not in out
    cases = {
        c.get("name"): c
        for c in ET.parse(out_file).getroot().iter("testcase")
        if c.get("classname") == "oracle_gate.invariants"
    }
    assert set(cases) == set(IDS) and cases["add_table"].find("failure") is not None
    assert all(cases[i].find("failure") is None for i in IDS if i != "add_table")


def test_the_clean_runs_failing_samples_are_listed_where_they_differ():
    r = failed_report()
    other = FailingSamples((FailingSample(1, False, "", "[3]", "9", "-1", "result 9 != expected -1"),), 1)
    r.clean_outcomes = {"add_table": "failed", "sum_in_range": "failed"}
    r.clean_observed = {
        "add_table": Observed("failed", "c" * 64, failing=other),
        "sum_in_range": r.observed["sum_in_range"],
    }
    lines = render_text(r).split("\n")
    assert "  add_table (clean run): 1 failing sample(s)" in lines and "  sum_in_range: 12 failing sample(s)" in lines
    assert not any(line.startswith("  sum_in_range (clean run)") for line in lines)
    doc = json.loads(render_json(r))
    assert doc["clean_observations"]["add_table"]["failing_samples"] == [other.shown[0].to_json()]


def test_github_annotates_the_changed_code_a_failing_row_ran(tmp_path):
    r = Report("main", "a" * 40, "b" * 40, "c" * 40, [])
    r.observed = {
        "tax_table": Observed("failed", ran=("billing.tax:tax_cents", "billing.tax:_round")),
        "total_ok": Observed("passed", ran=("billing.totals:grand_total_cents",)),
    }
    r.coverage = {
        "modified": [
            {"name": "billing.tax:tax_cents", "path": "billing/tax.py", "line": 12},
            {"name": "billing.totals:grand_total_cents", "path": "billing/totals.py", "line": 3},
            {"name": "billing.tax:unused", "path": "billing/tax.py", "line": 40},
        ]
    }
    warnings = [line for line in render_github(r, "text", str(tmp_path)).splitlines() if line.startswith("::warning")]
    assert warnings == [
        "::warning file=billing/tax.py,line=12,title=oracle-gate%3A a failing row ran this changed "
        "code::tax_table fails, and its run entered billing.tax:tax_cents, which this change modified"
    ]


def test_an_unsealed_workspace_run_is_named_on_the_first_line_and_a_sealed_one_says_what_sealed_it():
    from tools.oracle_gate.runs.workspace_seal import UNSEALED

    sealed = report()
    sealed.workspace_boundary = "bubblewrap 0.8.0 (/usr/bin/bwrap): a root holding only ..."
    text = render_text(sealed)
    assert "UNSEALED" not in text.splitlines()[0]
    assert "workspace run sealed by: bubblewrap 0.8.0" in text
    assert json.loads(render_json(sealed))["unsealed_workspace"] is None
    unsealed = report()
    unsealed.unsealed = UNSEALED
    first = render_text(unsealed).splitlines()[0]
    assert first.endswith("; UNSEALED workspace run (--unsealed-workspace); labels: oracle-change"), first
    assert f"workspace run: {UNSEALED}" in render_text(unsealed)
    assert json.loads(render_json(unsealed))["unsealed_workspace"] == UNSEALED
    assert "UNSEALED" in render_markdown(unsealed)


def test_a_behaviour_kept_row_the_phase_failed_is_marked_in_both_tables():
    r = report(Violation(4, "oracles/shop.toml", "sum_in_range", "behaviour changed on 2 of 9 samples"))
    r.outcomes = {"sum_in_range": "passed"}  # the runs only record a back_to_back row's results
    r.kept_failed = ["sum_in_range"]
    r.hidden_not_run = ["sum_in_range"]
    line = next(line for line in render_text(r).split("\n") if line.strip().startswith("sum_in_range"))
    assert line.rstrip().endswith("hidden samples: NOT RUN; behaviour kept: FAIL")
    assert "| hidden samples: NOT RUN; behaviour kept: FAIL |" in render_markdown(r)
