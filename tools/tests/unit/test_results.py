"""JUnit results: id -> outcome, order-free, hostname- and time-free; only `[<id>]` names count."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.results import Observed, load_observed, logged_results, read_result, to_junit
from tools.oracle_gate.spec.judgement import FailingSample, FailingSamples
from tools.testing.gitrepo import IDS, junit


def parse_junit(data: bytes, source: str) -> dict[str, str]:
    """id -> outcome of one JUnit XML document, through the gate's reader."""
    return {ident: found.outcome for ident, found in read_result(data, source).observed.items()}


def xml(cases: str, host: str = "a", stamp: str = "2026-01-01T00:00:00") -> bytes:
    return (
        f'<testsuites><testsuite name="pytest" hostname="{host}" timestamp="{stamp}">{cases}</testsuite></testsuites>'
    ).encode()


def test_outcomes():
    data = xml(
        '<testcase name="test_invariant[a]"/>'
        '<testcase name="test_invariant[b]"><failure/></testcase>'
        '<testcase name="test_invariant[c]"><error/></testcase>'
        '<testcase name="test_invariant[d]"><skipped/></testcase>'
        '<testcase name="test_other"/>'
        '<testcase name="test_invariant[Not-An-Id]"/>'
    )
    assert parse_junit(data, "x") == {"a": "passed", "b": "failed", "c": "error", "d": "skipped"}


def test_worst_outcome_wins_for_a_repeated_id():
    data = xml('<testcase name="t[a]"/><testcase name="u[a]"><failure/></testcase><testcase name="v[a]"/>')
    assert parse_junit(data, "x") == {"a": "failed"}


def test_bazel_fallback_xml_has_no_ids():
    # What Bazel writes when a test never writes $XML_OUTPUT_FILE: one case named after the target.
    data = (
        b'<testsuites><testsuite name="harness/invariants_test"><testcase '
        b'name="harness/invariants_test" status="run"/></testsuite></testsuites>'
    )
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


@pytest.mark.parametrize(
    ("attrs", "outcome"),
    [
        ('status="run"', "passed"),
        ('status="notrun"', "skipped"),
        ('status="failed"', "failed"),
        ('result="error"', "error"),
        ('status="weird"', "failed"),
    ],
)
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


# Test-log directories: every attempt, shard and run is read, and an unknown layout is exit 1. The
# layouts are the ones Bazel 4.2.3 writes (tools/tests/e2e/test_testlog_layout.py checks them
# against real Bazel runs).


def case(ident: str, outcome: str) -> str:
    inner = {
        "passed": "",
        "failed": '<failure message="boom"/>',
        "error": '<error message="x"/>',
        "skipped": "<skipped/>",
    }[outcome]
    return f'<testcase name="invariant[{ident}]">{inner}</testcase>'


