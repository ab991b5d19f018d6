"""init.py and the `init` command, on generated repositories: what it writes in each mode, that it
writes no absolute path of this machine, and that a second run changes no byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.oracle_gate.approval.policy import parse_policy
from tools.oracle_gate.authoring.init import BEGIN, END, Setup, choose_mode, gate_path_for, init
from tools.oracle_gate.authoring.init_text import AGENT_INSTRUCTIONS
from tools.oracle_gate.errors import UsageError
from tools.testing.gitrepo import GitRepo


def bazel_repo(path: Path, control: str | None, text: str = "") -> GitRepo:
    repo = GitRepo(path)
    if control:
        repo.write(control, text)
    repo.write(".bazelrc", "build --jobs=4\n")  # no trailing blank line: init keeps it and appends
    repo.write("shop/__init__.py", "")
    return repo


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def setup(mode: str, major: int = 4, debian: bool = True) -> Setup:
    return Setup(mode, major, "../oracle-gate", debian)


def test_workspace_repository_gets_every_file_once(tmp_path, gate):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE", 'workspace(name = "shop")\n')
    code, out, err = gate("--repo", str(repo.path), "init", "--package", "shop", "--dep", "//shop", "--bazel", "4")
    assert code == 0, err
    for rel in (
        "WORKSPACE",
        ".bazelrc",
        ".gitignore",
        ".gitattributes",
        "oracles/policy.toml",
        "oracles/BUILD.bazel",
        "oracles/example.toml.sample",
        "oracles/MANIFEST.sha256",
    ):
        assert f"init: wrote {rel}" in out
    assert 'production_packages = ["shop"]' in repo.read("oracles/policy.toml").decode()
    assert 'deps = ["//shop"]' in repo.read("oracles/BUILD.bazel").decode()
    workspace = repo.read("WORKSPACE").decode()
    gate_path = os.path.relpath(Path(__file__).resolve().parents[3], repo.path.resolve())
    assert workspace.startswith('workspace(name = "shop")\n\n' + BEGIN)
    assert f'local_repository(name = "oracle_gate", path = "{gate_path}")' in workspace
    assert repo.read(".bazelrc").decode().startswith("build --jobs=4\n\n" + BEGIN)
    before = snapshot(repo.path)
    code, out, _ = gate("--repo", str(repo.path), "init", "--package", "shop", "--bazel", "4")
    assert code == 0 and "init: nothing to do; the gate is set up" in out and "wrote" not in out
    assert snapshot(repo.path) == before
    assert gate("--repo", str(repo.path), "manifest", "--check")[0] == 0


def test_a_second_run_does_not_bring_back_what_the_owner_removed(tmp_path):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE")
    init(str(repo.path), setup("workspace"), ["shop"], [])
    os.remove(repo.path / "oracles" / "example.toml.sample")
    before = snapshot(repo.path)
    result = init(str(repo.path), setup("workspace"), ["shop"], [])
    assert result.written == [] and snapshot(repo.path) == before


@pytest.mark.parametrize("mode, major", [("workspace", 4), ("workspace", 7), ("bzlmod", 7)])
def test_a_repository_with_neither_file_gets_one_and_no_absolute_path_of_this_machine(tmp_path, mode, major):
    repo = bazel_repo(tmp_path / "My-Shop", None)
    result = init(str(repo.path), setup(mode, major), ["shop"], ["//shop"])
    control = "MODULE.bazel" if mode == "bzlmod" else "WORKSPACE"
    assert control in result.written
    head = repo.read(control).decode().splitlines()[0]
    assert head == ('module(name = "my_shop")' if mode == "bzlmod" else 'workspace(name = "my_shop")')
    for path in repo.path.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            text = path.read_text()
            assert str(tmp_path) not in text and "/root" not in text and "/home" not in text, path
    bazelrc = repo.read(".bazelrc").decode()
    assert "build --nosandbox_debug" in bazelrc
    assert ("common --enable_workspace" in bazelrc) == (mode == "workspace" and major >= 7)
    assert ("common --noenable_workspace" in bazelrc) == (mode == "bzlmod")
    if mode == "bzlmod":
        assert "--override_module" not in bazelrc  # the machine's Bazel gives the stand-ins (bazel7.sh)
        assert (
            'local_path_override(module_name = "oracle_gate", path = "../oracle-gate")' in repo.read(control).decode()
        )
    else:
        workspace = repo.read(control).decode()
        assert 'register_toolchains("@oracle_gate//tools/bazel/toolchains:python_toolchain")' in workspace
        for name in ("rules_cc", "remote_coverage_tools", "rules_java"):
            assert f'local_repository(name = "{name}"' in workspace
    assert "/bazel-*" in repo.read(".gitignore").decode()
    assert "/oracles/** -text -eol -ident -filter -working-tree-encoding" in repo.read(".gitattributes").decode()


def test_stand_ins_a_workspace_declares_already_are_not_declared_again(tmp_path):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE", 'local_repository(name = "rules_cc", path = "vendor/cc")\n')
    init(str(repo.path), setup("workspace"), [], [])
    assert repo.read("WORKSPACE").decode().count('name = "rules_cc"') == 1


def test_a_module_that_depends_on_rules_python_keeps_its_own(tmp_path):
    repo = bazel_repo(
        tmp_path / "shop",
        "MODULE.bazel",
        'module(name = "shop")\nbazel_dep(name = "rules_python", version = "0.31.0")\n',
    )
    init(str(repo.path), setup("bzlmod", 7), [], [])
    module = repo.read("MODULE.bazel").decode()
    assert module.count('bazel_dep(name = "rules_python"') == 1 and module.index(BEGIN) < module.index(END)


def test_blocks_go_between_markers_after_what_the_files_hold(tmp_path):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE")
    repo.write(".gitignore", "*.pyc")
    init(str(repo.path), setup("workspace"), [], [])
    assert repo.read(".gitignore").decode().startswith("*.pyc\n\n" + BEGIN)


def test_the_default_policy_protects_the_agent_instruction_files_and_is_valid(tmp_path):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE")
    init(str(repo.path), setup("workspace"), ["shop"], [])
    policy = repo.read("oracles/policy.toml").decode()
    for path in AGENT_INSTRUCTIONS:
        assert f'"{path}",' in policy
    assert set(AGENT_INSTRUCTIONS) <= set(parse_policy(policy.encode()).protected)


def test_the_default_policy_protects_the_production_packages_build_files_not_their_code(tmp_path):
    from tools.oracle_gate.approval.globs import matches

    repo = bazel_repo(tmp_path / "shop", "WORKSPACE")
    init(str(repo.path), setup("workspace"), ["shop", "store"], [])
    protected = parse_policy(repo.read("oracles/policy.toml")).protected
    for path in ("shop/BUILD.bazel", "shop/sub/BUILD", "store/defs.bzl"):
        assert matches(path, protected), path
    for path in ("shop/prices.py", "shop/sub/__init__.py", "harness/BUILD.bazel"):
        assert not matches(path, protected), path


def test_a_production_library_under_src_has_its_build_files_protected_by_its_label(tmp_path):
    from tools.oracle_gate.approval.globs import matches

    repo = bazel_repo(tmp_path / "shop", "WORKSPACE")
    init(str(repo.path), setup("workspace"), ["humanize"], ["//src/humanize", "//src/more:lib", "//:root"])
    protected = parse_policy(repo.read("oracles/policy.toml")).protected
    for path in ("src/humanize/BUILD.bazel", "src/humanize/sub/BUILD", "src/more/defs.bzl", "humanize/BUILD"):
        assert matches(path, protected), path
    for path in ("src/humanize/number.py", "src/BUILD.bazel", "harness/BUILD.bazel"):
        assert not matches(path, protected), path


@pytest.mark.parametrize(
    "files, asked, major, mode",
    [
        ({"MODULE.bazel": ""}, None, 4, "bzlmod"),
        ({"WORKSPACE.bazel": ""}, None, 7, "workspace"),
        ({}, None, 7, "bzlmod"),
        ({}, None, 4, "workspace"),
        ({}, "workspace", 7, "workspace"),
    ],
)
def test_the_mode_follows_the_repository_then_the_flag_then_the_bazel(tmp_path, files, asked, major, mode):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert choose_mode(str(tmp_path), asked, major) == mode


def test_a_mode_that_contradicts_the_repository_is_exit_1(tmp_path):
    (tmp_path / "WORKSPACE").write_text("")
    with pytest.raises(UsageError, match="already uses Bazel in workspace mode"):
        choose_mode(str(tmp_path), "bzlmod", 7)


def test_the_gate_path_is_relative_to_the_repository(tmp_path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "oracle-gate").mkdir()
    assert gate_path_for(str(tmp_path / "shop"), str(tmp_path / "oracle-gate"), None) == "../oracle-gate"
    assert gate_path_for(str(tmp_path / "shop"), "/x", "third_party/oracle-gate") == "third_party/oracle-gate"
    with pytest.raises(UsageError, match="relative to the repository"):
        gate_path_for(str(tmp_path / "shop"), "/x", "/opt/oracle-gate")


@pytest.mark.parametrize(
    ("packages", "deps", "message"),
    [
        (["not-a-package"], [], "is not a Python package name"),
        ([], ['//shop"'], "is not a label"),
    ],
)
def test_bad_input_is_exit_1(tmp_path, packages, deps, message):
    repo = GitRepo(tmp_path / "plain")
    with pytest.raises(UsageError, match=message):
        init(str(repo.path), setup("workspace"), packages, deps)


@pytest.mark.parametrize("rules", [".*\n", ".*\noracles/\n*.toml\n", "*\n!shop/\n!shop/**\n"])
def test_files_the_repository_ignores_are_re_included_inside_inits_block(tmp_path, gate, rules):
    # Libraries often ignore every dotfile; some ignore more. What init writes must be committable.
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE", 'workspace(name = "shop")\n')
    repo.write(".gitignore", rules)
    code, out, err = gate("--repo", str(repo.path), "init", "--package", "shop", "--dep", "//shop", "--bazel", "4")
    assert code == 0, err
    assert "init: note: the repository's ignore rules excluded .bazelrc (.gitignore:" in out, out
    text = repo.read(".gitignore").decode()
    block = text[text.index(BEGIN) : text.index(END)]
    assert "!/.bazelrc\n" in block and "!/.gitattributes\n" in block, text
    repo.git("add", "-A")
    staged = set(repo.git("diff", "--cached", "--name-only").split())
    for rel in (
        ".bazelrc",
        ".gitattributes",
        ".gitignore",
        "WORKSPACE",
        "oracles/policy.toml",
        "oracles/BUILD.bazel",
        "oracles/MANIFEST.sha256",
        "oracles/example.toml.sample",
    ):
        assert rel in staged, (rel, text)
    assert "shop/__init__.py" in staged  # the owner's own rules stand for everything else
    repo.commit("gate")
    before = snapshot(repo.path)
    code, out, _ = gate("--repo", str(repo.path), "init", "--package", "shop", "--bazel", "4")
    assert code == 0 and "nothing to do" in out and snapshot(repo.path) == before, out


def test_a_file_a_negation_cannot_re_include_is_a_note_naming_the_rule(tmp_path, gate):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE", 'workspace(name = "shop")\n')
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "exclude").write_text("oracles/BUILD.bazel\n")
    repo.write("oracles/.gitignore", "*.sample\n")
    code, out, err = gate("--repo", str(repo.path), "init", "--package", "shop", "--dep", "//shop", "--bazel", "4")
    assert code == 0, err
    assert "init: note: oracles/example.toml.sample is still ignored (oracles/.gitignore:1:*.sample)" in out, out
    assert "`git add -f oracles/example.toml.sample`" in out
    # .git/info/exclude ranks below every .gitignore: the block's negation re-includes that one.
    assert "oracles/BUILD.bazel is still ignored" not in out
    assert "oracles/BUILD.bazel" in repo.git("ls-files", "--others", "--exclude-standard").split()


def test_negations_re_include_each_folder_on_the_way():
    from tools.oracle_gate.authoring.init import negations

    assert negations([".bazelrc", "oracles/policy.toml", "oracles/blobs/x.json"]) == [
        "!/.bazelrc",
        "!/oracles/",
        "!/oracles/policy.toml",
        "!/oracles/blobs/",
        "!/oracles/blobs/x.json",
    ]


def test_negations_match_only_the_file_they_name(tmp_path):
    from tools.oracle_gate.authoring.init import ignored, negations

    repo = GitRepo(tmp_path / "r")
    names = ["oracles/a[1].toml", "oracles/x*y.toml", "oracles/a1.toml", "oracles/xzzy.toml"]
    for rel in names:
        repo.write(rel, "")
    repo.write(".gitignore", "*.toml\n" + "".join(line + "\n" for line in negations(names[:2])))
    assert set(ignored(str(repo.path), names)) == {"oracles/a1.toml", "oracles/xzzy.toml"}


def test_a_package_with_data_files_gets_them_as_data_and_dist_flags_on_a_kept_build_are_a_note(tmp_path, gate):
    repo = bazel_repo(tmp_path / "shop", "WORKSPACE", 'workspace(name = "shop")\n')
    repo.write("shop/rates.txt", "0.2\n")
    code, out, err = gate(
        "--repo",
        str(repo.path),
        "init",
        "--package",
        "shop",
        "--bazel",
        "4",
        "--dist-name",
        "shop",
        "--dist-version",
        "1.0",
    )
    assert code == 0, err
    build = repo.read("shop/BUILD.bazel").decode()
    assert 'data = glob(["**/*"], exclude = ["**/*.py"' in build and 'version = "1.0",' in build, build
    code, out, _ = gate("--repo", str(repo.path), "init", "--package", "shop", "--bazel", "4", "--dist-version", "2.0")
    assert (
        "init: note: --dist-name and --dist-version go into the BUILD files init writes; shop/BUILD.bazel exists "
        "already: edit its py_dist_info" in out
    ), out
    assert 'version = "1.0",' in repo.read("shop/BUILD.bazel").decode()
