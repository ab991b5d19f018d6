"""oracle_suite fails the build when a blob's bytes do not match the pin in its TOML row, and when a
reference library depends on anything outside oracles/; the reference runs with the standard
library, the gate's caller and oracles/ alone on its Python path. It needs a nested Bazel because
the rule's refusals are build failures only Bazel's analysis and actions can show."""

from __future__ import annotations

import json
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


# Appended to the reference module: on import, in the OracleReference action, it prints what the
# reference's Python path holds to the reference log.
PATH_PROBE = """
import importlib.util as _util, json as _json, os as _os, sys as _sys, sysconfig as _sysconfig

def _files(root):
    return sorted(_os.path.relpath(_os.path.join(d, f), root) for d, _, names in _os.walk(root) for f in names)

print("PATH-PROBE " + _json.dumps({
    "path": _sys.path, "no_site": _sys.flags.no_site, "stdlib": _sysconfig.get_paths()["stdlib"],
    "runfiles": {p: _files(p) for p in _sys.path if p.endswith(".runfiles")},
    "found": [n for n in ("billing", "harness", "pytest", "hypothesis") if _util.find_spec(n) is not None],
}), flush=True)
"""


def test_the_reference_runs_with_the_standard_library_the_gate_and_oracles_alone(workspace):
    module = workspace / "oracles/reference/billing_ref.py"
    original = module.read_text()
    module.write_text(original + PATH_PROBE)
    try:
        proc = bazel(workspace, "build", "//oracles:oracles")
    finally:
        module.write_text(original)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (workspace / "bazel-bin/oracles/_sealed/oracles.reference.log").read_text()
    probes = [json.loads(line.split(" ", 1)[1]) for line in log.splitlines() if line.startswith("PATH-PROBE ")]
    assert probes, log[-3000:]
    for probe in probes:
        assert probe["no_site"] == 1 and probe["found"] == [], probe
        ((root, files),) = probe["runfiles"].items()  # the runfiles root, and the main repository's folder
        assert root.endswith("/oracles/_sealed/oracles.reference_caller.runfiles"), probe
        stdlib = os.path.dirname(probe["stdlib"])  # /usr/lib: python3.11, python311.zip, lib-dynload
        for entry in probe["path"]:
            assert entry.startswith(root) or entry.startswith(stdlib + "/python3"), entry
            assert "site-packages" not in entry and "dist-packages" not in entry, entry
        code = [f for f in files if f.endswith(".py") and not f.endswith("/__init__.py")]
        gate = {"oracle_gate/tools/oracle_gate/actions/observe.py", "oracle_gate/tools/oracle_gate/actions/caller.py"}
        assert set(code) - gate == {"oracle_gate/oracles/reference/billing_ref.py"}, files
        assert {f.split("/", 1)[0] for f in files} - {"MANIFEST"} == {"oracle_gate"}, files  # no other repository


def test_a_reference_with_a_dependency_outside_oracles_fails_the_suite_in_one_line(workspace):
    build = workspace / "oracles/BUILD.bazel"
    original = build.read_text()
    build.write_text(
        original.replace('    imports = [".."],\n', '    imports = [".."],\n    deps = ["//billing"],\n', 1)
    )
    try:
        proc = bazel(workspace, "build", "//oracles:oracles")
    finally:
        build.write_text(original)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert (
        "Error in fail: oracle-gate: [5] //oracles:oracles: references: //oracles:reference depends on "
        "//billing, outside oracles/; a reference may use only oracles/ and the standard library\n"
    ) in proc.stderr


def test_one_changed_byte_fails_the_build_naming_blob_and_hash(workspace):
    doc = tomllib.loads((workspace / "oracles/billing.toml").read_text())
    row = next(r for r in doc["invariant"] if r["id"] == "tax_round_half_even")
    blob = workspace / row["blob"]
    data = bytearray(blob.read_bytes())
    data[-2] = ord(" ") if data[-2] != ord(" ") else ord("\t")
    blob.write_bytes(bytes(data))
    proc = bazel(workspace, "build", "//...")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert (
        f"oracles/billing.toml: row tax_round_half_even: field blob_sha256: {row['blob']} does not match "
        f"its pin: expected sha256 {row['blob_sha256']}"
    ) in proc.stderr


def test_a_converting_clone_keeps_the_pinned_bytes(tmp_path):
    # The repository's .gitattributes keeps oracles/ byte-exact whatever core.autocrlf says.
    origin = committed_copy(tmp_path / "origin")
    env = nested_env()
    subprocess.run(
        ["git", "-c", "core.autocrlf=true", "-c", "core.eol=crlf", "clone", "-q", str(origin), str(tmp_path / "crlf")],
        env=env,
        check=True,
    )
    check = subprocess.run(
        ["sha256sum", "--check", "--quiet", "oracles/MANIFEST.sha256"],
        cwd=tmp_path / "crlf",
        capture_output=True,
        text=True,
        check=False,
    )
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
    assert (
        f"do not re-pin: restore the committed bytes with `git cat-file blob HEAD:{row['blob']} > {row['blob']}`"
        in proc.stderr
    )
