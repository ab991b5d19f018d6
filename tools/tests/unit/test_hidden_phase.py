"""hidden_phase.py without Bazel: the inputs view written into a fresh tree, what the gate refuses
where the phase writes (links, files it did not expect, a changed inputs view), and the reading of
the hidden observations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.hidden_phase import planted, read_observations, write_inputs
from tools.oracle_gate.spec.schema import HIDDEN_INPUTS

VIEW = {"schema": 1, "rows": [{"id": "add_table", "samples": [[40001, 2]]}]}


def tree_with_oracles(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "oracles" / "blobs").mkdir(parents=True)
    return tree


def test_the_inputs_view_is_written_as_a_new_read_only_file(tmp_path):
    tree = tree_with_oracles(tmp_path)
    data = write_inputs(str(tree), VIEW)
    target = tree / HIDDEN_INPUTS
    assert json.loads(target.read_bytes()) == VIEW and target.read_bytes() == data
    assert oct(target.stat().st_mode & 0o777) == "0o444"
    with pytest.raises(GateError, match="cannot write the hidden inputs view"):
        write_inputs(str(tree), VIEW)  # never over an existing entry


def test_a_link_on_the_way_to_the_hidden_folder_is_refused(tmp_path):
    tree = tree_with_oracles(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tree / "oracles" / "blobs" / "_hidden").symlink_to(elsewhere)
    with pytest.raises(GateError, match="holds oracles/blobs/_hidden as a link or file"):
        write_inputs(str(tree), VIEW)
    assert list(elsewhere.iterdir()) == []


def bazel_bin(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    (folder / "oracles" / "_hidden").mkdir(parents=True)
    (folder / "oracles" / "_hidden" / "oracles.inputs.json").write_text("{}")
    (folder / "oracles" / "_hidden" / "oracles.generated.json").write_text("{}")
    return folder


def test_what_the_phase_left_is_checked_before_its_observations_are_read(tmp_path):
    tree = tree_with_oracles(tmp_path)
    data = write_inputs(str(tree), VIEW)
    out = bazel_bin(tmp_path)
    assert planted(str(tree), data, str(out)) == ""
    (out / "oracles" / "_hidden" / "oracles.expected.json").write_text("{}")
    assert "bazel-bin/oracles/_hidden/oracles.expected.json is not a hidden view" in planted(str(tree), data, str(out))
    os.unlink(out / "oracles" / "_hidden" / "oracles.expected.json")
    (out / "oracles" / "_hidden" / "x.inputs.json").symlink_to(tree / HIDDEN_INPUTS)
    assert "x.inputs.json is not a hidden view" in planted(str(tree), data, str(out))
    os.unlink(out / "oracles" / "_hidden" / "x.inputs.json")
    (tree / "oracles" / "blobs" / "_hidden" / "extra").write_text("x")
    assert "holds extra, inputs.json, not the gate's inputs view alone" in planted(str(tree), data, str(out))
    os.unlink(tree / "oracles" / "blobs" / "_hidden" / "extra")
    os.chmod(tree / HIDDEN_INPUTS, 0o644)
    (tree / HIDDEN_INPUTS).write_text("{}")
    assert "is not the file the gate wrote" in planted(str(tree), data, str(out))


def test_hidden_observations_are_read_from_regular_files_only(tmp_path):
    out = bazel_bin(tmp_path)
    (out / "oracles" / "a.hidden_observations.json").write_text('{"rows": []}')
    (out / "oracles" / "b.hidden_observations.json").write_text("not json")
    found, why = read_observations(str(out))
    assert why == "" and found == [{"rows": []}, None]  # sorted by name
    (out / "oracles" / "link.hidden_observations.json").symlink_to(out / "oracles" / "b.hidden_observations.json")
    found, why = read_observations(str(out))
    assert found is None and "link.hidden_observations.json is not a regular file" in why
    assert read_observations(str(tmp_path / "nothing")) == ([], "")
