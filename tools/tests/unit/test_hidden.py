"""Hidden samples without Bazel: the row field, the store, the pin check's hidden views, the quiet
hidden caller, the judge's one word per row, and `check`'s plan and verdict."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tools.oracle_gate.actions.judge import hidden_outcomes, to_junit
from tools.oracle_gate.actions.pin_check import main as pin_check
from tools.oracle_gate.approval.policy import HIDDEN_OPTIONAL, HIDDEN_REQUIRED, parse_policy
from tools.oracle_gate.check.hidden import judge, plan, views, words
from tools.oracle_gate.errors import GateError, OracleError
from tools.oracle_gate.runs.hidden_phase import HiddenRun
from tools.oracle_gate.runs.results import Observed, read_result
from tools.oracle_gate.spec.judgement import Judgement
from tools.oracle_gate.spec.schema import HIDDEN_INPUTS, check_blob_path, parse_oracle
from tools.oracle_gate.suite.hidden_store import STORE_VARIABLE, add, check_folder, fetch
from tools.oracle_gate.suite.spec_changes import spec_changes
from tools.testing.gitrepo import POLICY, blob_bytes, default_rows, junit, leaks, oracle_toml

ACTIONS = Path(__file__).resolve().parents[2] / "oracle_gate" / "actions"
# Inputs only the hidden blob holds; the tests look for any echo of them.
HIDDEN = [{"args": [40001, 2], "expected": 40003}, {"args": [50002, 3], "expected": 50005}]
HIDDEN_BYTES = blob_bytes(HIDDEN)
DIGEST = hashlib.sha256(HIDDEN_BYTES).hexdigest()


def rows(**extra):
    found = default_rows()
    found[2].update(extra)  # add_table: exact_table on shop.calc:add
    return found


def problems_of(**extra):
    oracle = parse_oracle(oracle_toml(rows(**extra)).encode(), "oracles/shop.toml", ["shop"])
    return [str(p) for p in oracle.problems], oracle


def test_a_row_names_its_hidden_blob_by_digest_and_the_field_is_checked():
    found, oracle = problems_of(hidden_sha256=DIGEST)
    assert found == [] and oracle.invariants[2].hidden_sha256 == DIGEST
    assert "field hidden_sha256: must be 64 lowercase hex digits" in problems_of(hidden_sha256=DIGEST.upper())[0][0]
    same = problems_of(hidden_sha256=rows()[2]["blob_sha256"])[0]
    assert "is the visible blob's own digest" in same[0]
    agrees = [dict(r) for r in default_rows()]
    agrees[0] = {
        "id": "by_ref",
        "entry": "shop.calc:add",
        "kind": "agrees",
        "reference": "oracles.reference.r:f",
        "blob": "oracles/blobs/bound.json",
        "blob_sha256": agrees[0]["blob_sha256"],
        "hidden_sha256": DIGEST,
        "generate": {"count": 2, "a": {"int": [0, 1]}, "b": {"int": [0, 1]}},
    }
    oracle = parse_oracle(oracle_toml(agrees).encode(), "oracles/shop.toml", ["shop"])
    assert any("field hidden_sha256: is not allowed for kind 'agrees'" in str(p) for p in oracle.problems)


def test_no_row_may_point_its_blob_into_the_hidden_folder():
    assert "only the gate's hidden phase fills" in check_blob_path(f"oracles/blobs/_hidden/{DIGEST}.json")
    assert check_blob_path("oracles/blobs/_hiddenish.json") is None


def test_a_committed_file_in_the_hidden_folder_is_exit_5(project, gate, tmp_path, all_passed):
    project.write(HIDDEN_INPUTS, HIDDEN_BYTES)
    project.commit("plant a hidden blob")
    code, out, err = gate(
        "--repo", str(project.path), "check", "--base", "HEAD", "--results", junit(tmp_path, all_passed)
    )
    assert code == 5 and f"[5] {HIDDEN_INPUTS}: is in oracles/blobs/_hidden/" in out, out + err


def test_the_policy_says_whether_hidden_samples_are_required():
    assert parse_policy(POLICY.encode()).hidden == HIDDEN_OPTIONAL
    assert parse_policy((POLICY + '\nhidden = "required"\n').encode()).hidden == HIDDEN_REQUIRED
    with pytest.raises(OracleError, match="field hidden: must be 'optional' or 'required'"):
        parse_policy((POLICY + '\nhidden = "yes"\n').encode())


def test_the_store_verifies_names_refuses_links_and_lives_outside_the_repository(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    assert add(str(store), HIDDEN_BYTES) == (DIGEST, True)
    assert add(str(store), HIDDEN_BYTES) == (DIGEST, False)
    assert fetch(str(store), [DIGEST]).blobs == {DIGEST: HIDDEN_BYTES}
    other = "a" * 64
    (store / other).write_bytes(HIDDEN_BYTES)  # bytes that are not the name's
    linked = "b" * 64
    (tmp_path / "elsewhere").write_bytes(HIDDEN_BYTES)
    (store / linked).symlink_to(tmp_path / "elsewhere")
    got = fetch(str(store), [other, linked, "c" * 64])
    assert got.blobs == {} and got.missing == ["c" * 64]
    assert any("its bytes have sha256 " + DIGEST in p for p in got.problems)
    assert any(p.endswith("is a symlink; the store holds regular files only") for p in got.problems)
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    with pytest.raises(GateError, match="lies inside the repository"):
        check_folder(str(repo / "sub"), str(repo))
    (tmp_path / "link").symlink_to(store)
    with pytest.raises(GateError, match="is a symlink"):
        check_folder(str(tmp_path / "link"), str(repo))
    with pytest.raises(GateError, match="cannot read it"):
        check_folder(str(tmp_path / "missing"), str(repo))


def _pin_check_args(tmp_path: Path, hidden: bool) -> tuple[list[str], Path]:
    blobs = tmp_path / "oracles" / "blobs"
    blobs.mkdir(parents=True)
    samples = {
        "bound": [{"a": 1, "b": 2}, {"a": 0, "b": 0}],
        "idem": [{"state": {"n": 1}, "k": "x"}],
        "table": [{"args": [1, 2], "expected": 3}],
    }
    args = []
    for name, value in samples.items():
        (blobs / f"{name}.json").write_bytes(blob_bytes(value))
        args += ["--blob", f"oracles/blobs/{name}.json={blobs / (name + '.json')}"]
    if hidden:
        (tmp_path / HIDDEN_INPUTS).parent.mkdir(parents=True)
        (tmp_path / HIDDEN_INPUTS).write_text(json.dumps(_split()[0]))
        args += ["--blob", f"{HIDDEN_INPUTS}={tmp_path / HIDDEN_INPUTS}"]
    toml = tmp_path / "shop.toml"
    toml.write_text(oracle_toml(rows(hidden_sha256=DIGEST)))
    views = tmp_path / "views"
    views.mkdir()
    args += [
        "--oracle",
        f"oracles/shop.toml={toml}",
        "--out",
        str(views / "index.json"),
        "--inputs",
        str(views / "inputs.json"),
        "--expectations",
        str(views / "expectations.json"),
        "--hidden-inputs",
        str(views / "hidden_inputs.json"),
        "--hidden-expectations",
        str(views / "hidden_expectations.json"),
    ]
    return args, views


def _split():
    """The gate's own split of the hidden blob (hidden.views): (inputs view, expectations view)."""
    got = plan(_invariants(hidden_sha256=DIGEST), HIDDEN_OPTIONAL, {}, "/nonexistent", clean=True, remote=False)
    got.blobs = {DIGEST: HIDDEN_BYTES}
    inputs, expectations, invalid = views(got, ["shop"])
    assert invalid == []
    return inputs, expectations


