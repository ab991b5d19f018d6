"""init.py and the `init` command, on generated repositories: what it writes, and that a second
run changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.oracle_gate.errors import UsageError
from tools.oracle_gate.authoring.init import BEGIN, init
from tools.testing.gitrepo import GitRepo


def bazel_repo(path: Path, control: str, text: str) -> GitRepo:
    repo = GitRepo(path)
    repo.write(control, text)
    repo.write(".bazelrc", "build --jobs=4\n")  # no trailing blank line: init keeps it and appends
    repo.write("shop/__init__.py", "")
    return repo


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


def test_workspace_repository_gets_every_file_once(tmp_path, gate):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE", 'workspace(name = "shop")\n')
    code, out, err = gate("--repo", str(repo.path), "init", "--package", "shop", "--dep", "//shop")
    assert code == 0, err
    for rel in ("oracles/policy.toml", "oracles/BUILD.bazel", "oracles/example.toml.sample", "WORKSPACE", ".bazelrc",
                "oracles/MANIFEST.sha256"):
        assert f"init: wrote {rel}" in out
    assert 'production_packages = ["shop"]' in repo.read("oracles/policy.toml").decode()
    assert 'deps = ["//shop"]' in repo.read("oracles/BUILD.bazel").decode()
    workspace = repo.read("WORKSPACE").decode()
    assert workspace.startswith('workspace(name = "shop")\n\n' + BEGIN) and 'local_repository(name = "oracle_gate"' in workspace
    assert repo.read(".bazelrc").decode().startswith("build --jobs=4\n\n" + BEGIN)
    before = snapshot(repo.path)
    code, out, _ = gate("--repo", str(repo.path), "init", "--package", "shop")
    assert code == 0 and "init: nothing to do; the gate is set up" in out and "wrote" not in out
    assert snapshot(repo.path) == before
    assert gate("--repo", str(repo.path), "manifest", "--check")[0] == 0


def test_module_repository_gets_the_bazel_dep(tmp_path):
    repo = bazel_repo(tmp_path / "shop", "MODULE.bazel", 'module(name = "shop")')
    result = init(str(repo.path), "/opt/oracle-gate", [], [])
    assert "MODULE.bazel" in result.written
    module = repo.read("MODULE.bazel").decode()
    assert module.startswith('module(name = "shop")\n\n' + BEGIN)
    assert 'local_path_override(module_name = "oracle_gate", path = "/opt/oracle-gate")' in module
    assert "production_packages = []" in repo.read("oracles/policy.toml").decode()


def test_existing_oracle_files_are_kept(tmp_path):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE", "")
    repo.write("oracles/policy.toml", "# mine\n")
    result = init(str(repo.path), "/g", ["shop"], [])
    assert "oracles/policy.toml" in result.kept and repo.read("oracles/policy.toml") == b"# mine\n"


@pytest.mark.parametrize(("packages", "deps", "message"), [
    ([], [], "has no MODULE.bazel or WORKSPACE"),
    (["not-a-package"], [], "is not a Python package name"),
    ([], ['//shop"'], "is not a label"),
])
def test_bad_input_is_exit_1(tmp_path, packages, deps, message):
    repo = GitRepo(tmp_path / "plain")
    if packages or deps:
        repo.write("WORKSPACE", "")
    with pytest.raises(UsageError, match=message):
        init(str(repo.path), "/g", packages, deps)
