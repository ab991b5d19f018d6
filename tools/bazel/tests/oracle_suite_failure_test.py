"""oracle_suite fails the build when a blob's bytes do not match the pin in its TOML row."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tools.bazel.tests.workspace_copy import copy_workspace


def bazel(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tmp = Path(os.environ["TEST_TMPDIR"])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "TMPDIR": str(tmp)}
    return subprocess.run(
        ["bazel", f"--output_user_root={tmp / 'bazel_root'}", "--batch", *args],
        cwd=workspace, env=env, capture_output=True, text=True, check=False, timeout=600,
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("bazel") is None:
        pytest.fail("bazel is not installed; run tools/setup.sh")
    return copy_workspace(tmp_path_factory.mktemp("ws"))


def test_untouched_blobs_build(workspace):
    proc = bazel(workspace, "build", "//oracles:oracles")
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_one_changed_byte_fails_the_build_naming_blob_and_hash(workspace):
    doc = tomllib.loads((workspace / "oracles/billing.toml").read_text())
    row = next(r for r in doc["invariant"] if r["id"] == "tax_round_half_even")
    blob = workspace / row["blob"]
    data = bytearray(blob.read_bytes())
    data[-2] = ord(" ") if data[-2] != ord(" ") else ord("\t")
    blob.write_bytes(bytes(data))
    proc = bazel(workspace, "build", "//...")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert (f"oracles/billing.toml: row tax_round_half_even: field blob_sha256: {row['blob']} does not match "
            f"its pin: expected sha256 {row['blob_sha256']}") in proc.stderr
