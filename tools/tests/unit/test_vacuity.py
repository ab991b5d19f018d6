"""vacuity.py and the `vacuity` command: rows run against mutants of their entry by the gate's own
caller and judge; a row that passes on every mutant checks nothing."""

from __future__ import annotations

import json

import pytest

from tools.oracle_gate.authoring.vacuity import mutants, why_no_mutants
from tools.oracle_gate.errors import GateError
from tools.testing.gitrepo import default_rows, make_project, oracle_toml, sha256


@pytest.fixture(autouse=True)
def _runner_without_bazel(monkeypatch):
    # The rows run as the caller action runs them, without Bazel (tools/testing/local_rows.py);
    # the Bazel runner itself runs in tools/testing/adoption.py.
    from tools.oracle_gate.authoring import vacuity
    from tools.testing.local_rows import local_runner

    monkeypatch.setattr(vacuity, "open_runner", local_runner)


SOURCE = (
    "def f(a, b):\n    if a < b and True:\n        return a + 1\n    return a * b\n\n\ndef g():\n    return 0 + 0\n"
)


def test_one_mutant_per_operator_comparison_and_constant_of_the_function_only():
    found = mutants(SOURCE, "f")
    assert sorted(m.description for m in found) == sorted(
        ["Lt -> LtE", "True -> False", "Add -> Sub", "1 -> 2", "Mult -> FloorDiv"]
    )
    add = next(m for m in found if m.description == "Add -> Sub")
    assert add.line == 3 and "return a - 1" in add.source and "return 0 + 0" in add.source  # g untouched


@pytest.mark.parametrize(
    ("source", "name", "message"),
    [
        ("def f(:\n", "f", "cannot parse"),
        ("def f():\n    return 1\n", "h", "no module-level function or class 'h'"),
    ],
)
def test_a_module_that_cannot_be_mutated_is_exit_1(source, name, message):
    with pytest.raises(GateError, match=message):
        mutants(source, name)


def test_a_wide_bound_checks_nothing_and_a_table_kills_its_mutant(tmp_path, gate):
    rows = default_rows(min_=-(10**9), max_=10**9)
    project = make_project(tmp_path / "repo", rows)
    code, out, err = gate("--repo", str(project.path), "vacuity", "--format", "json")
    assert code == 0, err
    report = {r["id"]: r for r in json.loads(out)}
    assert report["sum_in_range"]["vacuous"] and report["sum_in_range"]["missed"] == [
        {"line": 2, "change": "Add -> Sub"}
    ]
    assert report["add_table"] == {
        "id": "add_table",
        "entry": "shop.calc:add",
        "mutants": 1,
        "survived": 0,
        "vacuous": False,
        "verdict": "ok",
        "problem": "",
        "no_mutants": "",
        "missed": [],
        "killed": [{"line": 2, "change": "Add -> Sub"}],
    }
    assert report["sum_in_range"]["killed"] == [] and report["sum_in_range"]["verdict"] == "checks_nothing"
    assert report["norm_is_idempotent"]["mutants"] == 0 and not report["norm_is_idempotent"]["vacuous"]
    assert report["norm_is_idempotent"]["verdict"] == "no_mutants"
    code, out, _ = gate("--repo", str(project.path), "vacuity", "sum_in_range")
    assert out.splitlines()[0] == (
        "sum_in_range (shop.calc:add): killed 0 of 1 mutant(s); CHECKS NOTHING: passes on every mutant"
    )
    assert out.splitlines()[-1] == "1 row(s); 1 check nothing: sum_in_range"


def test_a_row_whose_package_raises_on_import_says_the_exception(tmp_path, gate):
    project = make_project(tmp_path / "repo", default_rows())
    project.write("shop/__init__.py", "raise RuntimeError('broken at import')\n")
    project.commit("broken")
    code, out, _ = gate("--repo", str(project.path), "vacuity", "sum_in_range")
    assert code == 0 and "cannot load entry shop.calc:add: RuntimeError: broken at import" in out, out


def test_a_row_that_fails_as_the_code_is_is_reported_not_judged(tmp_path, gate):
    project = make_project(tmp_path / "repo", default_rows(min_=1000, max_=2000))
    code, out, _ = gate("--repo", str(project.path), "vacuity", "sum_in_range")
    assert (
        code == 0
        and (
            "sum_in_range: the row fails on the code as it is (sample 0 (0-based): result 3 is outside "
            "[1000, 2000]; sample 1 (0-based): result 0 is outside [1000, 2000]); fix that first"
        )
        in out
    ), out
    code, out, _ = gate("--repo", str(project.path), "vacuity", "--format", "json", "sum_in_range")
    assert code == 0 and json.loads(out)[0]["verdict"] == "fails"