def test_the_gate_splits_a_hidden_blob_and_only_the_inputs_leave_its_process():
    inputs, expectations = _split()
    assert [r["samples"] for r in inputs["rows"]] == [[[40001, 2], [50002, 3]]]
    assert "40003" not in json.dumps(inputs) and "50005" not in json.dumps(inputs)
    assert [r["expected"] for r in expectations["rows"]] == [[40003, 50005]]
    # A hidden blob of the wrong shape is exit 5 naming the row and field, quoting nothing of it.
    got = plan(_invariants(hidden_sha256=DIGEST), HIDDEN_OPTIONAL, {}, "/nonexistent", clean=True, remote=False)
    got.blobs = {DIGEST: blob_bytes([{"args": [40001], "nope": 1}])}
    _, _, invalid = views(got, ["shop"])
    assert [(v.code, v.id) for v in invalid] == [(5, "add_table")] and "40001" not in invalid[0].message
    assert "field hidden_sha256" in invalid[0].message


def test_the_pin_check_passes_the_gate_s_hidden_inputs_and_holds_no_expected_value(tmp_path):
    args, views_dir = _pin_check_args(tmp_path, hidden=True)
    assert pin_check(args) == 0
    visible = (views_dir / "inputs.json").read_text() + (views_dir / "expectations.json").read_text()
    assert "40001" not in visible and "40003" not in visible
    hidden_inputs = json.loads((views_dir / "hidden_inputs.json").read_text())
    assert [r["samples"] for r in hidden_inputs["rows"]] == [[[40001, 2], [50002, 3]]]
    everything = "".join(p.read_text() for p in views_dir.iterdir())
    assert "40003" not in everything and "50005" not in everything  # expected values: the gate's process only
    assert json.loads((views_dir / "hidden_expectations.json").read_text()) == {
        "schema": 1,
        "rows": [],
        "absent": ["add_table"],
    }


