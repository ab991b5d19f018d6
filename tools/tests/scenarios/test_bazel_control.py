"""What Bazel reads or runs before any sandbox exists is protected whatever the policy says: the
launcher's `tools/bazel` (a file, a link or a folder), the rc files and what they import or name
with %workspace%, the .bzl files WORKSPACE and MODULE.bazel load (transitively), and local
repositories. Each change below would run the change's code outside the sandbox, as the CI user;
each is exit 2 without the label, with the policy `init` writes."""

from __future__ import annotations

import os

import pytest

from tools.oracle_gate.authoring.init_text import policy
from tools.testing.gitrepo import IDS, junit


def init_policy(project) -> None:
    """The base (main) gets the policy `init` writes and the given Bazel control files."""
    project.git("checkout", "-q", "main")
    project.write("oracles/policy.toml", policy(["shop"]))
    project.write(
        ".bazelrc",
        "import %workspace%/ci/extra.bazelrc\nbuild --workspace_status_command=%workspace%/scripts/status.sh\n",
    )
    project.write("ci/extra.bazelrc", "try-import %workspace%/ci/more.bazelrc\n")
    project.write("ci/more.bazelrc", "build --jobs=2\n")
    project.write("scripts/status.sh", "#!/bin/sh\necho STABLE 1\n")
    project.write(
        "WORKSPACE",
        'load("//build_defs:deps.bzl", "deps")\nlocal_repository(name = "lib", path = "vendor/lib")\ndeps()\n',
    )
    project.write("build_defs/BUILD.bazel", "")
    project.write("build_defs/deps.bzl", 'load(":more.bzl", "more")\ndef deps():\n    more()\n')
    project.write("build_defs/more.bzl", "def more():\n    pass\n")
    project.write("build_defs/unused.bzl", "def unused():\n    pass\n")
    project.write("vendor/lib/WORKSPACE", "")
    project.write("vendor/lib/BUILD.bazel", "")
    project.write_manifest()
    project.commit("the policy init writes, and Bazel control files")
    project.git("checkout", "-q", "-B", "change")


def check(gate, project, tmp_path, *extra):
    results = junit(tmp_path, {i: "passed" for i in IDS})
    return gate("--repo", str(project.path), "check", "--base", "main", "--results", results, *extra)


@pytest.mark.parametrize("kind", ["file", "symlink", "folder"])
def test_a_launcher_wrapper_of_any_file_type_is_a_protected_change(gate, project, tmp_path, kind):
    init_policy(project)
    wrapper = project.path / "tools" / "bazel"
    wrapper.parent.mkdir(exist_ok=True)
    script = '#!/bin/sh\ntouch /tmp/wrapper-ran\nexec "$BAZEL_REAL" "$@"\n'
    if kind == "file":
        project.write("tools/bazel", script)
        wrapper.chmod(0o755)
    elif kind == "symlink":
        project.write("harness/wrap.sh", script)
        os.symlink("../harness/wrap.sh", wrapper)
    else:
        project.write("tools/bazel/bazel", script)
        (wrapper / "bazel").chmod(0o755)
    project.commit(f"a tools/bazel {kind}")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert "[2] tools/bazel" in out and "protected by 'tools/bazel" in out, out


@pytest.mark.parametrize(
    "path",
    [
        ".bazelversion",
        ".bazeliskrc",
        "user.bazelrc",
        "REPO.bazel",
        ".bazelignore",
        "WORKSPACE.bzlmod",
        "MODULE.bazel.lock",
    ],
)
def test_every_file_bazel_or_its_launcher_reads_first_is_protected(gate, project, tmp_path, path):
    init_policy(project)
    project.write(path, "7.0.0\n")
    project.commit(f"add {path}")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2 and f"[2] {path}: protected by {path!r}" in out, out


@pytest.mark.parametrize(
    "path",
    [
        "ci/extra.bazelrc",
        "ci/more.bazelrc",
        "scripts/status.sh",
        "build_defs/deps.bzl",
        "build_defs/more.bzl",
        "vendor/lib/BUILD.bazel",
        "vendor/lib/new.bzl",
    ],
)
def test_files_the_control_files_name_are_protected(gate, project, tmp_path, path):
    init_policy(project)
    project.write(path, "# run before the sandbox\n")
    project.commit(f"edit {path}")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2, out
    assert f"[2] {path}: protected by" in out, out
    code, out, _ = check(gate, project, tmp_path, "--label", "oracle-change")
    assert code == 0, out


def test_a_bzl_file_no_control_file_loads_stays_the_changes(gate, project, tmp_path):
    init_policy(project)
    project.write("build_defs/unused.bzl", "def unused():\n    return 1\n")
    project.commit("edit a .bzl nothing loads early")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 0, out


def test_a_reference_added_by_the_change_protects_what_it_names(gate, project, tmp_path):
    # HEAD's own WORKSPACE is a protected change already; the file it now loads is one too.
    init_policy(project)
    project.write("WORKSPACE", project.read("WORKSPACE").decode() + 'load("//build_defs:unused.bzl", "unused")\n')
    project.write("build_defs/unused.bzl", "def unused():\n    return 1\n")
    project.commit("load another file")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2
    assert "[2] WORKSPACE:" in out and "[2] build_defs/unused.bzl: protected by 'build_defs/unused.bzl'" in out, out


@pytest.mark.parametrize("path", ["sub/extra.rc", "tools_x/status.sh"])
def test_relative_rc_references_are_protected(gate, project, tmp_path, path):
    # Relative paths in rc files, which Bazel resolves from the workspace root.
    init_policy(project)
    project.git("checkout", "-q", "main")
    project.write(".bazelrc", project.read(".bazelrc").decode() + "try-import sub/extra.rc\n")
    project.write("sub/extra.rc", "build --workspace_status_command=tools_x/status.sh\n")
    project.write("tools_x/status.sh", "#!/bin/sh\necho STABLE 1\n")
    project.write_manifest()
    project.commit("relative rc references")
    project.git("checkout", "-q", "-B", "change")
    project.write(path, "# runs before the sandbox\n")
    project.commit(f"edit {path}")
    code, out, _ = check(gate, project, tmp_path)
    assert code == 2 and f"[2] {path}: protected by {path!r}" in out, out
