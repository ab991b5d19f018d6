"""runs/sealed_session.py: the tree is written before the root is sealed, the repository is hidden,
and the session's folder is removed whatever happens."""

from __future__ import annotations

import contextlib
import os

import pytest

from tools.oracle_gate.errors import GateError
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
