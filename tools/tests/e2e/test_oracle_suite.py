"""oracle_suite fails the build when a blob's bytes do not match the pin in its TOML row."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tools.testing.workspace_copy import bazel as run_bazel
from tools.testing.workspace_copy import committed_copy, copy_workspace, nested_env



def bazel(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A batch-mode nested Bazel with its own output root, so no server outlives the test."""
    tmp = Path(os.environ["TEST_TMPDIR"])
    return run_bazel(workspace, *args, startup=(f"--output_user_root={tmp / 'bazel_root'}", "--batch"), timeout=600)


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


def test_a_converting_clone_keeps_the_pinned_bytes(tmp_path):
    # The repository's .gitattributes keeps oracles/ byte-exact whatever core.autocrlf says.
    origin = committed_copy(tmp_path / "origin")
    env = nested_env()
    subprocess.run(["git", "-c", "core.autocrlf=true", "-c", "core.eol=crlf", "clone", "-q", str(origin),
                    str(tmp_path / "crlf")], env=env, check=True)
    check = subprocess.run(["sha256sum", "--check", "--quiet", "oracles/MANIFEST.sha256"], cwd=tmp_path / "crlf",
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_crlf_converted_blob_is_named_as_a_conversion_not_a_re_pin(workspace):
    doc = tomllib.loads((workspace / "oracles/billing.toml").read_text())
    row = next(r for r in doc["invariant"] if r["id"] == "refund_is_idempotent")
    blob = workspace / row["blob"]
    original = blob.read_bytes()
    assert b"\n" in original and b"\r\n" not in original
    blob.write_bytes(original.replace(b"\n", b"\r\n"))
    try:
        proc = bazel(workspace, "build", "//oracles:oracles")
    finally:
        blob.write_bytes(original)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert (f"{row['blob']} does not match its pin: expected sha256 {row['blob_sha256']}") in proc.stderr
    assert "they are the pinned bytes, rewritten at checkout: line endings converted from LF to CRLF" in proc.stderr
    assert f"do not re-pin: restore the committed bytes with `git cat-file blob HEAD:{row['blob']} > {row['blob']}`" \
        in proc.stderr
