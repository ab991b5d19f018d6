"""authoring/promote.py: the blob text it writes, and the rows it refuses before running anything
(the runs themselves: scenarios/test_promote.py)."""

from __future__ import annotations

import json

import pytest

from tools.oracle_gate.authoring.promote import blob_text, failing_samples
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import Invariant


def test_blob_text_is_one_sample_per_line_and_parses_back_strictly():
    samples = [{"args": [1, "0.5"], "expected": 0}, {"args": ["é", 2.5], "expected": None}]
    text = blob_text(samples)
    assert text == '[\n  {"args": [1, "0.5"], "expected": 0},\n  {"args": ["é", 2.5], "expected": null}\n]\n'.encode()
    assert load_samples(text) == samples
    assert json.loads(blob_text([])) == []


def test_a_row_without_generate_is_refused_before_anything_runs(tmp_path):
    row = Invariant(
        id="t",
        entry="shop.calc:add",
        kind="exact_table",
        blob="oracles/blobs/t.json",
        blob_sha256="a" * 64,
        source="oracles/shop.toml",
    )
    with pytest.raises(GateError, match="row t has no generate table"):
        failing_samples(str(tmp_path), row, b"", b"[]", None, "s")


def test_blob_text_keeps_characters_and_escapes_a_sample_that_holds_a_lone_surrogate():
    data = blob_text([{"s": "é"}, {"s": "\ud800"}])
    assert "é".encode() in data and b"\\ud800" in data
    assert json.loads(data) == [{"s": "é"}, {"s": "\ud800"}]
