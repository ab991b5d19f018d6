"""Test support: copy this workspace's files and run a nested Bazel on the copy."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def source_root() -> Path:
    """The real workspace: the runfile WORKSPACE resolves to it (these tests run unsandboxed)."""
    here = Path(os.environ["TEST_SRCDIR"]) / os.environ["TEST_WORKSPACE"] / "WORKSPACE"
    return Path(os.path.realpath(here)).parent


def copy_workspace(dest: Path) -> Path:
    """Copies the tracked and untracked-but-not-ignored files of the workspace to `dest`."""
    root = source_root()
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, stdout=subprocess.PIPE,
    ).stdout.split(b"\0")
    for rel in filter(None, listed):
        src = root / os.fsdecode(rel)
        if not src.exists() and not src.is_symlink():
            continue
        target = dest / os.fsdecode(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    return dest


def committed_copy(dest: Path) -> Path:
    """Copies the workspace to `dest` (see `copy_workspace`) and commits it as branch `main`."""
    ws = copy_workspace(dest)
    git(ws, "-c", "init.defaultBranch=main", "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "--no-gpg-sign", "-m", "base")
    return ws


def nested_env() -> dict[str, str]:
    """Environment for a nested Bazel: HOME in TEST_TMPDIR gives it its own output user root."""
    tmp = os.environ["TEST_TMPDIR"]
    return {"PATH": "/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "LANG": "C.UTF-8"}


def git(repo: Path, *args: str) -> str:
    env = nested_env() | {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                          "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
                          "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode()


def shutdown(workspace: Path) -> None:
    """Stops the nested Bazel server of `workspace`, if one runs."""
    subprocess.run(["bazel", "shutdown"], cwd=workspace, env=nested_env(), capture_output=True, check=False, timeout=120)