def test_the_pin_check_refuses_any_other_file_in_the_hidden_folder(tmp_path):
    args, _ = _pin_check_args(tmp_path, hidden=True)
    stray = tmp_path / "oracles" / "blobs" / "_hidden" / (DIGEST + ".json")
    stray.write_bytes(HIDDEN_BYTES)
    assert pin_check([*args, "--blob", f"oracles/blobs/_hidden/{DIGEST}.json={stray}"]) == 5
    (tmp_path / HIDDEN_INPUTS).write_text("[1, 2]")
    assert pin_check(args) == 5


def test_without_the_blob_the_row_s_hidden_part_is_absent(tmp_path):
    args, views_dir = _pin_check_args(tmp_path, hidden=False)
    assert pin_check(args) == 0
    assert json.loads((views_dir / "hidden_inputs.json").read_text())["rows"] == []
    assert json.loads((views_dir / "hidden_expectations.json").read_text())["absent"] == ["add_table"]
    assert hidden_outcomes(json.loads((views_dir / "hidden_expectations.json").read_text()), None) == {
        "add_table": "clean run only"
    }


def _hidden_run(tmp_path: Path, body: str) -> tuple[dict[str, str], subprocess.CompletedProcess[str], Path]:
    args, views_dir = _pin_check_args(tmp_path, hidden=True)
    assert pin_check(args) == 0
    views = views_dir
    prod = tmp_path / "prod" / "shop"
    prod.mkdir(parents=True)
    (prod / "__init__.py").write_text("")
    (prod / "calc.py").write_text(body)
    empty = views / "generated.json"
    empty.write_text('{"rows":{},"salt":"","schema":1}\n')
    out, log = views / "hidden_observations.json", views / "hidden.log"
    proc = subprocess.run(
        [
            sys.executable,
            "-S",
            str(ACTIONS / "observe.py"),
            "--inputs",
            str(views / "hidden_inputs.json"),
            "--generated",
            str(empty),
            "--out",
            str(out),
            "--log",
            str(log),
            "--quiet",
        ],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(prod.parent), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
    )
    observations = json.loads(out.read_text()) if out.exists() else None
    return words(_split()[1], None if observations is None else [observations]), proc, log


LOUD = """
import os, sys
def add(a, b):
    print("ECHO", a, b)
    print("ECHO", a, b, file=sys.stderr)
    os.write(2, b"ECHO %d\\n" % a)
    return a + b + {WRONG}
def norm(state, k):
    return state
"""


def test_the_hidden_caller_shows_nothing_and_the_judge_says_one_word(tmp_path):
    right, proc, log = _hidden_run(tmp_path / "right", LOUD.replace("{WRONG}", "0"))
    assert right == {"add_table": "passed"}
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "" and log.read_text() == ""
    wrong, proc, log = _hidden_run(tmp_path / "wrong", LOUD.replace("{WRONG}", "1 if a > 45000 else 0"))
    assert wrong == {"add_table": "failed"}
    assert proc.stdout == "" and proc.stderr == "" and log.read_text() == ""


