"""`promote ID --salt S`: a run's failing generated samples become stored samples of the row's blob
(docs/oracles.md, "Promoting failing samples")."""

from __future__ import annotations

import json

import pytest

from tools.oracle_gate.spec.generate import draw
from tools.oracle_gate.spec.schema import parse_oracle
from tools.testing.gitrepo import default_rows, oracle_toml


@pytest.fixture(autouse=True)
def _runner_without_bazel(monkeypatch):
    # The rows run as the caller action runs them, without Bazel (tools/testing/local_rows.py);
    # the Bazel runner itself runs in tools/testing/adoption.py.
    from tools.oracle_gate.authoring import vacuity
    from tools.testing.local_rows import local_runner

    monkeypatch.setattr(vacuity, "open_runner", local_runner)


BUGGY_ADD = "def add(a, b):\n    return 0 if a == 3 else a + b\n\n\ndef norm(state, k):\n    return state\n"


def table_row_with_reference():
    rows = default_rows()
    rows[2].update(
        {
            "reference": "oracles.reference.ref:add",
            "args_names": ["a", "b"],
            "seed": 4,
            "generate": {"count": 40, "a": {"int": [0, 9]}, "b": {"int": [1, 9]}},
        }
    )
    return rows


def setup(project, rows, production=BUGGY_ADD):
    project.write("oracles/reference/__init__.py", "")
    project.write("oracles/reference/ref.py", "def add(a, b):\n    return a + b\n")
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write("shop/calc.py", production)
    project.write_manifest()


def test_failing_generated_samples_are_listed_then_appended_with_the_references_answers(gate, project):
    rows = table_row_with_reference()
    setup(project, rows)
    code, out, err = gate("--repo", str(project.path), "pin", "--write")
    assert code == 0, out + err
    project.commit("a generating table row")
    before = project.read("oracles/blobs/table.json")
    code, out, err = gate("--repo", str(project.path), "promote", "add_table", "--salt", "s7")
    assert code == 0, out + err
    inv = next(
        i
        for i in parse_oracle(project.read("oracles/shop.toml"), "oracles/shop.toml").invariants
        if i.id == "add_table"
    )
    failing = [i for i, s in enumerate(draw(inv, "s7")) if s["args"][0] == 3]
    assert failing, "the seed must draw a = 3"
    assert out.splitlines()[0] == f"add_table: {len(failing)} of 40 generated sample(s) fail with salt s7"
    assert project.read("oracles/blobs/table.json") == before  # nothing written without --write
    code, out, err = gate("--repo", str(project.path), "promote", "add_table", "--salt", "s7", "--write")
    assert code == 0, out + err
    samples = json.loads(project.read("oracles/blobs/table.json"))
    assert samples[0] == {"args": [1, 2], "expected": 3}
    added = samples[1:]
    assert len(added) == len(failing)
    assert all(s["args"][0] == 3 and s["expected"] == 3 + s["args"][1] for s in added)
    assert "wrote oracles/MANIFEST.sha256" in out
    code, out, err = gate("--repo", str(project.path), "pin")
    assert code == 0, out + err  # the pins and the manifest are current


def test_bound_samples_are_appended_as_inputs_only(gate, project):
    rows = default_rows()
    rows[0].update({"generate": {"count": 30, "a": {"int": [0, 90]}, "b": {"int": [0, 90]}}})
    setup(project, rows, production="def add(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n")
    assert gate("--repo", str(project.path), "pin", "--write")[0] == 0
    stored = len(json.loads(project.read("oracles/blobs/bound.json")))
    code, out, err = gate("--repo", str(project.path), "promote", "sum_in_range", "--salt", "x", "--write")
    assert code == 0, out + err
    samples = json.loads(project.read("oracles/blobs/bound.json"))
    assert len(samples) > stored and all(set(s) == {"a", "b"} and s["a"] + s["b"] > 100 for s in samples[stored:])


def test_nothing_fails_nothing_is_written(gate, project):
    rows = table_row_with_reference()
    setup(project, rows, production="def add(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n")
    assert gate("--repo", str(project.path), "pin", "--write")[0] == 0
    before = project.read("oracles/blobs/table.json")
    code, out, _ = gate("--repo", str(project.path), "promote", "add_table", "--salt", "s7", "--write")
    assert code == 0 and "nothing to promote" in out
    assert project.read("oracles/blobs/table.json") == before


def test_an_unknown_id_or_a_row_without_generators_is_exit_1(gate, project):
    code, _, err = gate("--repo", str(project.path), "promote", "no_such_row", "--salt", "s")
    assert code == 1 and "no oracle row has the id 'no_such_row'" in err
    code, _, err = gate("--repo", str(project.path), "promote", "add_table", "--salt", "s")
    assert code == 1 and "row add_table has no generate table" in err


def test_a_row_that_fails_as_a_whole_or_a_shared_blob_is_exit_1(gate, project):
    rows = table_row_with_reference()
    setup(project, rows, production="def plus(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n")
    assert gate("--repo", str(project.path), "pin", "--write")[0] == 0
    code, _, err = gate("--repo", str(project.path), "promote", "add_table", "--salt", "s7")
    assert code == 1 and "row add_table failed as a whole (" in err and "no sample can be promoted" in err
    rows[0].update({"generate": {"count": 3, "a": {"int": [0, 3]}, "b": {"int": [0, 3]}}})
    rows[1]["blob"], rows[1]["blob_sha256"] = rows[0]["blob"], rows[0]["blob_sha256"]
    rows[1]["kind"], rows[1]["min"], rows[1]["max"] = "bound", 0, 100
    del rows[1]["args"], rows[1]["repeat"]
    setup(project, rows, production=BUGGY_ADD)
    code, _, err = gate("--repo", str(project.path), "promote", "sum_in_range", "--salt", "s", "--write")
    assert code == 1 and "oracles/blobs/bound.json is also the blob of norm_is_idempotent" in err, err


def test_write_neither_follows_nor_clobbers_a_planted_tmp_file(gate, project, tmp_path):
    rows = default_rows()
    rows[0].update({"generate": {"count": 30, "a": {"int": [0, 90]}, "b": {"int": [0, 90]}}})
    setup(project, rows, production="def add(a, b):\n    return a + b\n\n\ndef norm(state, k):\n    return state\n")
    assert gate("--repo", str(project.path), "pin", "--write")[0] == 0
    precious = tmp_path / "precious"
    precious.write_text("precious")
    (project.path / "oracles/blobs/bound.json.tmp").symlink_to(precious)
    (project.path / "oracles/MANIFEST.sha256.tmp").symlink_to(precious)
    code, out, err = gate("--repo", str(project.path), "promote", "sum_in_range", "--salt", "x", "--write")
    # The blob is written and re-pinned; the manifest then refuses the planted links (exit 5).
    assert code == 5 and "oracles/MANIFEST.sha256.tmp: is a symlink" in err, out + err
    assert precious.read_text() == "precious"
    assert not (project.path / "oracles/blobs/bound.json").is_symlink()
    assert (project.path / "oracles/blobs/bound.json.tmp").is_symlink()
