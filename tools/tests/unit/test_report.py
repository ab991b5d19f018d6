"""report.py and `check --format github|markdown --junit`: CI reports, with every value from the
change escaped for the format it lands in."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tools.oracle_gate.check import CheckLine, Report
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.report import id_line, junit_xml, render_github, render_markdown
from tools.oracle_gate.suite.spec_changes import RowChange
from tools.testing.gitrepo import IDS, junit


def report(*violations: Violation) -> Report:
    r = Report("main", "a" * 40, "b" * 40, "c" * 40, ["oracle-change"])
    r.checks = [CheckLine("protected paths", True, "0 changed path(s)"),
                CheckLine("invariant outcomes", not violations, "x", tuple(violations))]
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
    assert lines[1].startswith("::error file=oracles/shop.toml,line=4,title=oracle-gate [4]::[4] oracles/ sum_in_range: 50%25 off")
    # The forged command stays inside the data of one line (escaped line break): no line of its own.
    assert len(lines) == 4 and not any(line.startswith("::error::forged") for line in lines)
    assert lines[2].startswith("::error file=oracles/a%2Cb%3Ac.json,title=oracle-gate [2]::")
    assert lines[-1] == "::error title=oracle-gate::gate FAILED (exit 2)"
    assert render_github(report(), "TEXT", str(tmp_path)).split("\n")[-1] == "::notice title=oracle-gate::gate ok (exit 0)"


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
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", results,
                        "--format", "markdown", "--junit", str(out_file))
    assert code == 0 and out.startswith("## oracle-gate: gate ok (exit 0)"), out
    assert ET.parse(out_file).getroot().find("testsuite").get("failures") == "0"
    code, _, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", results,
                        "--junit", str(tmp_path / "no" / "such" / "gate.xml"))
    assert code == 1 and "--junit" in err and len(err.splitlines()) == 1


def test_the_cli_appends_markdown_to_a_summary_file_beside_the_text(project, gate, tmp_path):
    results = junit(tmp_path, {i: "passed" for i in IDS})
    summary = tmp_path / "summary.md"
    summary.write_text("# an earlier step\n")
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", results,
                        "--markdown", str(summary))
    assert code == 0 and out.splitlines()[-1] == "gate ok (exit 0)", out
    text = summary.read_text()
    assert text.startswith("# an earlier step\n## oracle-gate: gate ok (exit 0)"), text
    code, _, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", results,
                        "--markdown", str(tmp_path / "no" / "summary.md"))
    assert code == 1 and err.startswith("oracle-gate: [1] --markdown") and len(err.splitlines()) == 1, err


def test_a_failed_row_that_did_not_change_points_at_its_line_too(tmp_path):
    (tmp_path / "oracles").mkdir()
    (tmp_path / "oracles" / "shop.toml").write_text('schema = 1\n\n[[invariant]]\nid = "sum_in_range"\n')
    r = report(Violation(4, "oracles/", "sum_in_range", "failed: result -1 is outside [0, 10]"))
    r.sources = {"sum_in_range": "oracles/shop.toml"}
    assert render_github(r, "T", str(tmp_path)).split("\n")[1].startswith(
        "::error file=oracles/shop.toml,line=4,title=oracle-gate [4]::")


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
        code, out, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", results, option, path)
        assert code == 1 and out == "" and len(err.splitlines()) == 1 and why in err, (path, out, err)
    assert victim.read_text() == "keep me\n"
