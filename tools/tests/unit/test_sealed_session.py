"""runs/sealed_session.py: the tree is written before the root is sealed, the repository is hidden,
the fresh session's folder is removed whatever happens, and a kept session keeps its root and server
for the next one until a session raises or did not end."""

from __future__ import annotations

import contextlib
import os

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs import blocks
from tools.oracle_gate.runs import sealed_session as module


@pytest.fixture
def seen(tmp_path, monkeypatch):
    """Records what sealed_root and session_launcher were given, without bwrap or Bazel."""
    found: dict[str, object] = {}

    def fake_root(folder, env, hidden, local):
        found["tree_at_seal"] = sorted(os.listdir(os.path.join(folder, "tree")))
        found["hidden"] = hidden
        found["env"] = env
        return "ROOT"

    @contextlib.contextmanager
    def fake_launcher(root, tree, env, startup):
        found["startup"] = startup
        yield f"launcher on {os.path.basename(tree)}"

    monkeypatch.setattr(module, "sealed_root", fake_root)
    monkeypatch.setattr(module, "session_launcher", fake_launcher)
    monkeypatch.setattr(module, "repository_blocks", lambda repo: [])
    (tmp_path / "cache" / "runs").mkdir(parents=True)
    monkeypatch.setattr(module, "runs_dir", lambda environ: str(tmp_path / "cache" / "runs"))
    monkeypatch.setattr(blocks, "runs_dir", lambda environ: str(tmp_path / "cache" / "runs"))
    found["environ"] = {"PATH": "/usr/bin"}
    return found


def test_the_tree_is_filled_before_the_seal_and_everything_is_removed(tmp_path, seen):
    repo = tmp_path / "repo"
    repo.mkdir()
    with module.sealed_session(
        str(repo), seen["environ"], "probe-", lambda t: open(os.path.join(t, "f"), "w").close(), ["/g"]
    ) as s:
        assert s.launcher == "launcher on tree" and os.path.isfile(os.path.join(s.tree, "f"))
        root = s.root
        assert os.path.basename(root).startswith("probe-")
    assert seen["tree_at_seal"] == ["f"]
    assert str(repo.resolve()) in seen["hidden"] and "/g" in seen["hidden"]
    assert any(flag.startswith("--output_user_root=" + root) for flag in seen["startup"])
    assert not os.path.exists(root)


def test_a_fill_that_fails_leaves_nothing_and_starts_nothing(tmp_path, seen):
    def broken(tree):
        raise GateError("cannot write the tree")

    with (
        pytest.raises(GateError, match="cannot write the tree"),
        module.sealed_session(str(tmp_path), seen["environ"], "hidden-", broken),
    ):
        pass
    assert "startup" not in seen
    runs = [p for p in (tmp_path / "cache").rglob("hidden-*")]
    assert runs == []


class FakeKept:
    """Stands for kept_root.KeptRoot: records sessions and ends; `unclean` as the test sets it."""

    log: list[str] = []
    was_unclean = False

    def __init__(self, folder):
        self.folder = folder

    def unclean(self):
        return FakeKept.was_unclean

    def end(self):
        FakeKept.log.append("end")

    @contextlib.contextmanager
    def session(self, root, cwd, env):
        FakeKept.log.append(f"session in {os.path.basename(cwd)}")
        yield "SESSION"


@pytest.fixture
def kept(seen, monkeypatch):
    FakeKept.log = []
    FakeKept.was_unclean = False
    monkeypatch.setattr(module, "KeptRoot", FakeKept)
    return FakeKept


def write(name):
    return lambda tree: open(os.path.join(tree, name), "w").close()


def test_a_kept_session_keeps_its_folder_and_hands_the_last_tree_to_fill(tmp_path, seen, kept):
    # `fill` makes the tree exact (pristine.sync_tree), leaving files alike in place for the server.
    repo = tmp_path / "repo"
    repo.mkdir()
    with module.kept_session(str(repo), seen["environ"], "probe-base", write("first")) as s:
        folder = os.path.dirname(s.tree)
        os.makedirs(os.path.join(folder, "bazel", "base"))
        open(os.path.join(s.root, "log"), "w").close()
    tree_inode = os.stat(os.path.join(folder, "tree")).st_ino
    given = []

    def fill(tree):
        given.append(sorted(os.listdir(tree)))
        os.remove(os.path.join(tree, "first"))
        write("second")(tree)

    with module.kept_session(str(repo), seen["environ"], "probe-base", fill) as s:
        assert given == [["first"]]
        assert os.listdir(s.tree) == ["second"] and os.listdir(s.root) == []
        assert os.stat(s.tree).st_ino == tree_inode  # the folder the root shows is the same one
        assert os.path.isdir(os.path.join(folder, "bazel", "base"))  # the output base stays warm
    assert os.path.basename(folder).startswith("probe-base-") and str(repo.resolve()) in seen["hidden"]
    assert "--output_user_root=" + os.path.join(folder, "bazel") in s.launcher.startup_flags
    assert kept.log == ["session in tree", "session in tree"]


def test_sides_never_share_a_folder(tmp_path, seen, kept):
    folders = []
    for name in ("probe-base", "probe-judged"):
        with module.kept_session(str(tmp_path), seen["environ"], name, write("f")) as s:
            folders.append(os.path.dirname(s.tree))
    assert folders[0] != folders[1]


def test_a_kept_session_that_raises_ends_the_root_and_removes_the_output_root(tmp_path, seen, kept):
    folder = str(tmp_path / "none")
    with (
        pytest.raises(GateError, match="refused"),
        module.kept_session(str(tmp_path), seen["environ"], "probe-judged", write("f")) as s,
    ):
        folder = os.path.dirname(s.tree)
        os.makedirs(os.path.join(folder, "bazel", "base"))
        raise GateError("the probe refused its results")
    assert kept.log[-1] == "end" and not os.path.exists(os.path.join(folder, "bazel"))


def test_after_a_session_that_did_not_end_the_next_starts_anew(tmp_path, seen, kept):
    with module.kept_session(str(tmp_path), seen["environ"], "probe-judged", write("f")) as s:
        folder = os.path.dirname(s.tree)
        os.makedirs(os.path.join(folder, "bazel", "base"))
    kept.was_unclean = True
    with module.kept_session(str(tmp_path), seen["environ"], "probe-judged", write("f")) as s:
        assert not os.path.exists(os.path.join(folder, "bazel"))
    assert kept.log == ["session in tree", "end", "session in tree"]
