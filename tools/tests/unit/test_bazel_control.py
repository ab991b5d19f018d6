"""tools/oracle_gate/runs/bazel_control.py: the files a tree's Bazel control files make Bazel read or run
before any sandbox exists."""

from __future__ import annotations

from pathlib import Path

from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.runs.bazel_control import control_globs


def globs(tmp_path: Path, files: dict[str, str]) -> tuple[str, ...]:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    tree = WorkTree(str(tmp_path))
    return control_globs(tree, tree.files(""))


def test_rc_imports_are_followed_and_workspace_paths_protected(tmp_path):
    found = globs(
        tmp_path,
        {
            ".bazelrc": "import %workspace%/ci/a.bazelrc\ntry-import %workspace%/user.bazelrc\n"
            "import /etc/outside.bazelrc\nbuild --credential_helper=%workspace%/tools_x/helper\n",
            "ci/a.bazelrc": "try-import %workspace%/ci/b.bazelrc\n",
            "ci/b.bazelrc": "build --workspace_status_command=%workspace%/status.sh\n",
            "user.bazelrc": "build --override_repository=x=%workspace%/vendor/x\n",
        },
    )
    assert found == (
        "ci/a.bazelrc",
        "ci/b.bazelrc",
        "status.sh",
        "status.sh/**",
        "tools_x/helper",
        "tools_x/helper/**",
        "user.bazelrc",
        "vendor/x",
        "vendor/x/**",
    )


def test_loads_are_followed_through_bzl_files_in_every_label_spelling(tmp_path):
    found = globs(
        tmp_path,
        {
            "WORKSPACE": 'load("//defs:a.bzl", "a")\nload("@//defs:b.bzl", "b")\nload("@rules_x//:x.bzl", "x")\n'
            'register_toolchains("//defs:toolchain")\nhttp_archive(name = "y", build_file = "//defs:y.BUILD")\n',
            "MODULE.bazel": 'ext = use_extension("@@//ext:ext.bzl", '
            '"ext")\nlocal_path_override(module_name = "m", path = "third/m")\n',
            "defs/a.bzl": 'load(":c.bzl", "c")\n',
            "defs/b.bzl": "",
            "defs/c.bzl": 'load("//defs/deeper:d.bzl", "d")\n',
            "defs/deeper/d.bzl": "",
            "ext/ext.bzl": "",
        },
    )
    assert found == (
        "defs/a.bzl",
        "defs/b.bzl",
        "defs/c.bzl",
        "defs/deeper/d.bzl",
        "ext/ext.bzl",
        "third/m",
        "third/m/**",
    )


def test_paths_that_leave_the_repository_and_loops_are_harmless(tmp_path):
    found = globs(
        tmp_path,
        {
            ".bazelrc": "import %workspace%/../outside.bazelrc\nimport %workspace%/.bazelrc\n",
            "WORKSPACE": 'local_repository(name = "o", path = "/opt/o")\nlocal_repository(name = "p", path = "../p")\n'
            'load("//:loop.bzl", "x")\n',
            "loop.bzl": 'load("//:loop.bzl", "x")\n',
        },
    )
    assert found == (".bazelrc", "loop.bzl")


def test_a_tree_without_control_files_protects_nothing_more(tmp_path):
    assert globs(tmp_path, {"shop/x.py": "", "defs/a.bzl": ""}) == ()


def test_relative_rc_paths_resolved_from_the_workspace_root_count_too(tmp_path):
    # Bazel takes `try-import sub/extra.rc` and `--workspace_status_command=tools/status.sh` from
    # the workspace root; comments and words that name no file of the tree protect nothing.
    found = globs(
        tmp_path,
        {
            ".bazelrc": "# see billing/tax.py\ntry-import sub/extra.rc\nbuild --define=x=billing\n",
            "sub/extra.rc": "build --workspace_status_command=tools/status.sh\nbuild --credential_helper='helper.sh'\n",
            "tools/status.sh": "",
            "helper.sh": "",
            "billing/tax.py": "",
        },
    )
    assert found == ("helper.sh", "sub/extra.rc", "tools/status.sh")
