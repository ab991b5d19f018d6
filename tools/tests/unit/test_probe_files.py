"""probe_files.py: the probe's `oracles/`: its rows alone in the first oracle file, the others
emptied, one pinned blob per row of inputs only, the owners' other files kept."""

from __future__ import annotations

import hashlib
import json
import tomllib

from tools.oracle_gate.spec import kinds
from tools.oracle_gate.spec.schema import parse_oracle
from tools.oracle_gate.suite.probe_files import PROBE_BLOB_DIR, ProbeRow, inputs_sample, probe_fields, probe_oracles


def test_a_row_keeps_how_it_is_called_and_drops_what_only_a_judge_or_a_draw_needs():
    raw = {
        "id": "r",
        "entry": "shop.calc:add",
        "kind": "exact_table",
        "blob": "oracles/blobs/r.json",
        "blob_sha256": "0" * 64,
        "reference": "oracles.reference.ref:add",
        "args_names": ["a", "b"],
        "generate": {"count": 3},
        "timeout_s": 5,
    }
    assert probe_fields(raw) == {
        "id": "r",
        "entry": "shop.calc:add",
        "kind": "exact_table",
        "args_names": ["a", "b"],
        "timeout_s": 5,
    }


def test_a_kind_the_probe_cannot_run_as_it_is_takes_its_probe_form():
    agrees = {"id": "a", "entry": "m.n:f", "kind": "agrees", "reference": "oracles.reference.r:f"}
    assert probe_fields(agrees)["kind"] == kinds.BACK_TO_BACK
    composed = {"id": "c", "entries": ["m.n:f", "m.n:g"], "kind": "composed", "reference": "oracles.reference.r:f"}
    fields = probe_fields(composed)
    assert (fields["kind"], fields["min"], fields["max"]) == ("composed", -kinds.PROBE_BOUND, kinds.PROBE_BOUND)


def test_samples_keep_their_inputs_only():
    assert inputs_sample("exact_table", {"args": [1], "expected": 2}) == {"args": [1], "expected": None}
    assert inputs_sample("exact_table", {"args": [1], "raises": "ValueError"}) == {"args": [1], "expected": None}
    drawn = {"a": 1, "b": 2, "receiver": [3]}
    assert inputs_sample("exact_table", drawn, ["b", "a"]) == {"args": [2, 1], "receiver": [3], "expected": None}
    assert inputs_sample("bound", {"a": 1, "raises": "KeyError"}) == {"a": 1}


def test_the_rows_replace_the_oracle_files_and_each_blob_is_pinned():
    base = {
        "oracles/BUILD.bazel": b"# build",
        "oracles/policy.toml": b"schema = 1",
        "oracles/a.toml": b"old a",
        "oracles/b.toml": b"old b",
        f"{PROBE_BLOB_DIR}/stale.json": b"[]",
        "oracles/blobs/kept.json": b"[1]",
    }
    row = ProbeRow({"id": "r", "entry": "shop.calc:add", "kind": "bound", "min": 0, "max": 9}, [{"a": 1}])
    files = probe_oracles(base, [row])
    assert "oracles/b.toml" not in files
    assert (files["oracles/BUILD.bazel"], files["oracles/blobs/kept.json"]) == (b"# build", b"[1]")
    assert f"{PROBE_BLOB_DIR}/stale.json" not in files
    blob = files[f"{PROBE_BLOB_DIR}/r.json"]
    assert json.loads(blob) == [{"a": 1}]
    (parsed,) = tomllib.loads(files["oracles/a.toml"].decode())["invariant"]
    assert parsed["blob_sha256"] == hashlib.sha256(blob).hexdigest()
    oracle = parse_oracle(files["oracles/a.toml"], "oracles/a.toml", ["shop"])
    assert not oracle.problems, [str(p) for p in oracle.problems]


def test_a_tree_without_oracle_files_gets_one():
    files = probe_oracles({"oracles/BUILD.bazel": b""}, [])
    assert files["oracles/probe.toml"] == b"schema = 1\n\n"


def test_a_sample_with_a_lone_surrogate_is_written_as_a_json_escape():
    row = ProbeRow({"id": "r", "entry": "shop.calc:f", "kind": "bound", "min": 0, "max": 9}, [{"s": "a\ud800é"}])
    blob = probe_oracles({}, [row])[f"{PROBE_BLOB_DIR}/r.json"]
    assert b"\\ud800" in blob and json.loads(blob) == [{"s": "a\ud800é"}]
