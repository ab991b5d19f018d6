"""Cases where one problem must not hide or fake another, and where the gate meets its callers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools.oracle_gate.approval.globs import matches
from tools.oracle_gate.approval.policy import DEFAULT_PROTECTED
from tools.oracle_gate.check import run_check
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.testing.gitrepo import IDS, POLICY, blob_bytes, default_rows, junit, oracle_toml

BAZEL_FILES = [
    "WORKSPACE.bazel",
    "user.bazelrc",
    ".bazelignore",
    "MODULE.bazel",
    "MODULE.bazel.lock",
    "REPO.bazel",
    ".bazelrc",
    "WORKSPACE",
    "BUILD",
]


def failed_build(_repo, _env):
    return BazelRun(build_failed=True)


def test_pin_break_with_label_exits_5_even_when_the_harness_cannot_build(project):
    project.write("oracles/blobs/bound.json", blob_bytes([{"a": 9, "b": 9}]))
    project.write_manifest()
    project.commit("edit blob")
    report = run_check(str(project.path), "main", labels={"oracle-change"}, environ={}, workspace_runner=failed_build)
    assert report.exit_code == 5, [v.line() for v in report.violations]
    assert any(n.startswith("not judged while the oracles are invalid: [4]") for n in report.notes)


def test_unparseable_oracle_file_exits_5_not_3(gate, project, tmp_path):
    project.write("oracles/shop.toml", oracle_toml(default_rows()).replace('kind = "bound"', "kind = bound"))
    project.write_manifest()
    project.commit("broken toml")
    code, out, _ = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--label",
        "oracle-change",
        "--results",
        junit(tmp_path, {i: "passed" for i in IDS}),
    )
    assert code == 5, out
    assert "[3]" not in out
    assert "[5] oracles/shop.toml: is not valid TOML" in out


def test_labelled_change_may_add_a_production_package_with_its_rows(gate, project, tmp_path):
    project.write("oracles/policy.toml", POLICY.replace('["shop"]', '["shop", "shipping"]'))
    rows = default_rows() + [
        {
            "id": "ship_table",
            "entry": "shipping.rates:add",
            "kind": "exact_table",
            "blob": "oracles/blobs/table.json",
            "blob_sha256": default_rows()[2]["blob_sha256"],
        }
    ]
    project.write("oracles/shop.toml", oracle_toml(rows))
    project.write_manifest()
    project.commit("new package")
    results = junit(tmp_path, {**{i: "passed" for i in IDS}, "ship_table": "passed"})
    code, out, _ = gate(
        "--repo", str(project.path), "check", "--base", "main", "--label", "oracle-change", "--results", results
    )
    assert code == 0, out


def test_labels_match_case_insensitively(gate, project, tmp_path):
    project.write("oracles/shop.toml", oracle_toml(default_rows(max_=99)))
    project.write_manifest()
    project.commit("narrow")
    code, out, _ = gate(
        "--repo",
        str(project.path),
        "check",
        "--base",
        "main",
        "--label",
        "Oracle-Change",
        "--results",
        junit(tmp_path, {i: "passed" for i in IDS}),
    )
    assert code == 0, out


def test_bazel_control_files_are_protected_by_default_and_by_this_repository():
    policy = Path(__file__).resolve().parents[3] / "oracles" / "policy.toml"
    from tools.oracle_gate.approval.policy import parse_policy

    ours = parse_policy(policy.read_bytes()).protected
    for path in BAZEL_FILES:
        assert matches(path, DEFAULT_PROTECTED), path
        assert matches(path, ours), path


def test_dirty_work_tree_is_refused_before_running_the_harness(gate, project):
    project.commit("nothing")
    project.write("shop/calc.py", "def add(a, b):\n    return 0\n")
    called = []

    def runner(repo, env):
        called.append(repo)
        return BazelRun()

    try:
        run_check(str(project.path), "main", environ={}, workspace_runner=runner)
    except Exception as exc:  # noqa: BLE001
        assert exc.code == 1  # type: ignore[attr-defined]
        assert "the work tree differs from HEAD: shop/calc.py (bytes differ from the commit)" in str(exc)
    else:
        raise AssertionError("a dirty work tree must be refused")
    assert called == []


def test_untracked_file_is_refused_too(project):
    project.commit("nothing")
    project.write("shop/secret.env", "TOKEN=1\n")
    try:
        run_check(str(project.path), "main", environ={}, workspace_runner=failed_build)
    except Exception as exc:  # noqa: BLE001
        assert "shop/secret.env" in str(exc)
    else:
        raise AssertionError("an untracked file must be refused")


def test_empty_base_is_an_error(gate, project):
    code, _, err = gate("--repo", str(project.path), "check", "--base", "", "--results", "x")
    assert code == 1 and "--base is empty" in err


def test_options_after_the_subcommand(gate, project):
    code, out, _ = gate("manifest", "--check", "--repo", str(project.path), "--debug")
    assert (code, out.strip()) == (0, "oracles/MANIFEST.sha256 is current")


def test_non_utf8_file_name_under_oracles(gate, project):
    name = os.fsencode(str(project.path / "oracles" / "blobs")) + b"/\xff.json"
    with open(name, "wb") as f:
        f.write(b"[]")
    code, _, err = gate("--repo", str(project.path), "manifest", "--write")
    assert code == 5 and "has a name that is not UTF-8" in err
    assert not (project.path / "oracles" / "MANIFEST.sha256.tmp").exists()


def test_relative_paths_are_taken_from_where_bazel_run_was_started(tmp_path):
    junit(tmp_path, {"a": "passed"}, name="r.xml")
    root = Path(__file__).resolve().parents[3]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "BUILD_WORKING_DIRECTORY": str(tmp_path),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tools.oracle_gate", "compare", "r.xml", "r.xml"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stdout.strip()) == (
        0,
        "runs agree: 1 id(s), same outcomes and observation digests",
    ), proc.stderr


def test_the_default_protection_is_this_repositorys_policy():
    # policy.DEFAULT_PROTECTED is what the gate protects when no policy is readable (fail closed); it
    # must not drift from the list this repository's own policy ships with.
    policy = Path(__file__).resolve().parents[3] / "oracles" / "policy.toml"
    from tools.oracle_gate.approval.policy import DEFAULT_LABEL, parse_policy
    from tools.oracle_gate.authoring.init_text import package_build_globs

    ours = parse_policy(policy.read_bytes())
    # Besides them, ours protects its production package's BUILD files, as `init` writes for any.
    assert set(ours.protected) - set(package_build_globs(ours.production_packages)) == set(DEFAULT_PROTECTED)
    assert set(package_build_globs(ours.production_packages)) <= set(ours.protected)
    assert len(DEFAULT_PROTECTED) == len(set(DEFAULT_PROTECTED))
    assert ours.label == DEFAULT_LABEL