def test_the_junit_file_holds_the_word_and_nothing_of_the_samples(tmp_path):
    judged = [Judgement("add_table", True, digest="d" * 64)]
    data = to_junit(judged, "", "t", {"add_table": "failed"})
    case = ET.fromstring(data).find(".//testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["hidden"] == "failed" and case.find("failure") is None
    assert read_result(data, "t.xml").observed["add_table"].hidden == "failed"
    # Any other word a forged file holds is a failed hidden part.
    forged = data.replace(b'value="failed"', b'value="passed please"')
    assert read_result(forged, "t.xml").observed["add_table"].hidden == "failed"


def _invariants(**extra):
    return problems_of(**extra)[1].invariants


def test_the_plan_gives_the_clean_run_only_verified_blobs_and_says_why_not(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    add(str(store), HIDDEN_BYTES)
    repo = tmp_path / "repo"
    repo.mkdir()
    invs = _invariants(hidden_sha256=DIGEST)
    env = {STORE_VARIABLE: str(store)}
    got = plan(invs, HIDDEN_OPTIONAL, env, str(repo), clean=True, remote=False)
    assert got.blobs == {DIGEST: HIDDEN_BYTES} and got.delivered == ["add_table"] and not got.violations
    unset = plan(invs, HIDDEN_OPTIONAL, {}, str(repo), clean=True, remote=False)
    assert unset.blobs == {} and unset.notes == [f"hidden samples: not run ({STORE_VARIABLE} is not set): add_table"]
    required = plan(invs, HIDDEN_REQUIRED, {}, str(repo), clean=True, remote=False)
    assert [v.code for v in required.violations] == [1]
    remote = plan(invs, HIDDEN_REQUIRED, env, str(repo), clean=True, remote=True)
    assert remote.blobs == {} and "does not run hidden samples" in remote.violations[0].message
    workspace = plan(invs, HIDDEN_REQUIRED, env, str(repo), clean=False, remote=False)
    assert (
        workspace.blobs == {}
        and not workspace.violations
        and workspace.notes == ["hidden samples: clean run only (add_table)"]
    )
    (store / DIGEST).write_bytes(HIDDEN_BYTES + b" ")
    assert (
        "its bytes have sha256"
        in plan(invs, HIDDEN_REQUIRED, env, str(repo), clean=True, remote=False).violations[0].message
    )
    # A named store that cannot be used fails closed in either setting: a change's action may have
    # taken the file from it (docs/threat-model.md, "Hidden samples").
    for setting in (HIDDEN_OPTIONAL, HIDDEN_REQUIRED):
        wrong = plan(invs, setting, env, str(repo), clean=True, remote=False)
        assert [v.code for v in wrong.violations] == [1] and "its bytes have sha256" in wrong.violations[0].message
    os.remove(store / DIGEST)
    for setting in (HIDDEN_OPTIONAL, HIDDEN_REQUIRED):
        missing = plan(invs, setting, env, str(repo), clean=True, remote=False)
        assert [(v.code, v.id) for v in missing.violations] == [(1, "add_table")], missing
        assert "has no file" in missing.violations[0].message and not missing.blobs
    gone = plan(invs, HIDDEN_OPTIONAL, {STORE_VARIABLE: str(tmp_path / "gone")}, str(repo), clean=True, remote=False)
    assert [v.code for v in gone.violations] == [1] and "cannot read it" in gone.violations[0].message


def test_the_verdict_names_only_the_row(tmp_path):
    invs = _invariants(hidden_sha256=DIGEST)
    got = plan(invs, HIDDEN_OPTIONAL, {}, str(tmp_path), clean=True, remote=False)
    got.blobs = {DIGEST: HIDDEN_BYTES}
    failed, _ = judge(got, {"add_table": "failed"}, {"add_table": Observed("passed")})
    assert [(v.code, v.path, v.id) for v in failed] == [(4, "oracles/shop.toml", "add_table")]
    assert "40001" not in failed[0].message and "not shown" in failed[0].message
    passed, detail = judge(got, {"add_table": "passed"}, {})
    assert passed == [] and detail.startswith("1 of 1 row(s) passed")
    lost, _ = judge(got, {}, {})
    assert lost[0].code == 1 and "did not judge it" in lost[0].message
    leaked, _ = judge(got, {"add_table": "passed"}, {"add_table": Observed("passed", hidden="passed")})
    assert leaked[0].code == 1 and "only the gate's hidden phase may hold them" in leaked[0].message


def _observations(*values):
    """A hidden caller's observations document for add_table: one reply with `values` as results."""
    reply = {"id": "add_table", "results": [{"value": v} for v in values]}
    return {"schema": 1, "salt": "", "rows": [{"id": "add_table", "reply": json.dumps(reply)}]}


def test_the_words_fail_a_row_no_observation_holds_and_every_row_of_a_phase_that_did_not_end():
    _, expectations = _split()
    right, wrong = _observations(40003, 50005), _observations(40003, 50004)
    assert words(expectations, [right]) == {"add_table": "passed"}
    assert words(expectations, [wrong]) == {"add_table": "failed"}
    assert words(expectations, [right, wrong]) == {"add_table": "failed"}
    assert words(expectations, []) == {"add_table": "failed"}
    assert words(expectations, [None]) == {"add_table": "failed"}
    assert words(expectations, None) == {"add_table": "failed"}


def test_changing_or_removing_a_hidden_blob_weakens_the_claim():
    base = parse_oracle(oracle_toml(rows(hidden_sha256=DIGEST)).encode(), "oracles/shop.toml")
    for extra, mark in (({}, "hidden samples removed"), ({"hidden_sha256": "e" * 64}, "hidden samples changed")):
        head = parse_oracle(oracle_toml(rows(**extra)).encode(), "oracles/shop.toml")
        from tools.oracle_gate.suite.loader import Oracles

        changes = spec_changes(Oracles(policy=None, files=[base]), Oracles(policy=None, files=[head]))
        assert [c.marks for c in changes] == [(mark,)] and changes[0].weakens


@pytest.mark.parametrize("fmt", ["text", "json", "github", "markdown"])
def test_a_failed_hidden_part_is_exit_4_naming_only_the_row_in_every_format(gate, project, monkeypatch, tmp_path, fmt):
    import tools.oracle_gate.check as check_module
    from tools.oracle_gate.runs.bazel_run import BazelRun

    store = tmp_path / "store"
    store.mkdir()
    add(str(store), HIDDEN_BYTES)
    project.git("checkout", "-q", "main")
    project.write("oracles/shop.toml", oracle_toml(rows(hidden_sha256=DIGEST)))
    project.write_manifest()
    project.commit("add_table: hidden samples")
    project.git("checkout", "-q", "-B", "change")
    given = []
    passed = {i: Observed("passed", "d" * 64) for i in ("sum_in_range", "norm_is_idempotent")}
    monkeypatch.setattr(
        check_module,
        "default_workspace_runner",
        lambda salt, _repo, *_: (
            lambda *_a: BazelRun(
                observed={**passed, "add_table": Observed("passed", "d" * 64, hidden="clean run only")}
            )
        ),
    )
    monkeypatch.setattr(
        check_module,
        "default_clean_runner",
        lambda salt, *_: (
            lambda *_a: BazelRun(
                observed={**passed, "add_table": Observed("passed", "d" * 64, hidden="clean run only")}
            )
        ),
    )
    # The caller got the inputs only and answered wrong on the second sample.
    wrong = _observations(40003, 1)

    def hidden_runner(repo, head, oracles_commit, inputs_view, environ, *, guarded):
        given.append(json.dumps(inputs_view))
        assert os.path.realpath(store) in guarded
        return HiddenRun(observations=[wrong])

    monkeypatch.setattr(check_module, "default_hidden_runner", hidden_runner)
    junit_file = tmp_path / "report.xml"
    code, out, err = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--clean",
        "--format",
        fmt,
        "--junit",
        str(junit_file),
        environ={STORE_VARIABLE: str(store)},
    )
    assert code == 4, out + err
    assert len(given) == 1 and "40001" in given[0] and "40003" not in given[0] and "50005" not in given[0]
    shown = out.replace("\\_", "_")  # Markdown escapes underscores
    assert "add_table" in shown and "failed on its hidden samples" in shown
    for text in (out, err, junit_file.read_text()):
        for secret in ("40001", "50002", "40003", "50005"):
            assert not leaks(secret, text), (fmt, secret)
    # Without the store, the same check says the hidden part did not run, and passes.
    code, out, _ = gate(
        "--repo", str(project.path), "check", "--base", "main", "--clean", "--format", fmt, "--junit", str(junit_file)
    )
    assert code == 0 and "ORACLE_GATE_HIDDEN_STORE is not set" in out.replace("\\_", "_"), out
    # ... and says so where `ok` would stand: never `ok` for hidden samples that did not run.
    not_run = {
        "text": "  NOT RUN  hidden samples",
        "github": "  NOT RUN  hidden samples",
        "markdown": "| hidden samples | **NOT RUN** |",
    }
    if fmt == "json":
        doc = json.loads(out)
        assert [c["not_run"] for c in doc["checks"] if c["name"] == "hidden samples"] == [True], out
        assert doc["hidden_not_run"] == ["add_table"]
    else:
        assert not_run[fmt] in out, out
        assert re.search(r"add.?_table .*hidden samples: NOT RUN", out), out
    assert '<skipped message="1 row(s) with hidden samples: not run' in junit_file.read_text()
