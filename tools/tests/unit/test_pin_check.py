"""The build-time pin checker run by oracle_suite: exit 5 naming blob and expected hash."""

from __future__ import annotations

import json

from tools.oracle_gate.actions.pin_check import main
from tools.testing.gitrepo import blob_bytes, default_rows, oracle_toml


def setup(tmp_path, table_bytes=None):
    (tmp_path / "oracles" / "blobs").mkdir(parents=True)
    names = {
        "bound": [{"a": 1, "b": 2}, {"a": 0, "b": 0}],
        "idem": [{"state": {"n": 1}, "k": "x"}],
        "table": [{"args": [1, 2], "expected": 3}],
    }
    args = []
    for name, samples in names.items():
        f = tmp_path / "oracles" / "blobs" / f"{name}.json"
        f.write_bytes(table_bytes if (name == "table" and table_bytes) else blob_bytes(samples))
        args += ["--blob", f"oracles/blobs/{name}.json={f}"]
    toml = tmp_path / "shop.toml"
    toml.write_text(oracle_toml(default_rows()))
    return args + ["--oracle", f"oracles/shop.toml={toml}", "--out", str(tmp_path / "index.json")]


def test_good_pins_write_the_index(tmp_path):
    assert main(setup(tmp_path)) == 0
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["oracles"] == ["oracles/shop.toml"]
    assert sorted(index["blobs"]) == ["oracles/blobs/bound.json", "oracles/blobs/idem.json", "oracles/blobs/table.json"]


def test_one_changed_byte_fails_with_the_expected_hash(tmp_path, capsys):
    good = blob_bytes([{"args": [1, 2], "expected": 3}])
    assert main(setup(tmp_path, good.replace(b"3", b"4"))) == 5
    err = capsys.readouterr().err
    expected = default_rows()[2]["blob_sha256"]
    assert f"oracles/blobs/table.json does not match its pin: expected sha256 {expected}" in err
    assert not (tmp_path / "index.json").exists()


def test_blob_not_given_to_the_rule(tmp_path, capsys):
    args = setup(tmp_path)
    i = args.index("--blob")
    del args[i : i + 2]
    assert main(args) == 5
    assert "oracles/blobs/bound.json is not among the blobs of this oracle_suite target" in capsys.readouterr().err


def test_blob_symlinked_to_a_harness_file_fails_the_build(tmp_path, capsys):
    # oracles/blobs/cart_samples.json committed as a symlink to a harness file: same bytes, other owner.
    args = setup(tmp_path)
    harness = tmp_path / "harness"
    harness.mkdir()
    table = tmp_path / "oracles" / "blobs" / "table.json"
    (harness / "table.json").write_bytes(table.read_bytes())
    table.unlink()
    table.symlink_to(harness / "table.json")
    assert main(args) == 5
    assert "oracles/blobs/table.json resolves to" in capsys.readouterr().err


def test_the_inputs_view_names_the_policys_production_packages_for_the_caller(tmp_path):
    from tools.testing.gitrepo import POLICY

    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY.replace('["shop"]', '["shop", "more"]'))
    views = ["--inputs", str(tmp_path / "inputs.json"), "--expectations", str(tmp_path / "expectations.json")]
    assert main(setup(tmp_path) + views + ["--policy", f"oracles/policy.toml={policy}"]) == 0
    inputs = json.loads((tmp_path / "inputs.json").read_text())
    assert inputs["production_packages"] == ["more", "shop"]
    assert "production_packages" not in json.loads((tmp_path / "expectations.json").read_text())
    # Without a policy the view names none: the caller then records the packages of the entries.
    (tmp_path / "without").mkdir()
    assert main(setup(tmp_path / "without") + views) == 0
    assert "production_packages" not in json.loads((tmp_path / "inputs.json").read_text())
