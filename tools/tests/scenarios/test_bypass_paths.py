"""Paths git can hide: every way the committed tree, git's diff and the bytes a test reads can differ."""

from __future__ import annotations

import os
import subprocess

import pytest

from tools.oracle_gate.check import run_check
from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.bazel_run import BazelRun
from tools.oracle_gate.runs.results import Observed
from tools.testing.gitrepo import IDS, junit


def check(gate, repo, tmp_path, *extra):
    results = junit(tmp_path, {i: "passed" for i in IDS})
    return gate("--repo", str(repo.path), "check", "--base", "main", "--results", results, *extra)


def test_git_mv_oracle_file_into_harness_counts_as_an_oracles_change(gate, project, tmp_path):
    project.git("mv", "oracles/shop.toml", "harness/rows.toml")
    project.commit("move the oracle")
    # With rename detection, `git diff --name-only` would show only harness/rows.toml.
    assert "oracles/" not in project.git("diff", "--name-only", "-M", "main", "HEAD")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert "[2] oracles/shop.toml: protected by 'oracles/**' and changed (D)" in out


def test_copy_of_an_oracle_file_with_edits_is_seen_at_both_paths(gate, project, tmp_path):
    data = project.read("oracles/shop.toml")
    project.write("harness/rows.toml", data)
    project.write("oracles/shop.toml", data + b"\n# edited\n")
    project.commit("copy and edit")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2 and "[2] oracles/shop.toml:" in out


def test_non_ascii_path_under_oracles_is_not_missed(gate, project, tmp_path):
    project.write("oracles/blöb.toml", b"# notes\n")
    project.commit("non-ascii")
    assert '"oracles/bl\\303\\266b.toml"' in project.git(
        "-c", "core.quotepath=true", "diff", "--name-only", "main", "HEAD"
    )
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2
    assert "[2] oracles/blöb.toml: protected by 'oracles/**'" in out


def test_blob_committed_as_a_symlink_to_a_harness_file(gate, project, tmp_path):
    data = project.read("oracles/blobs/table.json")
    project.write("harness/table.json", data)
    os.remove(project.path / "oracles/blobs/table.json")
    os.symlink("../../harness/table.json", project.path / "oracles/blobs/table.json")
    project.commit("blob becomes a symlink")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2
    code, out, _ = check(gate, project, tmp_path, "--label", "oracle-change")
    assert code == 5
    assert "oracles/blobs/table.json is a symlink; blobs must be regular files under oracles/blobs/" in out


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("harness/rows.toml", "../oracles/shop.toml"),
        ("harness/blobs", "../oracles/blobs"),
        ("harness/all", ".."),
        ("harness/gate.py", "../tools/gate.py"),
        ("harness/abs", "/etc/passwd"),
        ("harness/out", "../../outside"),
    ],
)
def test_symlink_elsewhere_pointing_into_protected_content(gate, project, tmp_path, link, target):
    os.symlink(target, project.path / link)
    project.commit("symlink")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert f"[2] {link}: is a symlink to {target!r}" in out


def test_symlink_chain_into_oracles(gate, project, tmp_path):
    os.symlink("../oracles", project.path / "harness/a")
    os.symlink("a/shop.toml", project.path / "harness/b")
    project.commit("chain")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2 and "[2] harness/b: is a symlink to 'a/shop.toml', reaching 'oracles/shop.toml'" in out


def test_harmless_symlink_is_allowed(gate, project, tmp_path):
    os.symlink("calc.py", project.path / "shop/alias.py")
    project.commit("alias")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 0, out


@pytest.mark.parametrize(
    "path",
    ["Oracles/shop.toml", "ORACLES/new.json", "oracles./x.toml", "oracles /x.toml", "TOOLS/gate.py", "Tools/x.py"],
)
def test_spelling_variants_of_protected_paths(gate, project, tmp_path, path):
    project.write(path, b"x = 1\n")
    project.commit("variant spelling")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert f"[2] {path}: protected by" in out


def test_a_similar_but_different_path_is_not_protected(gate, project, tmp_path):
    decomposed = "to\u0301ols/x.py"  # not 'tools': a different word; must stay unprotected
    project.write(decomposed, b"")
    project.commit("unrelated")
    assert check(gate, project, tmp_path)[0] == 0


def test_submodule_added_anywhere(gate, project, tmp_path):
    head = project.git("rev-parse", "HEAD").strip()
    project.git("update-index", "--add", "--cacheinfo", f"160000,{head},vendor/lib")
    project.git("commit", "-q", "--no-gpg-sign", "-m", "gitlink without .gitmodules")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2
    assert "[2] vendor/lib: is a submodule; its content is invisible to the gate" in out


def test_file_mode_change_under_oracles(gate, project, tmp_path):
    os.chmod(project.path / "oracles/blobs/table.json", 0o755)
    project.commit("exec bit")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2 and "[2] oracles/blobs/table.json: protected by 'oracles/**' and changed (M)" in out


# `$Id$` is expanded by a checkout whose `.gitattributes` gives the file `ident`: the committed
# bytes (which the gate judges) say 2, every checkout 1.
TAX = 'RATE = "$Id$"\n\n\ndef apply_rate(cents, rate):\n    return 1 if len(RATE) > 4 else 2\n'


