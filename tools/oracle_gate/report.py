"""`check`'s report in every format: text, JSON, GitHub workflow commands, a Markdown summary for a
pull-request comment or `$GITHUB_STEP_SUMMARY`, and JUnit XML of the gate's own checks and of each
invariant id (docs/ci.md, "Reports for CI"); `id_table`, the per-id table of `check`, `clean-run`
and `compare`; and `failing_blocks`, the failing samples of each failed id that every format shows
(docs/oracles.md, "When a row fails").

Every value that comes from the change (paths, ids, messages) is escaped for the format it lands
in, so none can break or add a line, a workflow command, a table cell or an XML element.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from tools.oracle_gate.check.findings import NOT_RUN, Report
from tools.oracle_gate.errors import NO_OUTCOME, Violation
from tools.oracle_gate.runs.results import EXECUTED, FAILED, PASSED, Observed, short_digest
from tools.oracle_gate.spec.judgement import FailingSamples
from tools.oracle_gate.suite.spec_changes import report_lines
from tools.oracle_gate.text import columns, runner_safe_json, visible

# The formats `render` knows, for `check --format`; JUnit XML goes to a file (`check --junit`).
FORMATS = ("text", "json", "github", "markdown")
# The per-id tables' mark on a row whose hidden samples did not run (docs/oracles.md, "Hidden samples").
HIDDEN_NOT_RUN_MARK = "hidden samples: NOT RUN"
# The mark on a behaviour-kept row the behaviour phase failed: the runs only record its results,
# so their outcome says it ran, not that it kept the base tip's behaviour (docs/oracles.md, "Behaviour kept").
KEPT_FAILED_MARK = "behaviour kept: FAIL"
# Width of an observation digest cell (`short_digest`: 12 hex digits).
DIGEST_WIDTH = 12


def render(report: Report, fmt: str, repo: str) -> str:
    """`report` in the format `fmt`, one of FORMATS, without a trailing newline.

    Args:
        report: the result of `check.run_check`.
        fmt: "text", "json", "github" or "markdown".
        repo: the work tree's root, where `github` looks up the line of an id in its oracle file.

    Raises:
        ValueError: for a format not in FORMATS (argparse's `choices` keeps those out of `check`).
    """
    if fmt == "json":
        return render_json(report)
    if fmt == "github":
        return render_github(report, render_text(report), repo)
    if fmt == "markdown":
        return render_markdown(report)
    if fmt == "text":
        return render_text(report)
    raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")


def id_table(
    rows: Sequence[Sequence[str]],
    widths: Sequence[int],
    *,
    header: Sequence[str] = (),
    ids: Iterable[str] | None = None,
    min_width: int = 0,
    indent: str = "",
) -> list[str]:
    """The lines of a per-id table (`text.columns`): a column of ids, then the other cells.

    Args:
        rows: one sequence of cells per id, the id first; at most len(widths) + 2 cells each.
        widths: the width of each column after the id column but the last (see `text.columns`).
        header: the header line's cells, when the table has one (it does not widen the id column).
        ids: the ids whose longest sets the id column's width (default: the first cell of each row).
        min_width: the least width of the id column.
        indent: what each line starts with.

    Returns:
        The header line (when given), then one line per row. Cells are not escaped: pass the
        values, or the lines, through `text.visible`. Raises nothing for well-formed rows.
    """
    id_width = max([min_width, *(len(i) for i in (ids if ids is not None else (row[0] for row in rows)))])
    return columns([*([header] if header else []), *rows], (id_width, *widths), indent=indent)


def render_text(report: Report) -> str:
    """The human summary of `report` (a `findings.Report`): header, one line per check, per-id
    outcomes, spec changes, run summaries, notes, violations and the verdict, without a trailing
    newline. Every line is passed through `text.visible`, so no value from the change can break or
    add one. Raises nothing."""
    lines = [
        f"oracle-gate check: base {report.base} (tip {report.tip[:12]}), merge base "
        f"{report.merge_base[:12]}, HEAD {report.head[:12]}"
        + (f", merge result {report.merge_result[:12]}" if report.merge_result else "")
        + (" (--head-only)" if report.head_only else "")
        + ("; UNSEALED workspace run (--unsealed-workspace)" if report.unsealed else "")
        + f"; labels: {', '.join(report.labels) or 'none'}"
        + (f"; salt {report.salt}" if report.salt else "")
    ]
    width = max(len(c.name) for c in report.checks)
    status_width = max(len("FAIL"), *(len(c.status) for c in report.checks))
    for c in report.checks:
        lines.append(f"  {c.status.ljust(status_width)}  {c.name.ljust(width)}  {c.detail}")
    if report.invariants:
        lines.append("per-id outcomes (observation digest):")
        lines.extend(_outcome_table(report))
    lines.extend(failing_lines(failing_blocks(report)))
    if report.spec_changes:
        lines.append(f"spec changes (merge base -> HEAD): {len(report.spec_changes)} row(s)")
        lines.extend(report_lines(report.spec_changes))
    for run_name, summary in report.summaries.items():
        # Bazel's "INFO: 9 processes: ..." without its log level: the report is not Bazel's log.
        where = "hidden phase" if run_name == "hidden" else f"{run_name} run"
        lines.extend(f"{where}: Bazel {line.removeprefix('INFO: ')}" for line in summary)
    if report.unsealed:
        lines.append(f"workspace run: {report.unsealed}")
    elif report.workspace_boundary:
        lines.append(f"workspace run sealed by: {report.workspace_boundary}")
    if report.clean_boundary is not None:
        lines.append(f"clean run sealed by: {report.clean_boundary or 'nothing beyond Bazel sandboxing'}")
    lines.extend(report.notes)
    lines.extend(v.line() for v in report.violations)
    code = report.exit_code
    if code and report.salt and not any(c.detail == NOT_RUN for c in report.checks):
        lines.append(f"salt {report.salt}: replay with `check --salt {report.salt}`")
    if report.bazel_log:
        lines.append(f"Bazel's output: {report.bazel_log}")
    if report.phases.line():  # the time per phase, then the verdict: always the last line
        lines.append(report.phases.line())
    lines.append("gate ok (exit 0)" if code == 0 else f"gate FAILED (exit {code})")
    # Each line is one line: whatever the repository, results or environment put into it is escaped.
    return "\n".join(visible(line) for line in lines)


FAILING_HEADER = "failing samples (indexes count from 0):"


def failing_lines(blocks: Iterable[tuple[str, FailingSamples]], indent: str = "") -> list[str]:
    """The text lines of failing samples: FAILING_HEADER, then per (heading, samples) block
    `<heading>: N failing sample(s)` and the samples' lines (`FailingSamples.lines`) below it;
    [] for no block. Not escaped: pass each line through `text.visible`. Raises nothing."""
    out: list[str] = []
    for heading, failing in blocks:
        out.append(f"{indent}  {heading}: {failing.count} failing sample(s)")
        out.extend(f"{indent}    {line}" for line in failing.lines())
    return [indent + FAILING_HEADER, *out] if out else []


def observed_failing(observed: dict[str, Observed]) -> list[tuple[str, FailingSamples]]:
    """(id, failing samples) for each id of an id -> Observed map that failed with failing samples
    recorded, in id order (the blocks of `failing_lines` for `clean-run` and `compare`)."""
    return [
        (ident, observed[ident].failing)
        for ident in sorted(observed)
        if observed[ident].outcome == FAILED and observed[ident].failing.count
    ]


def failing_blocks(report: Report) -> list[tuple[str, FailingSamples]]:
    """(heading, failing samples) for each id of `report` whose outcome failed with failing samples
    recorded: the id for the workspace run (or the given results), `<id> (clean run)` for the clean
    run where its failing samples differ from the workspace run's. In id order; raises nothing.
    The headings and the samples' lines are not escaped: each format escapes them."""
    out: list[tuple[str, FailingSamples]] = []
    clean = report.clean_observed or {}
    for ident in sorted(set(report.invariants) | set(report.observed) | set(clean)):
        mine, theirs = report.observed.get(ident), clean.get(ident)
        if mine is not None and mine.outcome == FAILED and mine.failing.count:
            out.append((ident, mine.failing))
        if (
            theirs is not None
            and theirs.outcome == FAILED
            and theirs.failing.count
            and (mine is None or theirs.failing != mine.failing)
        ):
            out.append((f"{ident} (clean run)", theirs.failing))
    return out


def _marks(report: Report) -> dict[str, tuple[str, ...]]:
    """The last cell after an id in the per-id tables, when it has one: hidden samples not run,
    behaviour kept failed, or both joined by "; "."""
    marks: dict[str, list[str]] = {}
    for ident in report.hidden_not_run:
        marks.setdefault(ident, []).append(HIDDEN_NOT_RUN_MARK)
    for ident in report.kept_failed:
        marks.setdefault(ident, []).append(KEPT_FAILED_MARK)
    return {ident: ("; ".join(found),) for ident, found in marks.items()}


def _outcome_table(report: Report) -> list[str]:
    """The per-id table: outcome and digest of the workspace run, and of the clean run beside them
    (with a header line) when there was one."""
    marks = _marks(report)
    if report.clean_outcomes is None:
        return id_table(
            [
                (i, report.outcomes.get(i, "missing"), short_digest(report.observed.get(i)), *marks.get(i, ()))
                for i in report.invariants
            ],
            (9, DIGEST_WIDTH),
            indent="  ",
        )
    clean_observed = report.clean_observed or {}
    rows = [
        (
            i,
            report.outcomes.get(i, "missing"),
            short_digest(report.observed.get(i)),
            report.clean_outcomes.get(i, "missing"),
            short_digest(clean_observed.get(i)),
            *marks.get(i, ()),
        )
        for i in sorted(set(report.invariants) | set(report.clean_outcomes))
    ]
    return id_table(rows, (9, DIGEST_WIDTH, 9, DIGEST_WIDTH), header=("id", "workspace", "", "clean"), indent="  ")


def render_json(report: Report) -> str:
    """The machine-readable report of `report` (a `findings.Report`) as one JSON document (an object,
    indented by 2, no trailing newline), with every `##[` written as `##\\u005b`
    (`text.runner_safe_json`). Raises nothing."""
    return runner_safe_json(
        json.dumps(
            {
                "exit_code": report.exit_code,
                "base": report.base,
                "base_commit": report.tip,
                "merge_base": report.merge_base,
                "head": report.head,
                "merge_result": report.merge_result or None,
                "judged": report.merge_result or report.head,
                "claims": report.claims,
                "head_only": report.head_only,
                "labels": report.labels,
                "checks": [
                    {"name": c.name, "ok": c.ok, "not_run": c.not_run, "detail": c.detail} for c in report.checks
                ],
                "hidden_not_run": report.hidden_not_run,
                "salt": report.salt,
                "outcomes": {i: report.outcomes.get(i, "missing") for i in report.invariants},
                "observations": {i: _observation_json(report.observed.get(i)) for i in report.invariants},
                "violations": [
                    {"code": v.code, "path": v.path, "id": v.id, "message": v.message} for v in report.violations
                ],
                "clean_outcomes": report.clean_outcomes,
                "clean_observations": None
                if report.clean_observed is None
                else {i: _observation_json(o) for i, o in sorted(report.clean_observed.items())},
                "clean_sealing": report.clean_boundary,
                "workspace_sealing": report.workspace_boundary,
                "unsealed_workspace": report.unsealed or None,
                "spec_changes": [
                    {
                        "id": c.id,
                        "status": c.status,
                        "source": c.source,
                        "kind": c.kind,
                        "marks": list(c.marks),
                        "fields": [{"field": f.field, "old": f.old, "new": f.new} for f in c.fields],
                        "samples": c.samples.as_json() if c.samples is not None else None,
                    }
                    for c in report.spec_changes
                ],
                "bazel_summaries": report.summaries,
                "coverage": report.coverage,
                "notes": report.notes,
            },
            indent=2,
            sort_keys=False,
        )
    )


def _observation_json(found: Observed | None) -> dict[str, object] | None:
    """One id's observation in `--format json`: outcome, digests, source, the failure's message,
    and the failing samples (`failing_count` in all; `failing_samples`, the first ones, each
    `FailingSample.to_json`: index, generated, salt, inputs, result, expected, message)."""
    if found is None:
        return None
    return {
        "outcome": found.outcome,
        "observation_sha256": found.digest,
        "sample_sha256": list(found.samples),
        "source": found.source,
        "message": found.message,
        "failing_count": found.failing.count,
        "failing_samples": [sample.to_json() for sample in found.failing.shown],
    }


def _command_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped as GitHub's runner unescapes them."""
    return visible(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _command_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,` escaped."""
    return _command_data(text).replace(":", "%3A").replace(",", "%2C")


def id_line(repo: str, path: str, ident: str) -> int | None:
    """The 1-based line of `id = "<ident>"` in the oracle file `path` (relative to the work tree's
    root `repo`), or None: for an empty `ident`, a path not ending in `.toml`, no such line, or a
    file that cannot be read (an OSError is not raised)."""
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
    """The text report `text` (`render_text(report)`), then one `::error` workflow command per
    violation of `report` with its file and, for a row of an oracle file under the work tree's root
    `repo`, the row's line (`id_line`); a failed row's annotation also holds its failing samples
    (one escaped line each, joined by `%0A`, which the runner shows as line breaks); a last
    `::notice` or `::error` with the verdict. No trailing newline; raises nothing."""
    lines = [text]
    for violation in report.violations:
        path = _file_of(report, violation)
        props = [f"title={_command_property(f'oracle-gate [{violation.code}]')}"]
        if path:
            props.insert(0, f"file={_command_property(path)}")
            line = id_line(repo, path, violation.id)
            if line is not None:
                props.insert(1, f"line={line}")
        # A failed row's annotation also shows its failing samples, one escaped line each.
        found = report.observed.get(violation.id) if violation.id and violation.code == NO_OUTCOME else None
        extra = found.failing.lines() if found is not None and found.outcome == FAILED else []
        message = "%0A".join(_command_data(item) for item in (violation.line(), *extra))
        lines.append(f"::error {','.join(props)}::{message}")
    lines.extend(changed_code_annotations(report))
    verdict = "gate ok (exit 0)" if report.exit_code == 0 else f"gate FAILED (exit {report.exit_code})"
    lines.append(f"::{'notice' if report.exit_code == 0 else 'error'} title=oracle-gate::{_command_data(verdict)}")
    return "\n".join(lines)


def changed_code_annotations(report: Report) -> list[str]:
    """One `::warning` per production function the change modified (`report.coverage`'s
    `modified`, with its file and line) that a failed row's run entered (the row's `ran` record),
    so the pull request shows the failure on the changed code too. The record comes from the
    change's own process: it can only add or hide these hints, never change a verdict."""
    modified = (report.coverage or {}).get("modified") or []
    out = []
    for ident, found in sorted(report.observed.items()):
        if found.outcome != FAILED or not found.ran:
            continue
        for function in modified:
            if function.get("name") in found.ran and function.get("path") and function.get("line"):
                props = (
                    f"file={_command_property(str(function['path']))},line={int(function['line'])},"
                    f"title={_command_property('oracle-gate: a failing row ran this changed code')}"
                )
                text = f"{ident} fails, and its run entered {function['name']}, which this change modified"
                out.append(f"::warning {props}::{_command_data(text)}")
    return out


def _cell(text: str) -> str:
    """A Markdown table cell or list item: HTML-escaped, `|` and backslashes escaped, on one line."""
    value = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\|`*_\[\]#])", r"\\\1", value)


def render_markdown(report: Report) -> str:
    """A Markdown summary of `report` (a `findings.Report`): the verdict, the checks, the per-id table
    of both runs, the spec-change report, the violations and the notes. No trailing newline;
    raises nothing."""
    code = report.exit_code
    out = [
        f"## oracle-gate: {'gate ok' if code == 0 else 'gate FAILED'} (exit {code})",
        "",
        f"Base {_cell(report.base)} (tip {report.tip[:12]}), merge base {report.merge_base[:12]}, "
        f"HEAD {report.head[:12]}"
        + (f", merge result {report.merge_result[:12]}" if report.merge_result else "")
        + (" (--head-only)" if report.head_only else "")
        + ("; UNSEALED workspace run (--unsealed-workspace)" if report.unsealed else "")
        + f"; labels: {_cell(', '.join(report.labels)) or 'none'}"
        + (f"; salt {_cell(report.salt)}" if report.salt else ""),
        "",
        "| check | result | detail |",
        "|---|---|---|",
    ]
    out.extend(
        f"| {_cell(c.name)} | {'ok' if c.status == 'ok' else '**' + c.status + '**'} | {_cell(c.detail)} |"
        for c in report.checks
    )
    if report.invariants:
        clean = report.clean_outcomes
        out += [
            "",
            "| id | workspace | digest |" + (" clean | digest |" if clean is not None else ""),
            "|---|---|---|" + ("---|---|" if clean is not None else ""),
        ]
        for ident in sorted(set(report.invariants) | set(clean or {})):
            row = (
                f"| {_cell(ident)} | {_cell(report.outcomes.get(ident, 'missing'))} | "
                f"{short_digest(report.observed.get(ident))} |"
            )
            if clean is not None:
                row += (
                    f" {_cell(clean.get(ident, 'missing'))} | "
                    f"{short_digest((report.clean_observed or {}).get(ident))} |"
                )
            for mark in _marks(report).get(ident, ()):
                row += f" {mark} |"
            out.append(row)
    out.extend(_markdown_failing(report))
    if report.unsealed:
        out += ["", f"Workspace run: {_cell(report.unsealed)}"]
    if report.clean_boundary is not None:
        out += ["", f"Clean run sealed by: {_cell(report.clean_boundary or 'nothing beyond Bazel sandboxing')}"]
    if report.spec_changes:
        out += ["", "### Spec changes (merge base -> HEAD)", "", "```"]
        out.extend(_fenced(line) for line in report_lines(report.spec_changes))
        out.append("```")
    if report.violations:
        out += ["", "### Violations", ""]
        out.extend(f"- {_cell(v.line())}" for v in report.violations)
    if report.notes:
        out += ["", "### Notes", ""]
        out.extend(f"- {_cell(n)}" for n in report.notes)
    return "\n".join(out)


def _fenced(line: str) -> str:
    """A line inside a fenced code block: escaped (`text.visible`), with no ``` to end the block."""
    return visible(line).replace("```", "'''")


def _markdown_failing(report: Report) -> list[str]:
    """The Markdown section of the failing samples (`failing_blocks`), or [] when there are none."""
    blocks = failing_blocks(report)
    if not blocks:
        return []
    out = ["", "### Failing samples (indexes count from 0)"]
    for heading, failing in blocks:
        out += ["", f"{_cell(heading)}: {failing.count} failing sample(s)", "", "```"]
        out.extend(_fenced(line) for line in failing.lines())
        out.append("```")
    return out


# The classname of the per-id testcases of `junit_xml`.
INVARIANT_CLASS = "oracle_gate.invariants"


def junit_xml(report: Report) -> bytes:
    """JUnit XML of `report` (a `findings.Report`), UTF-8 with an XML declaration and a trailing newline.

    Two testsuites: `oracle-gate`, one testcase per check of the gate (`classname="oracle-gate"`,
    named after the check), failed with every violation's line when the check failed; and, when
    the report names invariant ids, `oracle_gate.invariants`, one testcase per id (`invariant_case`).
    Every text is escaped (`text.visible`), so ids, messages and inputs from the change cannot
    break the XML or add a line. Raises nothing.
    """
    root = ET.Element("testsuites")
    failures = sum(1 for c in report.checks if not c.ok)
    suite = ET.SubElement(
        root, "testsuite", name="oracle-gate", tests=str(len(report.checks)), failures=str(failures), errors="0"
    )
    for check in report.checks:
        case = ET.SubElement(suite, "testcase", classname="oracle-gate", name=visible(check.name))
        if not check.ok:
            lines = [visible(v.line()) for v in check.violations]
            failure = ET.SubElement(case, "failure", message=visible(check.detail))
            failure.text = "\n".join(lines)
        elif check.not_run:
            ET.SubElement(case, "skipped", message=visible(check.detail))
        else:
            ET.SubElement(case, "system-out").text = visible(check.detail)
    ids = _junit_ids(report)
    if ids:
        cases = [invariant_case(report, ident) for ident in ids]
        node = ET.SubElement(
            root,
            "testsuite",
            name=INVARIANT_CLASS,
            tests=str(len(cases)),
            failures=str(sum(1 for c in cases if c.find("failure") is not None)),
            errors=str(sum(1 for c in cases if c.find("error") is not None)),
        )
        node.extend(cases)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def _junit_ids(report: Report) -> list[str]:
    """The ids of the per-id testcases: those that needed an outcome and those the clean run
    reported; when the outcomes were not run, the ids of the rows the report names."""
    ids = set(report.invariants) | set(report.clean_outcomes or {})
    if not ids and any(c.detail == NOT_RUN for c in report.checks):
        ids = set(report.sources)
    return sorted(ids)


def invariant_case(report: Report, ident: str) -> ET.Element:
    """The JUnit testcase of one invariant id of `report`: `classname` INVARIANT_CLASS, named by the id.

    Properties: `outcome` (passed, failed, error, skipped or missing), `observation_sha256`, the
    oracle file (`oracle_file`) when known, and with a clean run `clean_outcome` and
    `clean_observation_sha256`; `system-out` repeats the digests. It passes when the id passed (in
    both runs, with the same digest, when there was a clean run); it has a `failure` when the
    invariant failed (its message the first failing sample, its text the failing samples'
    lines) or the runs disagree, and an `error` when it has no executed outcome. Raises nothing.
    """
    found = report.observed.get(ident)
    clean = (report.clean_observed or {}).get(ident) if report.clean_outcomes is not None else None
    case = ET.Element("testcase", classname=INVARIANT_CLASS, name=visible(ident))
    props = {
        "outcome": found.outcome if found is not None else "missing",
        "observation_sha256": found.digest if found is not None else "",
    }
    if ident in report.sources:
        props["oracle_file"] = report.sources[ident]
    if report.clean_outcomes is not None:
        props["clean_outcome"] = clean.outcome if clean is not None else "missing"
        props["clean_observation_sha256"] = clean.digest if clean is not None else ""
    node = ET.SubElement(case, "properties")
    for name, value in props.items():
        ET.SubElement(node, "property", name=name, value=visible(value))
    problem = _case_problem(report, found, clean)
    if problem is not None:
        tag, message, lines = problem
        element = ET.SubElement(case, tag, message=visible(message))
        element.text = "\n".join(visible(line) for line in lines) or None
    ET.SubElement(case, "system-out").text = " ".join(
        f"{name}={visible(props[name])}" for name in ("observation_sha256", "clean_observation_sha256") if name in props
    )
    return case


def _case_problem(report: Report, found: Observed | None, clean: Observed | None) -> tuple[str, str, list[str]] | None:
    """(element, message, text lines) of a per-id testcase that did not pass, or None when it passed."""
    if found is None:
        why = "not run" if any(c.detail == NOT_RUN for c in report.checks) else "the oracle test did not report it"
        return "error", f"no outcome: {why}", []
    if found.outcome not in EXECUTED:
        return "error", f"{found.outcome}, not executed; that is not coverage", []
    if found.outcome == FAILED:
        return "failure", found.message or "failed", found.failing.lines()
    if report.clean_outcomes is None:
        return None
    if clean is None or clean.outcome != PASSED:
        outcome = clean.outcome if clean is not None else "missing"
        lines = clean.failing.lines() if clean is not None and clean.outcome == FAILED else []
        message = f"clean run: {outcome}" + (f": {clean.message}" if clean is not None and clean.message else "")
        return "failure", message, lines
    if found.digest and clean.digest and found.digest != clean.digest:
        return "failure", "the clean run's observation digest differs from the workspace run's", []
    return None