def write(path: Path, *cases: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>")


def passing(tmp_path: Path) -> Path:
    """A testlogs directory where the oracle test passed every id on its final attempt, with the
    logs and undeclared-output folders Bazel writes beside test.xml."""
    target = tmp_path / "testlogs/oracles/oracle_test"
    write(target / "test.xml", *(case(i, "passed") for i in IDS))
    for name in ("test.log", "test.cache_status"):
        (target / name).write_text("")
    for name in ("test.outputs", "test.outputs_manifest", "test.raw_splitlogs"):
        (target / name).mkdir()
    return tmp_path / "testlogs"


def test_a_failed_attempt_before_a_passing_retry_is_a_failed_outcome(tmp_path):
    logs = passing(tmp_path)
    attempts = logs / "oracles/oracle_test/test_attempts"
    write(attempts / "attempt_1.xml", case(IDS[0], "failed"), *(case(i, "passed") for i in IDS[1:]))
    (attempts / "attempt_1.log").write_text("")
    (attempts / "attempt_1.outputs").mkdir()
    observed = load_observed([str(logs)]).observed
    assert observed[IDS[0]].outcome == "failed"
    assert observed[IDS[0]].source == str(attempts / "attempt_1.xml")
    assert {observed[i].outcome for i in IDS[1:]} == {"passed"}


def test_check_and_compare_read_the_failed_attempt(gate, project, tmp_path):
    logs = passing(tmp_path)
    attempt = logs / "oracles/oracle_test/test_attempts/attempt_1.xml"
    write(attempt, case(IDS[0], "failed"))
    code, out, err = gate("--repo", str(project.path), "check", "--base", "main", "--results", str(logs))
    assert code == 4, out + err
    assert f"[4] oracles/shop.toml {IDS[0]}: failed: the invariant does not hold: boom (from {attempt})" in out
    code, out, _ = gate("compare", str(logs), junit(tmp_path, {i: "passed" for i in IDS}))
    assert code == 6, out
    assert f"A: {attempt}" in out


def test_shards_and_runs_are_all_read(tmp_path):
    target = tmp_path / "testlogs/oracles/oracle_test"
    for shard in (1, 2):
        for run in (1, 2):
            outcome = "failed" if (shard, run) == (2, 2) else "passed"
            write(target / f"shard_{shard}_of_2_run_{run}_of_2/test.xml", case(IDS[shard - 1], outcome))
    observed = load_observed([str(tmp_path / "testlogs")]).observed
    assert observed[IDS[0]].outcome == "passed"
    assert observed[IDS[1]].outcome == "failed"
    assert observed[IDS[1]].source.endswith("shard_2_of_2_run_2_of_2/test.xml")


def test_undeclared_outputs_are_never_results(tmp_path):
    logs = passing(tmp_path)
    forged = logs / "oracles/oracle_test/test.outputs/oracles/x/test.xml"
    write(forged, case("forged", "passed"))
    write(logs / "oracles/oracle_test/test_attempts/attempt_1.outputs/test.xml", case("forged", "passed"))
    write(logs / "oracles/oracle_test/test_attempts/attempt_1.xml", case(IDS[0], "passed"))
    files = logged_results(str(logs))
    assert all("outputs" not in f[len(str(logs)) :] for f in files)
    assert "forged" not in load_observed([str(logs)]).observed


@pytest.mark.parametrize(
    ("arrange", "words"),
    [
        (lambda t: write(t / "shard_1_of_2/test.xml"), "holds both test.xml and shard_1_of_2/"),
        (lambda t: write(t / "run_1_of_3/test.xml"), "holds both test.xml and run_1_of_3/"),
        (lambda t: write(t / "other.xml"), "is not a file Bazel writes to a test-log directory"),
        (lambda t: write(t / "test_attempts/attempt_x.xml"), "holds 'attempt_x.xml', which Bazel does not write there"),
        (lambda t: write(t / "test_attempts/results.xml"), "holds 'results.xml'"),
        (
            lambda t: (t / "test_attempts").mkdir() or (t / "test_attempts/attempt_2.log").write_text(""),
            "attempt 2 has a log but no attempt_2.xml",
        ),
        (lambda t: (t / "test.xml").unlink() or write(t / "test_attempts/attempt_1.xml"), "has no test.xml beside it"),
        (
            lambda t: (t / "test.xml").unlink() or write(t / "shard_1_of_2/test.xml"),
            "lacks 1 of the 2 shard/run folder(s)",
        ),
        (
            lambda t: (
                (t / "test.xml").unlink() or write(t / "shard_1_of_2/test.xml") or write(t / "shard_2_of_3/test.xml")
            ),
            "shard/run folders of different invocations",
        ),
        (
            lambda t: (
                (t / "test.xml").unlink()
                or write(t / "shard_1_of_2/test.xml")
                or write(t / "shard_2_of_2/test.xml")
                or write(t / "shard_1_of_2_run_1_of_1/test.xml")
            ),
            "shard/run folders of different invocations",
        ),
        (
            lambda t: [(t / "test.xml").rename(t / "real.log"), (t / "test.xml").symlink_to("real.log")],
            "is not a regular file",
        ),
        (lambda t: (t / "link").symlink_to("/tmp"), "holds a symbolic link 'link'"),
    ],
)
def test_a_layout_the_gate_does_not_understand_is_exit_1(gate, tmp_path, arrange, words):
    logs = passing(tmp_path)
    arrange(logs / "oracles/oracle_test")
    with pytest.raises(GateError) as err:
        load_observed([str(logs)])
    assert err.value.code == 1
    assert words in str(err.value)
    code, out, errout = gate("compare", str(logs), str(logs))
    assert (code, out) == (1, "")
    assert errout.count("\n") == 1 and words in errout


def test_a_folder_of_results_without_any_test_xml_is_exit_1(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(GateError, match="holds no test.xml"):
        load_observed([str(tmp_path / "empty")])


CRASH = (
    '<testcase name="oracles/oracle_test" '
    'classname="oracles/oracle_test"><error message="exited with error code '
    '134"/></testcase>'
)


@pytest.mark.parametrize(
    "arrange",
    [
        # Bazel's own XML for a crashed or timed-out attempt names the target, not an id.
        lambda t: write(t / "test_attempts/attempt_1.xml", CRASH),
        lambda t: (
            write(t / "test.xml", CRASH) or write(t / "test_attempts/attempt_1.xml", *(case(i, "passed") for i in IDS))
        ),
        lambda t: (
            (t / "test.xml").unlink()
            or write(t / "run_1_of_2/test.xml", *(case(i, "passed") for i in IDS))
            or write(t / "run_2_of_2/test.xml", CRASH)
        ),
    ],
)
def test_a_failure_naming_no_id_fails_every_id_of_its_target(gate, project, tmp_path, arrange):
    logs = passing(tmp_path)
    arrange(logs / "oracles/oracle_test")
    observed = load_observed([str(logs)]).observed
    assert {observed[i].outcome for i in IDS} == {"error"}
    assert "names no invariant" in observed[IDS[0]].message
    code, out, _ = gate("--repo", str(project.path), "check", "--base", "main", "--results", str(logs))
    assert code == 4 and out.splitlines()[-1] == "gate FAILED (exit 4)"
    code, out, _ = gate("compare", str(logs), junit(tmp_path, {i: "passed" for i in IDS}))
    assert code == 6


def test_a_failure_naming_no_id_in_another_target_does_not_touch_these_ids(tmp_path):
    logs = passing(tmp_path)
    write(logs / "oracles/other_test/test.xml", CRASH)
    write(logs / "harness/h_test/test.xml", CRASH)
    observed = load_observed([str(logs)]).observed
    assert {observed[i].outcome for i in IDS} == {"passed"}


@pytest.mark.parametrize(
    ("arrange", "words"),
    [
        (
            lambda t: (t / "test.xml").unlink() or write(t / "run_1_of_2/test.xml") or (t / "run_2_of_2").mkdir(),
            "run_2_of_2/ holds no test.xml",
        ),
        (
            lambda t: (
                (t / "test.xml").unlink()
                or write(t / "run_1_of_2/test.xml")
                or write(t / "run_2_of_2/test.outputs/test.xml", case(IDS[0], "failed"))
            ),
            "run_2_of_2/ holds no test.xml",
        ),
        (
            lambda t: (
                write(t / "test_attempts/attempt_01.xml", case(IDS[0], "failed"))
                or write(t / "test_attempts/attempt_1.xml")
            ),
            "holds 'attempt_01.xml'",
        ),
        (
            lambda t: write(t / "test_attempts/attempt_1.xml") or write(t / "test_attempts/attempt_3.xml"),
            "lacks attempt_2.xml",
        ),
        (lambda t: write(t / "test_attempts/attempt_0.xml"), "holds 'attempt_0.xml'"),
    ],
)
def test_more_layouts_the_gate_does_not_understand(tmp_path, arrange, words):
    logs = passing(tmp_path)
    arrange(logs / "oracles/oracle_test")
    with pytest.raises(GateError, match=None) as err:
        load_observed([str(logs)])
    assert err.value.code == 1 and words in str(err.value)


def test_an_unreadable_folder_is_exit_1_not_skipped(tmp_path, monkeypatch):
    # os.walk skips a folder it cannot list unless told otherwise; here the attempts folder is
    # unreadable (as for a user without permission on it) and holds the only failure.
    logs = passing(tmp_path)
    attempts = logs / "oracles/oracle_test/test_attempts"
    write(attempts / "attempt_1.xml", case(IDS[0], "failed"))
    real_scandir = os.scandir

    def scandir(path=".", *args):
        if os.fspath(path) == str(attempts):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path, *args)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(GateError) as err:
        load_observed([str(logs)])
    assert err.value.code == 1
    assert str(err.value) == f"{attempts}: cannot be read (Permission denied); its results would be missed"


def test_a_target_folder_given_directly_counts(tmp_path):
    logs = passing(tmp_path)
    observed = load_observed([str(logs / "oracles/oracle_test")]).observed
    assert sorted(observed) == sorted(IDS)


# Failing samples travel with a failed id: the judge's `failing_samples` property, read back and
# written again by `to_junit` (clean-run's --out), shown by `compare`; never compared.

FAILING = FailingSamples(
    (
        FailingSample(2, False, "", "[1,-1]", "0", "-1", "result 0 != expected -1"),
        FailingSample(0, True, "s4lt", '{"a":-5}', "-5", "a number in [0, 10]", "result -5 is outside [0, 10]"),
    ),
    14,
    "s4lt",
)


def failed_case(ident: str, failing: FailingSamples = FAILING, digest: str = "d" * 64) -> str:
    value = failing.to_text().replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    return (
        f'<testcase name="invariant[{ident}]"><properties><property name="observation_sha256" value="{digest}"/>'
        f'<property name="failing_samples" value="{value}"/></properties>'
        f'<failure message="sample 2 (0-based): result 0 != expected -1"/></testcase>'
    )


def test_the_failing_samples_of_a_failed_id_are_read_and_written_again():
    found = read_result(xml(failed_case("add_table")), "r.xml").observed["add_table"]
    assert found.failing == FAILING and found.message == "sample 2 (0-based): result 0 != expected -1"
    again = read_result(to_junit({"add_table": found, "kept": Observed("passed", "e" * 64)}, "clean-run"), "o.xml")
    assert again.observed["add_table"].failing == FAILING
    assert again.observed["add_table"].message == found.message and again.observed["kept"].failing == FailingSamples()
    text = ET.fromstring(to_junit({"add_table": found}, "clean-run")).find("./testsuite/testcase/failure").text
    assert text.splitlines() == FAILING.lines() and text.splitlines()[-2] == "and 12 more failing sample(s)"


def test_failing_samples_of_a_passed_id_or_that_do_not_parse_are_ignored():
    passed = failed_case("add_table").replace('<failure message="sample 2 (0-based): result 0 != expected -1"/>', "")
    assert read_result(xml(passed), "r.xml").observed["add_table"].failing == FailingSamples()
    broken = failed_case("add_table", FailingSamples()).replace(
        "&quot;count&quot;:0", "&quot;count&quot;:&quot;x&quot;"
    )
    found = read_result(xml(broken), "r.xml").observed["add_table"]
    assert found.outcome == "failed" and found.failing == FailingSamples()


def test_failing_samples_never_decide_whether_runs_agree(gate, tmp_path):
    other = FailingSamples((FailingSample(3, False, "", "[9]", "1", "2", "result 1 != expected 2"),), 1)
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_bytes(xml(failed_case("add_table")))
    b.write_bytes(xml(failed_case("add_table", other)))
    code, out, _ = gate("compare", str(a), str(b))
    assert code == 0, out
    b.write_bytes(xml(failed_case("add_table", other, digest="f" * 64)))
    code, out, _ = gate("compare", str(a), str(b))
    assert code == 6, out
    lines = out.splitlines()
    at = lines.index("failing samples (indexes count from 0):")
    assert lines[at + 1 : at + 3] == [
        "  add_table (A): 14 failing sample(s)",
        "    sample 2 (0-based): result 0 != expected -1",
    ]
    assert "  add_table (B): 1 failing sample(s)" in lines and "      inputs [9] -> result 1; expected 2" in lines


def test_the_coverage_record_is_read_from_its_property_and_never_compared():
    from tools.oracle_gate.runs.results import differences

    def with_ran(value):
        prop = f'<property name="ran_functions" value="{value}"/>' if value is not None else ""
        return xml(
            f'<testcase name="invariant[a]"><properties><property name="observation_sha256" value="d"/>'
            f"{prop}</properties></testcase>"
        )

    assert read_result(with_ran("shop.calc:add shop:f"), "x").observed["a"].ran == ("shop.calc:add", "shop:f")
    assert read_result(with_ran(""), "x").observed["a"].ran == ()
    assert read_result(with_ran(None), "x").observed["a"].ran is None
    assert read_result(with_ran("shop.calc:add  bad"), "x").observed["a"].ran is None
    # Two runs that agree on outcomes and digests agree, whatever their records say.
    left, right = read_result(with_ran("shop:f"), "x").observed, read_result(with_ran(""), "y").observed
    assert differences(left, right) == []


def test_to_junit_keeps_a_coverage_record():
    observed = {
        "a": Observed("passed", "d", ("s",), ran=("shop:f", "shop:g")),
        "b": Observed("passed", "e"),
        "c": Observed("failed", "f", ran=()),
    }
    back = read_result(to_junit(observed, "suite"), "x").observed
    assert {i: o.ran for i, o in back.items()} == {"a": ("shop:f", "shop:g"), "b": None, "c": ()}