@pytest.mark.parametrize(
    ("path", "attributes"),
    [
        ("billing/.gitattributes", "tax.py ident\n"),
        (".gitattributes", "oracles/** filter=lie\n"),
        ("billing/deep/er/.gitattributes", "* ident\n"),
        ("billing/.GitAttributes", "* ident\n"),  # a case-insensitive checkout reads it as .gitattributes
    ],
)
def test_every_gitattributes_is_protected_though_the_policy_does_not_list_it(gate, project, tmp_path, path, attributes):
    assert ".gitattributes" not in project.read("oracles/policy.toml").decode()
    project.write("billing/tax.py", TAX)
    project.write(path, attributes)
    project.commit("attributes")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert (
        f"[2] {path}: protected by '**/.gitattributes' and changed (A) without the 'oracle-change' label"
        in out.splitlines()
    )
    assert "billing/tax.py" not in out  # production code stays the change's to write


def test_a_labelled_nested_gitattributes_passes_the_protected_paths_check_with_a_note(gate, project, tmp_path):
    project.write("billing/tax.py", TAX)
    project.write("billing/.gitattributes", "tax.py ident\n")
    project.commit("attributes")
    code, out, _ = check(gate, project, tmp_path, "--label", "oracle-change")
    assert code == 0, out
    assert "ok    protected paths     2 changed path(s), 1 protected, label 'oracle-change' present" in out
    assert "1 protected path(s) changed under the 'oracle-change' label" in out.splitlines()
    # The human approved it; the report says which bytes a checkout writes otherwise.
    assert (
        "checkout conversion: billing/.gitattributes line 1 gives 'tax.py' ident ($Id$ expanded): a checkout "
        "writes other bytes than the committed ones the gate judged"
    ) in out.splitlines()


def _base_with(project, path: str, data: str) -> None:
    """Commits `path` on the change branch and moves main there: the base holds it."""
    project.write(path, data)
    project.commit(f"base: {path}")
    project.git("branch", "-f", "main", "HEAD")


def test_a_nested_gitattributes_deleted_or_renamed_is_a_protected_change(gate, project, tmp_path):
    _base_with(project, "billing/.gitattributes", "tax.py -ident\n")
    os.remove(project.path / "billing/.gitattributes")
    project.commit("drop attributes")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert (
        "[2] billing/.gitattributes: protected by '**/.gitattributes' and changed (D) without the 'oracle-change' label"
    ) in out.splitlines()
    project.write("billing/attributes.txt", "tax.py -ident\n")
    project.commit("renamed")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2 and "[2] billing/.gitattributes: protected by '**/.gitattributes' and changed (D)" in out


def test_a_gitattributes_committed_as_a_symlink_is_a_protected_change(gate, project, tmp_path):
    project.write("harness/attributes", "tax.py ident\n")
    (project.path / "billing").mkdir()
    os.symlink("../harness/attributes", project.path / "billing/.gitattributes")
    project.commit("linked attributes")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert (
        "[2] billing/.gitattributes: protected by '**/.gitattributes' and changed (A) without the 'oracle-change' label"
    ) in out.splitlines()


def test_a_symlinked_folder_is_no_gitattributes_change(gate, project, tmp_path):
    # Git tracks no path beyond a symlink, so a linked folder gives it no attributes file: only
    # the attributes files of the tree itself count.
    project.write("vendor/lib.py", "X = 1\n")
    os.symlink("../vendor", project.path / "shop/vendored")
    project.commit("linked folder")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 0, out


def _no_run(_repo, _env):
    raise AssertionError("the harness must not run on a tree that differs from HEAD")


def test_smudge_filter_makes_work_tree_bytes_differ_from_the_commit(project):
    project.commit("nothing")
    project.git("config", "filter.lie.smudge", "sed s/3/4/")
    project.git("config", "filter.lie.clean", "sed s/4/3/")
    (project.path / ".git/info/attributes").write_text("oracles/blobs/*.json filter=lie\n")
    os.remove(project.path / "oracles/blobs/table.json")
    project.git("checkout", "--", "oracles/blobs/table.json")
    assert b'"expected": 4' in project.read("oracles/blobs/table.json")
    assert project.git("status", "--porcelain") == ""  # git itself sees no change
    with pytest.raises(GateError, match=r"oracles/blobs/table.json \(bytes differ from the commit\)"):
        run_check(str(project.path), "main", environ={}, workspace_runner=_no_run)


def test_ignored_file_a_build_glob_could_read_is_refused(project):
    project.write(".gitignore", "*.local.py\n")
    project.commit("ignore rule")
    project.write("shop/override.local.py", "def add(a, b):\n    return 0\n")
    with pytest.raises(GateError, match=r"shop/override.local.py \(ignored, but a BUILD glob could read it\)"):
        run_check(str(project.path), "main", environ={}, workspace_runner=_no_run)


def test_bazel_leftovers_are_not_a_difference(project):
    project.write(".gitignore", "/bazel-*\n__pycache__/\n")
    project.commit("ignore bazel")
    os.symlink("/nonexistent", project.path / "bazel-out")
    (project.path / "shop/__pycache__").mkdir()
    (project.path / "shop/__pycache__/calc.cpython-311.pyc").write_bytes(b"")
    report = run_check(
        str(project.path),
        "main",
        environ={},
        workspace_runner=lambda _r, _e: BazelRun(observed={i: Observed("passed") for i in IDS}),
    )
    assert report.exit_code == 0, [v.line() for v in report.violations]


def test_shallow_clone_without_merge_base(gate, project, tmp_path):
    project.write("shop/calc.py", "# change 1\n")
    project.commit("c1")
    project.write("shop/calc.py", "# change 2\n")
    project.commit("c2")
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", "change", f"file://{project.path}", str(clone)], check=True
    )
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--depth", "1", "origin", "main:main"], check=True)
    code, _, err = gate("--repo", str(clone), "check", "--base", "main", "--results", junit(tmp_path, {}))
    assert code == 1
    assert "no merge base between the base and HEAD in this shallow clone; fetch more history" in err
    assert "git fetch --unshallow" in err