def test_unknown_ids_and_invalid_oracles(tmp_path, gate):
    project = make_project(tmp_path / "repo")
    code, _, err = gate("--repo", str(project.path), "vacuity", "no_such_row")
    assert code == 1 and "no oracle row has the id 'no_such_row'" in err
    project.write("oracles/shop.toml", "not toml = = \n")
    assert gate("--repo", str(project.path), "vacuity")[0] == 5


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            "def total(a, b):\n    return add(a, b)\n",
            "the entry only delegates to add: its body has nothing the mutation operators change",
        ),
        (
            'def total(v):\n    """Doc."""\n    return Version.parse(v).bump().text\n',
            "the entry only delegates to Version.parse, bump: its body has nothing the mutation operators change",
        ),
        (
            "def total(a, b):\n    return f(g(h(k(a))))\n",
            "the entry only delegates to f, g, h and 1 more: its body has nothing the mutation operators change",
        ),
        (
            "def total(state):\n    return state\n",
            "its body has nothing the mutation operators change (no arithmetic or comparison, no int or bool constant)",
        ),
    ],
)
def test_why_an_entry_has_no_mutants(source, reason):
    assert mutants(source, "total") == []
    assert why_no_mutants(source, "total") == reason


def test_a_row_whose_entry_only_delegates_has_no_mutants_of_its_own_not_ok(tmp_path, gate):
    rows = default_rows()
    rows[0]["entry"] = "shop.calc:total"
    project = make_project(tmp_path / "repo", rows)
    project.write(
        "shop/calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef total(a, b):\n    return add(a, b)\n"
        "\n\ndef norm(state, k):\n    return state\n",
    )
    code, out, err = gate("--repo", str(project.path), "vacuity", "sum_in_range", "add_table")
    assert code == 0, err
    assert out.splitlines() == [
        "sum_in_range (shop.calc:total): NO MUTANTS OF ITS OWN: the entry only delegates to add: its body has "
        "nothing the mutation operators change; not judged",
        "add_table (shop.calc:add): killed 1 of 1 mutant(s); ok",
        "2 row(s); 0 check nothing; 1 with no mutants of its own: sum_in_range",
    ]
    code, out, _ = gate("--repo", str(project.path), "vacuity", "--format", "json", "sum_in_range")
    assert code == 0
    (row,) = json.loads(out)
    assert row["verdict"] == "no_mutants" and not row["vacuous"] and row["mutants"] == 0
    assert row["no_mutants"] == "the entry only delegates to add: its body has nothing the mutation operators change"


def test_a_method_entry_mutates_that_method_and_a_class_entry_its_init():
    from tools.oracle_gate.authoring.vacuity import mutants

    source = (
        "def f(x):\n    return x + 1\n\nclass C:\n    def __init__(self, x):\n        self.x = x * 2\n\n"
        "    def f(self, y):\n        return y - 3\n"
    )
    method = mutants(source, "C.f")
    assert [m.line for m in method] == [9, 9] and all("return x + 1" in m.source for m in method)
    assert all("y - 3" not in m.source for m in method)
    init = mutants(source, "C")
    assert init and all(m.line == 6 for m in init)
    with pytest.raises(GateError, match="defines no method 'g'"):
        mutants(source, "C.g")


def test_suggest_gives_each_survivor_a_killing_sample_from_the_base_tip(tmp_path, gate):
    project = make_project(tmp_path / "repo", default_rows(min_=-(10**9), max_=10**9))
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "--seed", "3", "sum_in_range")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("killing samples from the base tip refs/heads/main ") and lines[0].endswith(
        ": seed 3, up to 100 candidate(s) per row"
    )
    assert lines[1:] == [
        "sum_in_range (shop.calc:add): killed 0 of 1 mutant(s); CHECKS NOTHING: passes on every mutant",
        "    survived: line 2: Add -> Sub",
        '        killing sample: {"a":1,"b":2} (base tip: 3; mutant: -1)',
        "1 row(s); 1 check nothing: sum_in_range",
    ]
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "--format", "json", "sum_in_range")
    (row,) = json.loads(out)
    assert row["suggest"]["seed"] == 0 and row["suggest"]["problem"] == "" and row["suggest"]["candidates"] > 1
    assert row["missed"][0] == {
        "line": 2,
        "change": "Add -> Sub",
        "killing_sample": {"a": 1, "b": 2},
        "base_result": {"value": 3},
        "mutant_result": {"value": -1},
        "note": "",
    }


def kept_project(path):
    """The default project plus a behaviour-kept row of add whose one sample, 0 + 0, misses Add -> Sub."""
    rows = [
        *default_rows(),
        {
            "id": "add_kept",
            "entry": "shop.calc:add",
            "kind": "back_to_back",
            "blob": "oracles/blobs/kept.json",
            "blob_sha256": sha256(b'[{"a":0,"b":0}]\n'),
        },
    ]
    project = make_project(path, rows)
    project.write("oracles/blobs/kept.json", '[{"a":0,"b":0}]\n')
    project.write_manifest()
    project.commit("a kept row")
    return project


