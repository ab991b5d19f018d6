"""JUnit results: id -> outcome, order-free, hostname- and time-free; only `[<id>]` names count."""

from __future__ import annotations

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.results import load_results, parse_junit


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
        load_results([str(tmp_path)])
