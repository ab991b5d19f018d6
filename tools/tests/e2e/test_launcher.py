"""Nothing from the checked tree chooses or wraps the program that runs Bazel.

Debian's `/usr/bin/bazel` is Bazel's launcher script: in a workspace with an executable file
`tools/bazel` it runs that file instead of Bazel, outside any sandbox, as the user who runs the
gate. The control below shows the launcher doing so; the gate, run on the same repository with
the label (so the protected-path check lets the wrapper through), resolves the Bazel binary itself
and never runs the wrapper, and its report says so.

It needs a nested Bazel because the launcher under test is Bazel's own, and the gate's check on the
same repository runs Bazel itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools.oracle_gate.authoring.init_text import policy
from tools.testing.workspace_copy import gate, git, nested_env, source_root

WRAPPER = """#!/bin/sh
echo "$@" >> {marker}
exec "$BAZEL_REAL" "$@"
"""


@pytest.fixture
def wrapped(tmp_path: Path) -> tuple[Path, Path]:
    """A repository set up as `init` sets one up (its policy), whose main holds no wrapper and whose
    HEAD adds an executable `tools/bazel` that records each run in a marker file."""
    repo = tmp_path / "repo"
    marker = tmp_path / "wrapper-ran"
    (repo / "oracles").mkdir(parents=True)
    (repo / "oracles" / "policy.toml").write_text(policy(["shop"]))
    (repo / "WORKSPACE").write_text('workspace(name = "wrapped")\n')
    (repo / "BUILD.bazel").write_text("")
    (repo / "shop").mkdir()
    (repo / "shop" / "__init__.py").write_text("")
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", "base")
    git(repo, "checkout", "-q", "-b", "wrapper")
    (repo / "tools").mkdir()
    (repo / "tools" / "bazel").write_text(WRAPPER.format(marker=marker))
    (repo / "tools" / "bazel").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", "a tools/bazel wrapper")
    return repo, marker


def test_the_launcher_runs_the_wrapper_but_the_gate_never_does(wrapped, tmp_path):
    repo, marker = wrapped
    env = nested_env()
    # Control: through the launcher, even `bazel --version` runs the wrapper first.
    proc = subprocess.run(
        ["bazel", "--version"], cwd=repo, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    if not marker.exists():
        pytest.skip(f"`bazel` on {env['PATH']} is not Bazel's launcher script here: {proc.stdout}{proc.stderr}")
    marker.unlink()
    unlabelled = gate(repo, "--repo", str(repo), "check", "--base", "main", cwd=source_root())
    assert unlabelled.returncode == 2, unlabelled.stdout + unlabelled.stderr[-3000:]
    assert "[2] tools/bazel: protected by 'tools/bazel'" in unlabelled.stdout
    labelled = gate(
        repo, "--repo", str(repo), "check", "--base", "main", "--label", "oracle-change", "--verbose", cwd=source_root()
    )
    assert not marker.exists(), marker.read_text()
    assert "tools/bazel is in the tree and was not run: the gate runs the Bazel binary itself" in labelled.stdout, (
        labelled.stdout + labelled.stderr[-3000:]
    )
    assert "running /usr/bin/bazel-" in labelled.stderr or "running /" in labelled.stderr, labelled.stderr[-3000:]
    git(repo, "checkout", "-q", "main")
    gate(repo, "stop", cwd=source_root())
    subprocess.run(["bazel", "shutdown"], cwd=repo, env=env, capture_output=True, check=False, timeout=120)