def test_suggest_write_appends_each_killing_sample_once_and_leaves_the_pin_to_pin(tmp_path, gate):
    project = kept_project(tmp_path / "repo")
    blob = project.path / "oracles" / "blobs" / "kept.json"
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "--write", "add_kept")
    assert code == 0, err
    after = json.loads(blob.read_text())
    assert after[0] == {"a": 0, "b": 0} and len(after) == 2 and after[1]["b"] != 0, after
    assert out.splitlines()[-2:] == [
        "appended 1 killing sample(s) to oracles/blobs/kept.json",
        "`pin --write` sets their pins; commit them: the pull request needs the policy's label",
    ]
    code, out, err = gate("--repo", str(project.path), "pin")
    assert code == 5 and "1 wrong" in out, out
    assert gate("--repo", str(project.path), "pin", "--write")[0] == 0
    code, out, err = gate("--repo", str(project.path), "vacuity", "add_kept")
    assert code == 0 and "add_kept (shop.calc:add): killed 1 of 1 mutant(s)" in out, out
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "--write", "add_kept")
    assert code == 0 and out.splitlines()[-1] == "no killing sample to append", out
    assert json.loads(blob.read_text()) == after


def test_suggest_write_on_a_symlinked_blob_folder_writes_nothing(tmp_path, gate):
    project = kept_project(tmp_path / "repo")
    blobs = project.path / "oracles" / "blobs"
    outside = tmp_path / "outside"
    blobs.rename(outside)
    blobs.symlink_to(outside)
    before = (outside / "kept.json").read_bytes()
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "--write", "add_kept")
    assert code in (1, 5) and "oracles/blobs" in err, err
    assert (outside / "kept.json").read_bytes() == before


def test_suggest_refuses_a_branch_whose_build_or_harness_files_differ(tmp_path, gate):
    project = kept_project(tmp_path / "repo")
    project.write("harness/shadow/decimal.py", "ROUND_HALF_EVEN = 'ROUND_FLOOR'\n")
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "add_kept")
    assert code == 1 and "harness/shadow/decimal.py differs from the base tip" in err, err
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "--base", "HEAD", "add_kept")
    assert code == 1, err  # untracked: not even the branch's own tip holds it


def test_suggest_refuses_a_work_tree_whose_production_code_is_not_the_base_tips(tmp_path, gate):
    project = make_project(tmp_path / "repo")
    project.write("shop/calc.py", "def add(a, b):\n    return a + b + 0\n\n\ndef norm(state, k):\n    return state\n")
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest")
    assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    assert "vacuity --suggest: shop/calc.py differs from the base tip refs/heads/main (" in err
    assert "run it on a checkout of the base tip" in err
    code, _, _ = gate("--repo", str(project.path), "vacuity")  # without --suggest the work tree is judged
    assert code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "1"], "--base, --candidates, --seed and --write go with --suggest"),
        (["--write"], "--base, --candidates, --seed and --write go with --suggest"),
        (["--suggest", "--candidates", "0"], "--candidates must be from 1 to 10000, not 0"),
        (["--suggest", "--base", "no-such-rev"], "no-such-rev"),
    ],
)
def test_suggest_usage_errors_are_one_line(tmp_path, gate, args, message):
    project = make_project(tmp_path / "repo")
    code, out, err = gate("--repo", str(project.path), "vacuity", *args)
    assert code == 1 and out == "" and len(err.splitlines()) == 1 and message in err, err


def test_suggest_on_a_row_without_samples_is_the_invalid_blob_line(tmp_path, gate):
    rows = default_rows()
    rows[0]["blob_sha256"] = sha256(b"[]\n")
    project = make_project(tmp_path / "repo")
    project.write("oracles/blobs/bound.json", "[]\n")
    project.write("oracles/shop.toml", oracle_toml(rows))
    code, out, err = gate("--repo", str(project.path), "vacuity", "--suggest", "sum_in_range")
    assert code == 5 and out == "" and len(err.splitlines()) == 1, err
    assert "oracles/blobs/bound.json" in err and "must be a non-empty JSON array of samples" in err


def test_a_back_to_back_row_kills_every_mutant_that_changes_a_result_on_its_samples(tmp_path, gate):
    samples = [{"a": 1, "b": 2}, {"a": 3, "b": -3}]
    row = {
        "id": "add_kept",
        "entry": "shop.calc:add",
        "kind": "back_to_back",
        "blob": "oracles/blobs/kept.json",
        "blob_sha256": sha256((json.dumps(samples)).encode()),
    }
    project = make_project(tmp_path / "repo", [row])
    project.git("checkout", "-q", "main")
    project.write("oracles/blobs/kept.json", json.dumps(samples))
    project.write_manifest()
    project.commit("blob")
    code, out, err = gate("--repo", str(project.path), "vacuity", "add_kept", "--format", "json")
    assert code == 0, err
    (report,) = json.loads(out)
    assert (report["verdict"], report["killed"]) == ("ok", [{"line": 2, "change": "Add -> Sub"}])
