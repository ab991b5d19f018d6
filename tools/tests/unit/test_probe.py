"""probe.py without Bazel: the tree it writes (the commit's files, its own `oracles/`, build files
the commit lacks and never a Python source) and the replies it reads back (never through a link)."""

from __future__ import annotations

import json
import os

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.probe import read_replies, write_probe_tree
from tools.testing.gitrepo import GitRepo


@pytest.fixture
def repo(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write("shop/calc.py", "def add(a, b):\n    return a + b\n")
    repo.write("oracles/shop.toml", "committed rows")
    repo.write(".env", "SECRET=1")
    commit = repo.commit("base")
    repo.write("shop/calc.py", "work tree code")
    return repo, commit


def test_the_tree_is_the_commits_with_the_probes_oracles(repo, tmp_path):
    repo, commit = repo
    tree = tmp_path / "tree"
    tree.mkdir()
    write_probe_tree(str(repo.path), commit, {"oracles/a.toml": b"rows"}, {"BUILD.bazel": b"# b"}, str(tree))
    assert (tree / "shop/calc.py").read_text().startswith("def add")
    assert (tree / "oracles/a.toml").read_bytes() == b"rows"
    assert not (tree / "oracles/shop.toml").exists()
    assert not (tree / ".env").exists()
    assert (tree / "BUILD.bazel").read_bytes() == b"# b"


@pytest.mark.parametrize(
    ("oracles", "extra", "message"),
    [
        ({}, {"shop/extra.py": b""}, "takes only build files the commit lacks"),
        ({}, {"shop/calc.py": b""}, "takes only build files the commit lacks"),
        ({"shop/x.toml": b""}, {}, "must lie under oracles/"),
        ({"oracles/../x": b""}, {}, "refusing to write"),
    ],
)
def test_what_the_probe_refuses_to_write(repo, tmp_path, oracles, extra, message):
    repo, commit = repo
    tree = tmp_path / "tree"
    tree.mkdir()
    with pytest.raises(GateError, match=message):
        write_probe_tree(str(repo.path), commit, oracles, extra, str(tree))


def test_replies_are_read_from_regular_files_only(tmp_path):
    folder = tmp_path / "bin" / "oracles"
    folder.mkdir(parents=True)
    (folder / "a_test.observations.json").write_text(json.dumps({"rows": [{"id": "r", "reply": "{}"}]}))
    (folder / "a_test.hidden_observations.json").write_text(json.dumps({"rows": [{"id": "h", "reply": "{}"}]}))
    assert read_replies(str(tmp_path / "bin")) == {"r": {"id": "r", "reply": "{}"}}
    os.symlink("/etc/passwd", folder / "b_test.observations.json")
    with pytest.raises(GateError, match="b_test.observations.json is not an observations file"):
        read_replies(str(tmp_path / "bin"))


@pytest.mark.parametrize("row", ["{", "[" * 100_000 + "]" * 100_000], ids=["truncated", "over-nested"])
def test_a_row_that_is_not_json_is_one_refusal_not_a_crash(tmp_path, row):
    # A file the server collected through a symlinked output folder can hold anything.
    folder = tmp_path / "bin" / "oracles"
    folder.mkdir(parents=True)
    (folder / "a_test.observations.json").write_text(json.dumps({"rows": [row]}))
    with pytest.raises(GateError, match="a_test.observations.json is not an observations file"):
        read_replies(str(tmp_path / "bin"))


def test_only_the_base_tips_probe_is_kept(monkeypatch):
    from tools.oracle_gate.check.behaviour_phase import probe_runner
    from tools.oracle_gate.runs import probe as module

    seen = []
    monkeypatch.setattr(module, "probe", lambda repo, commit, files, environ, kept_as="": seen.append(kept_as) or {})
    run = probe_runner()
    run("/repo", "base", {}, {}, "base")
    run("/repo", "judged", {}, {}, "judged")
    assert seen == ["probe-base", ""]
