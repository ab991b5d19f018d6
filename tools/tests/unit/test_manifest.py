"""The manifest: generated from oracles/ only, verifiable with sha256sum, checked and rewritten."""

from __future__ import annotations

import subprocess

from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.suite.manifest import MANIFEST_PATH, manifest_problems, render


def test_sha256sum_accepts_the_manifest(project):
    proc = subprocess.run(
        ["sha256sum", "--check", "--strict", MANIFEST_PATH],
        cwd=project.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "oracles/shop.toml: OK" in proc.stdout


def test_the_manifest_lists_every_id_with_its_file(project):
    lines = [line for line in project.read(MANIFEST_PATH).decode().splitlines() if line.startswith("# invariant ")]
    assert lines == [
        "# invariant add_table oracles/shop.toml",
        "# invariant norm_is_idempotent oracles/shop.toml",
        "# invariant sum_in_range oracles/shop.toml",
    ]


def test_manifest_does_not_list_itself_and_lists_every_other_file(project):
    text = render(WorkTree(str(project.path)))
    paths = [line.split("  ", 1)[1] for line in text.splitlines() if not line.startswith("#")]
    assert MANIFEST_PATH not in paths
    assert paths == sorted(paths)
    assert "oracles/policy.toml" in paths and "oracles/blobs/bound.json" in paths


def test_stale_manifest_message(project):
    project.write("oracles/blobs/new.json", b"[]")
    [problem] = manifest_problems(WorkTree(str(project.path)))
    assert problem.code == 5
    assert str(problem).startswith("oracles/MANIFEST.sha256: is stale (1 differing lines, first: '+")
    assert str(problem).endswith(
        "`bazel run @oracle_gate//tools:oracle_gate -- manifest --write`) in a change labelled oracle-change"
    )


def test_manifest_cli_write_then_check(gate, project):
    project.write("oracles/blobs/new.json", b"[]")
    code, _, err = gate("--repo", str(project.path), "manifest", "--check")
    assert code == 5 and "[5] oracles/MANIFEST.sha256: is stale" in err
    code, out, _ = gate("--repo", str(project.path), "manifest", "--write")
    assert (code, out.strip()) == (0, "wrote oracles/MANIFEST.sha256 (12 lines)")
    code, out, _ = gate("--repo", str(project.path), "manifest", "--check")
    assert (code, out.strip()) == (0, "oracles/MANIFEST.sha256 is current")


def test_missing_manifest(project):
    (project.path / MANIFEST_PATH).unlink()
    [problem] = manifest_problems(WorkTree(str(project.path)))
    assert str(problem).startswith("oracles/MANIFEST.sha256: is missing; run the gate's manifest command")
