"""Fix messages name the label of the policy in force, which a policy may rename (docs/design.md section 3)."""

from __future__ import annotations

from tools.oracle_gate.actions.pin_check import main as pin_check
from tools.testing.gitrepo import BOUND_SAMPLES, IDEM_SAMPLES, IDS, POLICY, blob_bytes, default_rows, junit, oracle_toml

RENAMED = POLICY.replace('label = "oracle-change"', 'label = "needs-human"')
EDITED = blob_bytes([{"args": [1, 2], "expected": 4}])


def test_check_names_the_base_policys_label_in_pin_and_manifest_fixes(gate, project, tmp_path):
    project.git("checkout", "-q", "main")
    project.write("oracles/policy.toml", RENAMED)
    project.write_manifest()
    project.commit("rename the label")
    project.git("checkout", "-q", "-B", "change", "main")
    project.write("oracles/blobs/table.json", EDITED)
    project.commit("edit a blob, not its pin nor the manifest")
    code, out, _ = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--label",
        "needs-human",
        "--results",
        junit(tmp_path, {i: "passed" for i in IDS}),
    )
    assert code == 5, out
    assert (
        "update blob_sha256 (`pin --write`) in a change labelled needs-human; if you did not and HEAD has the file"
        in out
    )
    assert "manifest --write`) in a change labelled needs-human" in out
    assert "oracle-change" not in out


def pin_check_args(tmp_path, table: bytes) -> list[str]:
    """Arguments of the pin check for the default rows, with `table` as the exact_table blob."""
    args = ["--oracle", f"oracles/shop.toml={tmp_path / 'shop.toml'}", "--out", str(tmp_path / "index.json")]
    (tmp_path / "shop.toml").write_text(oracle_toml(default_rows()))
    blobs = tmp_path / "oracles" / "blobs"  # a blob's file must end in its own path (pin_check.verify)
    blobs.mkdir(parents=True)
    for name, data in (("bound", blob_bytes(BOUND_SAMPLES)), ("idem", blob_bytes(IDEM_SAMPLES)), ("table", table)):
        (blobs / f"{name}.json").write_bytes(data)
        args += ["--blob", f"oracles/blobs/{name}.json={blobs / f'{name}.json'}"]
    return args


def test_the_pin_check_names_the_label_of_the_policy_it_is_given(tmp_path, capsys):
    args = pin_check_args(tmp_path, EDITED)
    assert pin_check(args) == 5
    assert (
        "update blob_sha256 (`pin --write`) in a change carrying the policy's label (oracle-change by default);"
        in capsys.readouterr().err
    )
    policy = tmp_path / "policy.toml"
    policy.write_text(RENAMED)
    assert pin_check(args + ["--policy", f"oracles/policy.toml={policy}"]) == 5
    err = capsys.readouterr().err
    assert err.startswith("oracle-gate: [5] oracles/shop.toml: row add_table: field blob_sha256: ")
    assert "update blob_sha256 (`pin --write`) in a change labelled needs-human;" in err
