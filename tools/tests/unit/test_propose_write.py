"""authoring/propose_write.py: whole rows appended to their oracle files with their blobs, all or
nothing; and `propose --all [--write]` as the command runs it."""

from __future__ import annotations

import json
import os

import pytest

from tools.oracle_gate.authoring.propose_rows import Proposed
from tools.oracle_gate.authoring.propose_write import blob_bytes, plan, write
from tools.oracle_gate.errors import GateError, OracleError

ROW = {"id": "add_commutative", "entry": "shop.calc:add", "kind": "commutative", "args_names": ["a", "b"]}


def candidate(ident: str = "add_commutative", oracle_file: str = "oracles/shop.toml") -> Proposed:
    row = {**ROW, "id": ident, "blob": f"oracles/blobs/shop/{ident}.json", "generate": {"count": 2}}
    return Proposed(row, ({"a": 1, "b": 2},), oracle_file, "why")


def test_rows_are_appended_and_existing_bytes_kept(tmp_path):
    (tmp_path / "oracles").mkdir()
    before = 'schema = 1\n# a comment stays\n\n[[invariant]]\nid = "old"\n'
    (tmp_path / "oracles" / "shop.toml").write_text(before)
    files = plan(str(tmp_path), [candidate(), candidate("add_associative", "oracles/new.toml")])
    assert [(f.path, f.rows) for f in files] == [
        ("oracles/blobs/shop/add_commutative.json", ()),
        ("oracles/blobs/shop/add_associative.json", ()),
        ("oracles/new.toml", ("add_associative",)),
        ("oracles/shop.toml", ("add_commutative",)),
    ]
    write(str(tmp_path), files)
    text = (tmp_path / "oracles" / "shop.toml").read_text()
    assert text.startswith(before) and '\n[[invariant]]\nid = "add_commutative"\n' in text
    assert "blob_sha256" not in text
    assert (
        (tmp_path / "oracles" / "new.toml")
        .read_text()
        .startswith('schema = 1\n\n[[invariant]]\nid = "add_associative"')
    )
    assert json.loads((tmp_path / "oracles/blobs/shop/add_commutative.json").read_text()) == [{"a": 1, "b": 2}]


def test_a_blob_with_the_same_samples_is_kept_and_one_with_others_stops_everything(tmp_path):
    blob = tmp_path / "oracles/blobs/shop/add_commutative.json"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(blob_bytes([{"a": 1, "b": 2}]))
    assert [f.path for f in plan(str(tmp_path), [candidate()])] == ["oracles/shop.toml"]
    blob.write_text("[]\n")
    with pytest.raises(GateError, match="already exists with other samples; nothing written") as caught:
        plan(str(tmp_path), [candidate()])
    assert caught.value.code == 1 and caught.value.path == "oracles/blobs/shop/add_commutative.json"


def test_an_oracle_file_that_is_not_toml_or_a_link_stops_everything(tmp_path):
    (tmp_path / "oracles").mkdir()
    (tmp_path / "oracles" / "shop.toml").write_text("not toml = =\n")
    with pytest.raises(OracleError, match="is not readable TOML") as caught:
        plan(str(tmp_path), [candidate()])
    assert caught.value.code == 5
    os.unlink(tmp_path / "oracles" / "shop.toml")
    os.symlink("/etc/passwd", tmp_path / "oracles" / "shop.toml")
    with pytest.raises(GateError, match="is not a regular file; nothing written"):
        plan(str(tmp_path), [candidate()])


CODEC = (
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\n"
    "def dumps(v: int) -> str:\n    return str(v)\n\n\n"
    "def loads(t: str) -> int:\n    return int(t)\n"
)


def test_propose_all_write_twice_adds_nothing_the_second_time(project, gate):
    project.write("shop/codec.py", CODEC)
    project.commit("codec")
    repo = str(project.path)
    code, out, err = gate("--repo", repo, "propose", "--all")
    assert code == 0, err
    assert out.splitlines()[0].startswith("# propose --all: 7 whole row(s) for ")
    assert (
        "#   shop.codec:add (shop/codec.py:1): candidate add_commutative, add_associative, add_identity, add_kept"
        in out
    )
    assert "#   shop.codec:dumps (shop/codec.py:5): candidate dumps_round_trip, dumps_kept" in out
    assert '# kind = "round_trip"' in out and project.git("status", "--porcelain") == ""
    code, out, err = gate("--repo", repo, "propose", "--all", "shop", "--write")
    assert code == 0, err
    assert (
        "appended 7 row(s) to oracles/shop.toml: add_commutative, add_associative, add_identity, add_kept, "
        "dumps_round_trip, dumps_kept, loads_kept" in out
    )
    assert "next: `pin --write` (or `record --write`) adds each blob_sha256" in out
    written = (project.path / "oracles" / "shop.toml").read_bytes()
    code, out, err = gate("--repo", repo, "propose", "--all", "--write")
    assert code == 0, err
    assert "wrote 0 blob(s); 0 row(s) in all" in out
    assert "#   shop.codec:add (shop/codec.py:1): no candidate: no new candidate; rows naming it: " in out
    assert (project.path / "oracles" / "shop.toml").read_bytes() == written
    code, out, err = gate("--repo", repo, "pin", "--write")
    assert code == 0, err


def test_propose_all_refuses_a_package_that_is_not_production_and_writes_nothing_on_a_conflict(project, gate):
    project.write("shop/codec.py", CODEC)
    project.commit("codec")
    repo = str(project.path)
    code, _, err = gate("--repo", repo, "propose", "--all", "harness")
    assert code == 1 and "--all: harness is not a production package of oracles/policy.toml (shop)" in err
    blob = project.path / "oracles/blobs/shop/dumps_round_trip.json"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_text("[]\n")
    before = (project.path / "oracles" / "shop.toml").read_bytes()
    code, _, err = gate("--repo", repo, "propose", "--all", "--write")
    assert code == 1 and "oracles/blobs/shop/dumps_round_trip.json: already exists with other samples" in err
    assert (project.path / "oracles" / "shop.toml").read_bytes() == before
    assert not (project.path / "oracles/blobs/shop/add_commutative.json").exists()


def test_a_changed_function_gets_a_behaviour_kept_row_that_write_appends(project, gate):
    project.git("checkout", "-q", "main")
    project.write("shop/codec.py", CODEC)
    project.commit("codec")
    project.git("checkout", "-q", "change")
    project.git("merge", "-q", "main")
    project.write("shop/codec.py", CODEC.replace("return a + b", "return b + a"))
    project.commit("change")
    repo = str(project.path)
    code, out, err = gate("--repo", repo, "propose", "--base", "main")
    assert code == 0, err
    assert "# shop.codec:add: shop.codec:add was changed: the change's version must return what the base tip's" in out
    assert '# kind = "back_to_back"' in out
    code, out, err = gate("--repo", repo, "propose", "--base", "main", "--write")
    assert code == 0, err
    assert "appended 1 row(s) to oracles/shop.toml: add_kept" in out
    assert (
        'id = "add_kept"\nentry = "shop.codec:add"\nkind = "back_to_back"\n'
        in (project.path / "oracles" / "shop.toml").read_text()
    )
