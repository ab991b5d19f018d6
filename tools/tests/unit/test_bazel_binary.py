"""tools/oracle_gate/runs/bazel_binary.py: the gate runs a Bazel binary it resolved itself, never the
launcher's workspace wrapper or Bazelisk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.bazel_binary import BAZEL_VARIABLE, resolve, wrapper_note

LAUNCHER = '#!/bin/bash\n# Bazel\'s launcher: runs tools/bazel when the workspace has one\nexec "$BAZEL_REAL" "$@"\n'


def executable(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o755)
    return path


def elf(path: Path) -> Path:
    return executable(path, b"\x7fELF" + b"\0" * 60)


def test_a_launcher_script_resolves_to_the_highest_versioned_binary_beside_it(tmp_path):
    executable(tmp_path / "bin" / "bazel", LAUNCHER.encode())
    elf(tmp_path / "bin" / "bazel-4")
    elf(tmp_path / "bin" / "bazel-7.1")
    executable(tmp_path / "bin" / "bazel-9", b"#!/bin/sh\n")  # a script, not a binary
    assert resolve({"PATH": str(tmp_path / "bin")}) == str(tmp_path / "bin" / "bazel-7.1")


def test_bazel_real_wins_over_versioned_binaries(tmp_path):
    executable(tmp_path / "bin" / "bazel", LAUNCHER.encode())
    elf(tmp_path / "bin" / "bazel-4")
    elf(tmp_path / "bin" / "bazel-real")
    assert resolve({"PATH": str(tmp_path / "bin")}) == str(tmp_path / "bin" / "bazel-real")


def test_a_binary_bazel_is_run_as_it_is_through_its_links(tmp_path):
    real = elf(tmp_path / "opt" / "bazel-7.7.1")
    (tmp_path / "bin").mkdir()
    os.symlink(real, tmp_path / "bin" / "bazel")
    assert resolve({"PATH": str(tmp_path / "bin")}) == str(real)


def test_bazelisk_is_refused(tmp_path):
    real = elf(tmp_path / "opt" / "bazelisk-linux-amd64")
    (tmp_path / "bin").mkdir()
    os.symlink(real, tmp_path / "bin" / "bazel")
    with pytest.raises(GateError, match=r"is Bazelisk .* set \$ORACLE_GATE_BAZEL") as info:
        resolve({"PATH": str(tmp_path / "bin")})
    assert info.value.code == 1


def test_a_script_with_no_binary_beside_it_is_refused(tmp_path):
    executable(tmp_path / "bin" / "bazel", LAUNCHER.encode())
    with pytest.raises(GateError, match=r"is a script with no Bazel binary beside it"):
        resolve({"PATH": str(tmp_path / "bin")})
    with pytest.raises(GateError, match="bazel is not installed"):
        resolve({"PATH": str(tmp_path / "empty")})


def test_the_variable_names_the_program_and_must_be_an_absolute_executable(tmp_path):
    chosen = executable(tmp_path / "my-bazel", b"#!/bin/sh\n")
    executable(tmp_path / "bin" / "bazel", LAUNCHER.encode())
    assert resolve({"PATH": str(tmp_path / "bin"), BAZEL_VARIABLE: str(chosen)}) == str(chosen)
    for bad in ("my-bazel", str(tmp_path / "missing"), str(tmp_path)):
        with pytest.raises(GateError, match=r"\$ORACLE_GATE_BAZEL is .*not the absolute path of an executable file"):
            resolve({"PATH": str(tmp_path / "bin"), BAZEL_VARIABLE: bad})


def test_this_machines_bazel_resolves_to_a_binary():
    try:
        found = resolve({"PATH": "/usr/bin:/bin"})
    except GateError:
        pytest.skip("no Bazel on /usr/bin")
    with open(found, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    assert os.path.basename(found) != "bazel" or Path("/usr/bin/bazel").read_bytes()[:2] != b"#!"


def test_a_folder_of_starlark_named_tools_bazel_gets_no_note(tmp_path):
    (tmp_path / "tools" / "bazel").mkdir(parents=True)
    (tmp_path / "tools" / "bazel" / "rules.bzl").write_text("")
    assert wrapper_note(str(tmp_path)) is None


@pytest.mark.parametrize("kind", ["file", "symlink", "symlink to a folder"])
def test_a_wrapper_file_or_link_is_named_in_the_report(tmp_path, kind):
    assert wrapper_note(str(tmp_path)) is None
    (tmp_path / "tools").mkdir()
    if kind == "file":
        executable(tmp_path / "tools" / "bazel", b"#!/bin/sh\n")
    elif kind == "symlink":
        os.symlink("/nonexistent", tmp_path / "tools" / "bazel")
    else:
        (tmp_path / "elsewhere").mkdir()
        os.symlink("../elsewhere", tmp_path / "tools" / "bazel")
    assert (
        wrapper_note(str(tmp_path))
        == "tools/bazel is in the tree and was not run: the gate runs the Bazel binary itself"
    )


@pytest.mark.parametrize("entry", ["", ".", "bin"])
def test_an_empty_or_relative_path_entry_is_never_searched(tmp_path, monkeypatch, entry):
    # Such an entry names the working directory, which may be the checked tree.
    planted = elf(tmp_path / (entry or ".") / "bazel") if entry else elf(tmp_path / "bazel")
    executable(tmp_path / "sys" / "bazel", LAUNCHER.encode())
    elf(tmp_path / "sys" / "bazel-4")
    monkeypatch.chdir(tmp_path)
    found = resolve({"PATH": f"{entry}:{tmp_path / 'sys'}"})
    assert found == str(tmp_path / "sys" / "bazel-4") and found != str(planted)
