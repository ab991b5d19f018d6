"""Unit tests of actions/draw.py: the generated-samples view per salt (deterministic, inputs only) and its main."""

from __future__ import annotations

import hashlib
import json
import random

from tools.oracle_gate.actions.draw import main
from tools.oracle_gate.spec.views import generated_view
from tools.testing.gitrepo import oracle_toml

PIN = {"blob_sha256": "0" * 64}
ROWS = [
    {
        "id": "sum_in_range",
        "entry": "shop.calc:add",
        "kind": "bound",
        "min": 0,
        "max": 10,
        "blob": "oracles/blobs/b.json",
        "seed": 3,
        **PIN,
        "generate": {"count": 2, "a": {"int": [0, 9]}, "b": {"choice": ["x", "y"]}},
    },
    {
        "id": "norm_is_idempotent",
        "entry": "shop.calc:norm",
        "kind": "idempotent",
        "args": ["k"],
        "repeat": 2,
        "blob": "oracles/blobs/i.json",
        **PIN,
        "generate": {"count": 1, "state": {"int": [1, 1]}, "k": {"string": "a", "len": [2, 2]}},
    },
    {"id": "add_table", "entry": "shop.calc:add", "kind": "exact_table", "blob": "oracles/blobs/t.json", **PIN},
]
WIDE = [
    {
        "id": "wide",
        "entry": "shop.calc:add",
        "kind": "bound",
        "min": 0,
        "max": 1,
        "blob": "oracles/blobs/w.json",
        **PIN,
        "generate": {"count": 5, "n": {"int": [0, 2**62]}},
    }
]
ORACLES = {"oracles/shop.toml": oracle_toml(ROWS).encode()}


def rng_for(ident: str, seed: int, salt: str) -> random.Random:
    """The generator docs/design.md section 2 specifies, written out independently."""
    return random.Random(hashlib.sha256(f"{ident}\0{seed}\0{salt}".encode()).digest())


def test_the_view_holds_generated_rows_only_in_the_callers_shape():
    document, problems = generated_view(ORACLES, "s1")
    assert problems == []
    assert list(document) == ["schema", "salt", "rows"]
    assert (document["schema"], document["salt"]) == (1, "s1")
    assert list(document["rows"]) == ["norm_is_idempotent", "sum_in_range"]  # no generate, no row; sorted
    assert document["rows"]["norm_is_idempotent"] == [{"state": 1, "kwargs": {"k": "aa"}}]


def test_bound_samples_follow_the_specified_generator():
    document, _ = generated_view(ORACLES, "s1")
    rng = rng_for("sum_in_range", 3, "s1")
    expected = []
    for _ in range(2):
        a = rng.randint(0, 9)
        expected.append({"a": a, "b": json.loads(rng.choice(['"x"', '"y"']))})
    assert document["rows"]["sum_in_range"] == expected


def test_the_same_salt_gives_the_same_view():
    oracles = {"oracles/wide.toml": oracle_toml(WIDE).encode()}
    assert generated_view(oracles, "replay") == generated_view(oracles, "replay")


def test_every_salt_gives_other_samples():
    oracles = {"oracles/wide.toml": oracle_toml(WIDE).encode()}
    drawn = {salt: generated_view(oracles, salt)[0]["rows"]["wide"] for salt in ("", "s1", "s2", "S1")}
    assert len({json.dumps(samples) for samples in drawn.values()}) == 4
    first = rng_for("wide", 0, "")  # a row without seed draws as seed 0
    assert drawn[""] == [{"n": first.randint(0, 2**62)} for _ in range(5)]


def test_no_bound_or_answer_reaches_the_view():
    rows = [dict(ROWS[0], min=-31337, max=987654321)]
    text = json.dumps(generated_view({"oracles/shop.toml": oracle_toml(rows).encode()}, "x")[0])
    assert "31337" not in text and "987654321" not in text and "min" not in text and "max" not in text


def test_rows_of_several_files_are_merged_and_sorted():
    document, problems = generated_view({"oracles/z.toml": oracle_toml(WIDE).encode(), **ORACLES}, "")
    assert problems == []
    assert list(document["rows"]) == ["norm_is_idempotent", "sum_in_range", "wide"]


def test_an_invalid_oracle_file_is_a_problem_and_valid_rows_still_draw():
    document, problems = generated_view({**ORACLES, "oracles/bad.toml": b"schema = 2\n"}, "s1")
    assert problems == [
        "oracles/bad.toml: field schema: must be the integer 1, got 2",
        "oracles/bad.toml: field invariant: no [[invariant]] rows",
    ]
    assert list(document["rows"]) == ["norm_is_idempotent", "sum_in_range"]


def test_no_oracle_files():
    assert generated_view({}, "s") == ({"schema": 1, "salt": "", "rows": {}}, [])


def write_oracles(tmp_path, files: dict[str, bytes]) -> list[str]:
    args = []
    for index, (path, data) in enumerate(files.items()):
        target = tmp_path / f"oracle{index}.toml"
        target.write_bytes(data)
        args += ["--oracle", f"{path}={target}"]
    return args


def test_main_writes_compact_sorted_json(tmp_path, capsys):
    out = tmp_path / "generated.json"
    code = main(["--index", "unused", "--salt", "s1", "--out", str(out), *write_oracles(tmp_path, ORACLES)])
    assert code == 0
    document, _ = generated_view(ORACLES, "s1")
    assert out.read_text() == json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n"
    assert out.read_text().startswith('{"rows":{"norm_is_idempotent":[{"kwargs":{"k":"aa"},"state":1}]')
    assert capsys.readouterr().err == ""


def test_main_salt_defaults_to_empty(tmp_path):
    out = tmp_path / "generated.json"
    assert main(["--index", "i", "--out", str(out), *write_oracles(tmp_path, ORACLES)]) == 0
    assert json.loads(out.read_text())["salt"] == ""


def test_main_refuses_an_invalid_oracle_file_with_exit_5(tmp_path, capsys):
    out = tmp_path / "generated.json"
    files = {**ORACLES, "oracles/bad\n.toml": b"schema = 1\n"}
    code = main(["--index", "i", "--salt", "s", "--out", str(out), *write_oracles(tmp_path, files)])
    assert code == 5
    assert capsys.readouterr().err == "oracle-gate: [5] oracles/bad\\n.toml: field invariant: no [[invariant]] rows\n"
    assert not out.exists()


def test_a_suite_without_generators_gets_the_same_view_whatever_the_salt():
    # So Bazel keeps its caller action and oracle test cached from one check to the next.
    table_only = {"oracles/t.toml": oracle_toml(ROWS[2:]).encode()}
    views = [generated_view(table_only, salt)[0] for salt in ("", "s1", "s2")]
    assert views[0] == views[1] == views[2] == {"schema": 1, "salt": "", "rows": {}}
    assert generated_view(ORACLES, "s2")[0]["salt"] == "s2"


def test_main_unsalted_draws_nothing_and_fails_closed_when_a_row_draws(tmp_path, capsys):
    out = tmp_path / "g.json"
    assert main(["--index", "i", "--unsalted", "--out", str(out), *write_oracles(tmp_path, ORACLES)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("oracle-gate: [1] oracles/shop.toml: rows norm_is_idempotent, sum_in_range draw")
    assert "--define=oracle_salted" in err and not out.exists()
    still = {"oracles/t.toml": oracle_toml(ROWS[2:]).encode()}
    assert main(["--index", "i", "--unsalted", "--out", str(out), *write_oracles(tmp_path, still)]) == 0
    assert json.loads(out.read_text()) == {"rows": {}, "salt": "", "schema": 1}
