"""`check`'s reports for CI: GitHub workflow commands, a Markdown summary for a pull-request comment
or `$GITHUB_STEP_SUMMARY`, and JUnit XML of the gate's own checks (docs/ci.md, "Reports for CI").

Every value that comes from the change (paths, ids, messages) is escaped for the format it lands
in, so none can add a workflow command, a table cell or an XML element.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

from tools.oracle_gate.check import Report
from tools.oracle_gate.errors import Violation
from tools.oracle_gate.runs.results import short_digest
from tools.oracle_gate.suite.spec_changes import report_lines
from tools.oracle_gate.text import visible


def _command_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped as GitHub's runner unescapes them."""
    return visible(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _command_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,` escaped."""
    return _command_data(text).replace(":", "%3A").replace(",", "%2C")


def id_line(repo: str, path: str, ident: str) -> int | None:
    """The 1-based line of `id = "<ident>"` in the oracle file `path` of the work tree, if any."""
    if not ident or not path.endswith(".toml"):
        return None
    pattern = re.compile(rf'\s*id\s*=\s*"{re.escape(ident)}"\s*(#.*)?$')
    try:
        with open(os.path.join(repo, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if pattern.match(line.rstrip("\n")):
                    return number
    except OSError:
        return None
    return None


def _file_of(report: Report, violation: Violation) -> str:
    """The file a violation points at: the oracle file of its id (from the spec-change report, a
    changelog violation points at the row, not at the changelog; else from HEAD's rows), else its
    path when that names a file, else ""."""
    for change in report.spec_changes:
        if violation.id and change.id == violation.id:
            return change.source
    if violation.id and violation.id in report.sources:
        return report.sources[violation.id]
    if violation.path and not violation.path.endswith("/"):
        return violation.path
    return ""


def render_github(report: Report, text: str, repo: str) -> str:
    """The text report, then one `::error` workflow command per violation with its file and, for
    a row of an oracle file, the row's line; a last `::notice` or `::error` with the verdict."""
    lines = [text]
    for violation in report.violations:
        path = _file_of(report, violation)
        props = [f"title={_command_property(f'oracle-gate [{violation.code}]')}"]
        if path:
            props.insert(0, f"file={_command_property(path)}")
            line = id_line(repo, path, violation.id)
            if line is not None:
                props.insert(1, f"line={line}")
        lines.append(f"::error {','.join(props)}::{_command_data(violation.line())}")
    verdict = "gate ok (exit 0)" if report.exit_code == 0 else f"gate FAILED (exit {report.exit_code})"
    lines.append(f"::{'notice' if report.exit_code == 0 else 'error'} title=oracle-gate::{_command_data(verdict)}")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """A Markdown table cell or list item: HTML-escaped, `|` and backslashes escaped, on one line."""
    value = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\|`*_\[\]#])", r"\\\1", value)


def render_markdown(report: Report) -> str:
    """A Markdown summary: the verdict, the checks, the per-id table of both runs, the spec-change
    report and the violations."""
    code = report.exit_code
    out = [f"## oracle-gate: {'gate ok' if code == 0 else 'gate FAILED'} (exit {code})", "",
           f"Base {_cell(report.base)} (tip {report.base_commit[:12]}), merge base {report.merge_base[:12]}, "
           f"HEAD {report.head[:12]}"
           + (f", merge result {report.merge_result[:12]}" if report.merge_result else "")
           + (" (--head-only)" if report.head_only else "")
           + f"; labels: {_cell(', '.join(report.labels)) or 'none'}"
           + (f"; salt {_cell(report.salt)}" if report.salt else ""), "",
           "| check | result | detail |", "|---|---|---|"]
    out.extend(f"| {_cell(c.name)} | {'ok' if c.ok else '**FAIL**'} | {_cell(c.detail)} |" for c in report.checks)
    if report.invariants:
        clean = report.clean_outcomes
        out += ["", "| id | workspace | digest |" + (" clean | digest |" if clean is not None else ""),
                "|---|---|---|" + ("---|---|" if clean is not None else "")]
        for ident in sorted(set(report.invariants) | set(clean or {})):
            row = (f"| {_cell(ident)} | {_cell(report.outcomes.get(ident, 'missing'))} | "
                   f"{short_digest(report.observed.get(ident))} |")
            if clean is not None:
                row += (f" {_cell(clean.get(ident, 'missing'))} | "
                        f"{short_digest((report.clean_observed or {}).get(ident))} |")
            out.append(row)
    if report.clean_sealing is not None:
        out += ["", f"Clean run sealed by: {_cell(report.clean_sealing or 'nothing beyond Bazel sandboxing')}"]
    if report.spec_changes:
        out += ["", "### Spec changes (merge base -> HEAD)", "", "```"]
        out.extend(visible(line).replace("```", "'''") for line in report_lines(report.spec_changes))
        out.append("```")
    if report.violations:
        out += ["", "### Violations", ""]
        out.extend(f"- {_cell(v.line())}" for v in report.violations)
    if report.notes:
        out += ["", "### Notes", ""]
        out.extend(f"- {_cell(n)}" for n in report.notes)
    return "\n".join(out)


def junit_xml(report: Report) -> bytes:
    """JUnit XML of the gate's own checks: one testcase per check of the report (`oracle-gate.<check>`),
    failed with every violation's line when the check failed."""
    root = ET.Element("testsuites")
    failures = sum(1 for c in report.checks if not c.ok)
    suite = ET.SubElement(root, "testsuite", name="oracle-gate", tests=str(len(report.checks)),
                          failures=str(failures), errors="0")
    for check in report.checks:
        case = ET.SubElement(suite, "testcase", classname="oracle-gate", name=visible(check.name))
        if not check.ok:
            lines = [v.line() for v in check.violations]
            failure = ET.SubElement(case, "failure", message=visible(check.detail))
            failure.text = "\n".join(lines)
        else:
            ET.SubElement(case, "system-out").text = visible(check.detail)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
