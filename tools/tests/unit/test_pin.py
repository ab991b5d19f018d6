"""pin.py and the `pin` command: which pins are wrong, and rewriting only those values in place."""

from __future__ import annotations

import os
import tomllib

import pytest

from tools.oracle_gate.authoring.pin import read_pins, rewrite, row_lines
from tools.oracle_gate.errors import GateError, OracleError
from tools.oracle_gate.git.tree import WorkTree
from tools.testing.gitrepo import blob_bytes, sha256

COMMENTED = b"""# Claims about shop.calc (owner: pricing team)
schema = 1

[[invariant]]   # the sum stays small
id = "sum_in_range"
entry = "shop.calc:add"
kind = "bound"
min = 0
max = 100
blob = "oracles/blobs/bound.json"
blob_sha256   =   "0000000000000000000000000000000000000000000000000000000000000000"   # old pin
seed = 1

[[invariant]]
id = "add_table"
entry = "shop.calc:add"   # the table below
kind = "exact_table"
blob = "oracles/blobs/table.json"
blob_sha256 = "%s"
"""


def test_wrong_pins_are_shown_with_the_real_digest_and_their_line(project):
    (project.path / "oracles/blobs/table.json").write_bytes(blob_bytes([{"args": [1, 1], "expected": 2}]))
    text = project.read("oracles/shop.toml")
    pins = read_pins(WorkTree(str(project.path)), "oracles/shop.toml", text)
    by_id = {p.id: p for p in pins}
    assert by_id["sum_in_range"].ok and by_id["norm_is_idempotent"].ok
    table = by_id["add_table"]
    assert not table.ok and table.actual == sha256(blob_bytes([{"args": [1, 1], "expected": 2}]))
    assert text.decode().split("\n")[table.line - 1].startswith("blob_sha256 = ")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda root: os.remove(root / "oracles/blobs/table.json"), "blob oracles/blobs/table.json does not exist"),
        (
            lambda root: (
                os.remove(root / "oracles/blobs/table.json"),
                os.symlink("bound.json", root / "oracles/blobs/table.json"),
            ),
            "is not a regular file",
        ),
    ],
)
def test_a_blob_that_cannot_be_pinned_says_why(project, make, problem):
    make(project.path)
    pins = read_pins(WorkTree(str(project.path)), "oracles/shop.toml", project.read("oracles/shop.toml"))
    table = next(p for p in pins if p.id == "add_table")
    assert problem in table.problem and table.actual is None and not table.ok


def test_a_blob_path_outside_the_blob_folder_cannot_be_pinned(project):
    text = project.read("oracles/shop.toml").replace(b"oracles/blobs/table.json", b"shop/calc.py")
    pins = read_pins(WorkTree(str(project.path)), "oracles/shop.toml", text)
    assert "is outside oracles/blobs/" in next(p for p in pins if p.id == "add_table").problem


def test_a_file_that_is_not_toml_is_an_oracle_error(project):
    with pytest.raises(OracleError, match="is not valid UTF-8 TOML") as raised:
        read_pins(WorkTree(str(project.path)), "oracles/shop.toml", b"[[invariant]\nid = 1")
    assert raised.value.code == 5


def test_rewrite_changes_the_pin_values_and_no_other_byte():
    data = COMMENTED.replace(b"%s", b"1" * 64)
    new = rewrite(data, "oracles/shop.toml", {0: "a" * 64, 1: "b" * 64})
    assert new == data.replace(b"0" * 64, b"a" * 64).replace(b"1" * 64, b"b" * 64)
    assert b'blob_sha256   =   "' + b"a" * 64 + b'"   # old pin' in new


def test_rewrite_keeps_crlf_line_endings():
    data = COMMENTED.replace(b"%s", b"1" * 64).replace(b"\n", b"\r\n")
    new = rewrite(data, "oracles/shop.toml", {1: "c" * 64})
    assert new == data.replace(b"1" * 64, b"c" * 64)


@pytest.mark.parametrize(
    "data",
    [
        # the pin as an inline table: no line of its own
        b'schema = 1\ninvariant = [{id = "a", blob_sha256 = "00"}]\n',
        # a literal string the line pattern does not take
        b"schema = 1\n[[invariant]]\nid = \"a\"\nblob_sha256 = '00'\n",
    ],
)
def test_a_pin_without_a_line_of_its_own_is_refused(data):
    with pytest.raises(GateError, match="edit it by hand"):
        rewrite(data, "oracles/x.toml", {0: "a" * 64})


