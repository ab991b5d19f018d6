"""`record` on a real git repository (docs/oracles.md, "Recording expected values"): the samples
are observed on the base tip's committed code, never the work tree's; a branch that is not the base
is refused without --from; with --write the blob, its pin and the manifest are written and valid;
every kind of bad input is one line and a documented exit code, with nothing written.

The probe is tools/testing/probe_local.py: the tree `record` gives it, written from the commit's git
objects, run through the real supervisor and caller without Bazel.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.oracle_gate import cli
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.suite.loader import load_oracles
from tools.testing.gitrepo import POLICY, GitRepo, oracle_toml
from tools.testing.probe_local import local_probe

CALC = """\
import time


def add(a: int, b: int) -> int:
    return a + b


def half(n: int) -> int:
    if n < 0:
        raise ValueError("negative")
    return n // 2


def slow(a: int, b: int) -> int:
    time.sleep(30)
    return a


def opaque(a: int, b: int) -> object:
    return object()


def plain(a, b):
    return a


def picky(state: int) -> int:
    raise KeyError(state)
"""
TABLE = {"id": "add_table", "entry": "shop.calc:add", "kind": "exact_table", "blob": "oracles/blobs/add.json"}
BOUND = {
    "id": "half_small",
    "entry": "shop.calc:half",
    "kind": "bound",
    "min": 0,
    "max": 50,
    "blob": "oracles/blobs/half.json",
    "seed": 2,
    "generate": {"count": 5, "n": {"int": [0, 100]}},
}


@pytest.fixture(autouse=True)
def _probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tools.oracle_gate.commands.record_cmd.probe", local_probe)


def project(tmp_path: Path, rows: list[dict[str, object]], blobs: dict[str, object]) -> GitRepo:
    """A repository whose main holds the production code and the rows (their blobs not yet pinned)."""
    repo = GitRepo(tmp_path / "repo")
    repo.write("oracles/policy.toml", POLICY)
    repo.write("shop/__init__.py", "")
    repo.write("shop/calc.py", CALC)
    repo.write("oracles/shop.toml", oracle_toml(rows))
    for path, samples in blobs.items():
        repo.write(path, json.dumps(samples))
    repo.commit("base")
    return repo


def record(repo: GitRepo, *args: str) -> int:
    return cli.main(["--repo", str(repo.path), "record", *args], {"PATH": "/usr/bin:/bin"})


def test_the_recording_is_the_base_tips_whatever_the_work_tree_holds(tmp_path, capsys):
    repo = project(tmp_path, [TABLE], {"oracles/blobs/add.json": [{"args": [1, 2], "expected": 0}]})
    repo.write("shop/calc.py", CALC.replace("return a + b", "return a - b"))  # not committed
    assert record(repo, "add_table", "--count", "0") == 0
    out = capsys.readouterr().out
    assert '  changed  [1,2] -> 3  (was {"expected":0})' in out
    assert "nothing written" in out
    assert json.loads(repo.read("oracles/blobs/add.json")) == [{"args": [1, 2], "expected": 0}]


def test_write_sets_the_blob_pin_and_manifest_and_a_raise_becomes_raises(tmp_path, capsys):
    table = dict(TABLE, entry="shop.calc:half")
    repo = project(tmp_path, [table, BOUND], {"oracles/blobs/add.json": [{"args": [4]}, {"args": [-1]}]})
    assert record(repo, "add_table", "half_small", "--salt", "s", "--write") == 0
    out = capsys.readouterr().out
    table = json.loads(repo.read("oracles/blobs/add.json"))
    assert table[:2] == [{"args": [4], "expected": 2}, {"args": [-1], "raises": "ValueError"}]
    # Fresh samples from `half`'s annotation (n: int), each with the approved code's answer.
    assert len(table) > 2 and all(s.get("expected") == s["args"][0] // 2 for s in table if "expected" in s)
    assert "fresh samples drawn from the entry's annotations at the recorded commit" in out
    half = json.loads(repo.read("oracles/blobs/half.json"))
    # The boundary sample -1 raises: a bound row stores that as its expected exception.
    assert {"n": -1, "raises": "ValueError"} in half
    assert all(0 <= s["n"] <= 100 for s in half if "raises" not in s)
    assert '{"n":-1} -> raises ValueError' in out
    assert "  new   [4] -> 2" in out  # a stored sample without an answer: record fills it
    oracles = load_oracles(WorkTree(str(repo.path)))
    assert not oracles.problems, [str(p) for p in oracles.problems]


def test_a_branch_that_is_not_the_base_needs_from_and_says_so(tmp_path, capsys):
    repo = project(tmp_path, [TABLE], {"oracles/blobs/add.json": [{"args": [1, 2], "expected": 3}]})
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("shop/calc.py", CALC.replace("return a + b", "return a * b"))
    repo.commit("feature")
    assert record(repo, "add_table") == 1
    err = capsys.readouterr().err
    assert "is not on main's first-parent history" in err and "--from REV" in err
    assert record(repo, "add_table", "--from", "feature", "--count", "0") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("record: recording from feature (")
    assert "[1,2] -> 2" in out


@pytest.mark.parametrize(
    ("rows", "args", "code", "message"),
    [
        ([TABLE], ["add_table", "--from", "nope"], 1, "--from 'nope' is not a commit"),
        ([TABLE], ["no_such_row"], 1, "no oracle row has the id 'no_such_row'"),
        ([dict(TABLE, entry="shop.calc:gone")], ["add_table"], 5, "the recording at main"),
        ([dict(TABLE, entry="shop.calc:plain", blob="oracles/blobs/none.json")], ["add_table"], 5, "no stored sample"),
        ([dict(TABLE, entry="shop.calc:slow", timeout_s=1)], ["add_table"], 5, "timeout_s"),
        ([dict(TABLE, entry="shop.calc:opaque")], ["add_table"], 5, "give the row a `project`"),
        ([dict(TABLE, kind="bound")], ["add_table"], 5, "row add_table: field min"),
        # A claim the approved code breaks on every sample: an empty blob would be written.
        (
            [
                {
                    "id": "add_table",
                    "entry": "shop.calc:picky",
                    "kind": "idempotent",
                    "args": [],
                    "repeat": 2,
                    "blob": "oracles/blobs/none.json",
                    "generate": {"count": 5, "state": {"int": [0, 9]}},
                }
            ],
            ["add_table", "--count", "5"],
            5,
            "record left out every sample",
        ),
        # Generators that cannot give a sample within the gate's limits.
        (
            [
                dict(
                    BOUND,
                    id="add_table",
                    generate={"count": 100000, "n": {"list": {"int": [0, 1]}, "len": [4096, 4096]}},
                )
            ],
            ["add_table"],
            5,
            "more than 10,000,000; lower count or the len ranges",
        ),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written(tmp_path, capsys, rows, args, code, message):
    repo = project(tmp_path, rows, {"oracles/blobs/add.json": [{"args": [1, 2], "expected": 3}]})
    before = repo.read("oracles/shop.toml")
    assert record(repo, *args, "--write") == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert repo.read("oracles/shop.toml") == before
    assert json.loads(repo.read("oracles/blobs/add.json")) == [{"args": [1, 2], "expected": 3}]


def test_write_refuses_a_symlinked_blob_folder_and_writes_nothing(tmp_path, capsys):
    repo = project(tmp_path, [dict(TABLE, blob="oracles/blobs/kept/add.json")], {})
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / "oracles" / "blobs").mkdir(parents=True, exist_ok=True)
    (repo.path / "oracles" / "blobs" / "kept").symlink_to(outside)
    before = repo.read("oracles/shop.toml")
    assert record(repo, "add_table", "--write") == 1
    err = capsys.readouterr().err
    assert "oracles/blobs/kept is a symlink: record writes oracles/blobs/kept/add.json only inside" in err
    assert list(outside.iterdir()) == [] and repo.read("oracles/shop.toml") == before


def test_a_new_blob_is_readable_by_all_like_a_checkout(tmp_path):
    repo = project(tmp_path, [TABLE], {"oracles/blobs/add.json": [{"args": [1, 2]}]})
    (repo.path / "oracles/blobs/add.json").unlink()
    (repo.path / "oracles/blobs/add.json").write_text(json.dumps([{"args": [1, 2]}]))
    (repo.path / "oracles/blobs/add.json").chmod(0o640)
    assert record(repo, "add_table", "--write", "--count", "0") == 0
    assert (repo.path / "oracles/blobs/add.json").stat().st_mode & 0o777 == 0o640
    assert (repo.path / "oracles/MANIFEST.sha256").stat().st_mode & 0o777 == 0o644
