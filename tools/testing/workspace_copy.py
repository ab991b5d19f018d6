"""End-to-end test support: copy this workspace, commit it, and run a nested Bazel or the gate on it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.oracle_gate.runs.merged_tree import MERGED_TREE_STARTUP
from tools.testing.gitrepo import GIT_ENV


def source_root() -> Path:
    """The real workspace: the runfile WORKSPACE resolves to it (these tests run unsandboxed)."""
    here = Path(os.environ["TEST_SRCDIR"]) / os.environ["TEST_WORKSPACE"] / "WORKSPACE"
    return Path(os.path.realpath(here)).parent


def copy_workspace(dest: Path) -> Path:
    """Copies the tracked and untracked-but-not-ignored files of the workspace to `dest`."""
    root = source_root()
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        stdout=subprocess.PIPE,
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
    env = nested_env() | GIT_ENV
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True).stdout.decode()


def shutdown(workspace: Path) -> None:
    """Stops the nested Bazel server of `workspace`, and those of the gate's merge-result
    checkouts in the nested run folder (tools/oracle_gate/runs/merged_tree.py), if they run, and
    ends the kept roots of the sealed workspace runs there (`oracle-gate stop`)."""
    gate(workspace, "stop", cwd=source_root(), timeout=120)
    subprocess.run(
        ["bazel", "shutdown"], cwd=workspace, env=nested_env(), capture_output=True, check=False, timeout=120
    )
    runs = Path(nested_env()["HOME"]) / ".cache" / "oracle-gate" / "runs"
    for tree in sorted(runs.glob("merged-*/tree")):
        subprocess.run(
            ["bazel", *MERGED_TREE_STARTUP, "shutdown"],
            cwd=tree,
            env=nested_env(),
            capture_output=True,
            check=False,
            timeout=120,
        )


def gate(
    ws: Path, *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float = 1500
) -> subprocess.CompletedProcess[str]:
    """Runs `python3 -B -m tools.oracle_gate ARGS` from `cwd` (default: the copy `ws`) with
    `nested_env()` (or `env`), capturing text output; `timeout` in seconds. `-B`: the interpreter
    would otherwise cache the gate's bytecode in the copy before the gate's first line runs."""
    return subprocess.run(
        ["/usr/bin/python3", "-B", "-m", "tools.oracle_gate", *args],
        cwd=cwd or ws,
        env=dict(env) if env is not None else nested_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def bazel(ws: Path, *args: str, startup: Sequence[str] = (), timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """Runs `bazel STARTUP... ARGS` in `ws` with `nested_env()`, capturing text output; `timeout` in seconds."""
    return subprocess.run(
        ["bazel", *startup, *args],
        cwd=ws,
        env=nested_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