def test_a_rewrite_that_would_change_more_than_the_pin_is_refused():
    # A header inside a multi-line string makes the text's rows differ from the document's rows.
    data = (
        b'schema = 1\nnote = """\n[[invariant]]\nblob_sha256 = "00"\n"""\n[[invariant]]\nid = "a"\nblob_sha256 = "11"\n'
    )
    assert len(row_lines(data.decode())) == 2 and len(tomllib.loads(data.decode())["invariant"]) == 1
    with pytest.raises(GateError, match="would change more than the pins"):
        rewrite(data, "oracles/x.toml", {0: "a" * 64})


def test_the_command_shows_fixes_and_regenerates_the_manifest(project, gate):
    (project.path / "oracles/blobs/table.json").write_bytes(blob_bytes([{"args": [2, 2], "expected": 4}]))
    before = project.read("oracles/shop.toml")
    code, out, err = gate("--repo", str(project.path), "pin")
    assert code == 5 and "WRONG: pinned " in out and "3 pin(s): 2 ok, 1 wrong, 0 cannot be pinned" in out, out + err
    code, out, err = gate("--repo", str(project.path), "pin", "--write")
    assert code == 0 and "updated 1 pin(s) in oracles/shop.toml" in out, out + err
    after = project.read("oracles/shop.toml")
    changed = [(a, b) for a, b in zip(before.split(b"\n"), after.split(b"\n"), strict=False) if a != b]
    new_pin = sha256(blob_bytes([{"args": [2, 2], "expected": 4}])).encode()
    assert len(before) == len(after) and changed == [(changed[0][0], b'blob_sha256 = "' + new_pin + b'"')], changed
    assert gate("--repo", str(project.path), "pin")[0] == 0
    code, out, _ = gate("--repo", str(project.path), "manifest", "--check")
    assert code == 0, out


def test_the_command_refuses_a_file_that_is_not_an_oracle_file(project, gate):
    code, _, err = gate("--repo", str(project.path), "pin", str(project.path / "oracles/policy.toml"))
    assert code == 1 and "not an oracle file" in err and len(err.splitlines()) == 1


def test_a_blob_that_cannot_be_pinned_keeps_the_manifest_and_exits_5(project, gate):
    os.remove(project.path / "oracles/blobs/table.json")
    manifest = project.read("oracles/MANIFEST.sha256")
    code, out, err = gate("--repo", str(project.path), "pin", "--write")
    assert code == 5 and "oracle-gate: [5] oracles/shop.toml:" in err and "does not exist" in err, out + err
    assert project.read("oracles/MANIFEST.sha256") == manifest


def test_a_row_without_a_pin_gets_one_after_its_blob_line(project, gate):
    rows = project.read("oracles/shop.toml").decode().split("\n")
    stripped = "\n".join(line for line in rows if not line.startswith("blob_sha256"))
    project.write("oracles/shop.toml", stripped)
    code, out, _ = gate("--repo", str(project.path), "pin")
    listed = [line for line in out.splitlines() if line.startswith("oracles/shop.toml:")]
    assert code == 5 and len(listed) == 3, out
    for line in listed:  # each points at its row's `blob` line, after which the pin goes
        number = int(line.split(":")[1].split()[0])
        assert stripped.split("\n")[number - 1].startswith("blob = "), line
    code, out, err = gate("--repo", str(project.path), "pin", "--write")
    assert code == 0 and "updated 3 pin(s) in oracles/shop.toml" in out, out + err
    assert project.read("oracles/shop.toml").decode().split("\n") == rows


def test_a_new_row_is_not_pinned_yet_rather_than_wrong():
    from tools.oracle_gate.authoring.pin import Pin
    from tools.oracle_gate.commands.pin_cmd import state

    new = Pin("oracles/shop.toml", 7, 0, "row", "oracles/blobs/shop/x.json", "", "ab" * 32)
    assert state(new) == f"NOT PINNED YET: blob is {'ab' * 32}"
    wrong = Pin("oracles/shop.toml", 7, 0, "row", "oracles/blobs/shop/x.json", "cd" * 32, "ab" * 32)
    assert state(wrong).startswith("WRONG: pinned cdcdcdcdcdcd, blob is ")


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda text: text.replace("schema = 1\n", ""), "field schema: is required"),
        (lambda text: text.replace('kind = "bound"', 'kind = "bounded"', 1), "field kind:"),
    ],
)
def test_right_pins_on_an_invalid_oracle_file_are_exit_5_naming_the_problem(project, gate, edit, problem):
    project.write("oracles/shop.toml", edit(project.read("oracles/shop.toml").decode()))
    for command in (("pin",), ("pin", "--write")):
        code, out, err = gate("--repo", str(project.path), *command)
        assert code == 5 and "oracle-gate: [5] oracles/shop.toml" in err and problem in err, out + err
        # After the problems it sums up, on the same stream, so that it follows them in a terminal too.
        assert err.index(problem) < err.index("have the problems above: the build refuses them (exit 5)"), err
