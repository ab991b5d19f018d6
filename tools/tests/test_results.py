"""JUnit results: id -> outcome, order-free, hostname- and time-free; only `[<id>]` names count."""

from __future__ import annotations

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.results import load_observed, read_result


def parse_junit(data: bytes, source: str) -> dict[str, str]:
    """id -> outcome of one JUnit XML document, through the gate's reader."""
    return {ident: found.outcome for ident, found in read_result(data, source).observed.items()}


def xml(cases: str, host: str = "a", stamp: str = "2026-01-01T00:00:00") -> bytes:
    return (f'<testsuites><testsuite name="pytest" hostname="{host}" timestamp="{stamp}">{cases}'
            "</testsuite></testsuites>").encode()


def test_outcomes():
    data = xml('<testcase name="test_invariant[a]"/>'
               '<testcase name="test_invariant[b]"><failure/></testcase>'
               '<testcase name="test_invariant[c]"><error/></testcase>'
               '<testcase name="test_invariant[d]"><skipped/></testcase>'
               '<testcase name="test_other"/>'
               '<testcase name="test_invariant[Not-An-Id]"/>')
    assert parse_junit(data, "x") == {"a": "passed", "b": "failed", "c": "error", "d": "skipped"}


def test_worst_outcome_wins_for_a_repeated_id():
    data = xml('<testcase name="t[a]"/><testcase name="u[a]"><failure/></testcase><testcase name="v[a]"/>')
    assert parse_junit(data, "x") == {"a": "failed"}


def test_bazel_fallback_xml_has_no_ids():
    # What Bazel writes when a test never writes $XML_OUTPUT_FILE: one case named after the target.
    data = b'<testsuites><testsuite name="harness/invariants_test"><testcase name="harness/invariants_test" status="run"/></testsuite></testsuites>'
    assert parse_junit(data, "x") == {}


def test_entities_are_refused():
    data = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites/>'
    with pytest.raises(GateError, match="declares a DTD or entities"):
        parse_junit(data, "x")


def test_directory_without_test_xml(tmp_path):
    with pytest.raises(GateError, match="holds no test.xml"):
        load_observed([str(tmp_path)])


def test_a_name_with_a_trailing_newline_is_not_an_id():
    assert parse_junit(xml('<testcase name="t[a]&#10;"/>'), "x") == {}


@pytest.mark.parametrize(("attrs", "outcome"), [
    ('status="run"', "passed"), ('status="notrun"', "skipped"), ('status="failed"', "failed"),
    ('result="error"', "error"), ('status="weird"', "failed"),
])
def test_status_attributes(attrs, outcome):
    assert parse_junit(xml(f'<testcase name="t[a]" {attrs}/>'), "x") == {"a": outcome}


def test_namespaced_failure_counts():
    data = xml('<testcase xmlns:j="urn:x" name="t[a]"><j:failure/></testcase>')
    assert parse_junit(data, "x") == {"a": "failed"}


def test_nested_testcases_are_refused():
    with pytest.raises(GateError, match="nests a testcase"):
        parse_junit(xml('<testcase name="t[a]"><testcase name="u[b]"><failure/></testcase></testcase>'), "x")


def test_utf16_doctype_is_refused():
    data = '<?xml version="1.0" encoding="utf-16"?><!DOCTYPE x [<!ENTITY a "b">]><testsuites/>'.encode("utf-16")
    with pytest.raises(GateError, match="declares a DTD"):
        parse_junit(data, "x")
