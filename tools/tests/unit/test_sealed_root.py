"""sealed_root.py: which host paths the clean run's sealed root shows, and the bwrap command line.

Making a real root needs a mount namespace of the host's (tools/tests/e2e/test_clean_run.py does);
here the choices and the command line are checked as data, and the failures as exit-1 errors.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.sealed_root import (
    SealedRoot,
    find_bwrap,
    local_paths,
    masks,
    named_paths,
    pip_settings,
    refuse_inside,
    sealed_root,
    system_entries,
)

SYSTEM = (("usr", None), ("bin", "usr/bin"), ("etc", None))


def seal(folder: str = "/runs/clean-1", read_only: tuple[str, ...] = (), masked: tuple[str, ...] = ()) -> SealedRoot:
    return SealedRoot("/usr/bin/bwrap", "bubblewrap 0.8.0", folder, read_only, SYSTEM, masked)


def test_local_paths_takes_absolute_paths_and_file_urls_that_exist(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels dir"
    wheels.mkdir()
    index = tmp_path / "simple"
    index.mkdir()
    values = [f"{tmp_path}/missing https://example.invalid/simple", f"file://{index} {wheels.as_uri()}", str(index)]
    assert local_paths(values) == [str(index), str(wheels)]


def test_local_paths_resolves_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert local_paths([str(tmp_path / "link")]) == [str(tmp_path / "real")]


def test_pip_settings_reads_the_variables_and_the_named_configuration_file(tmp_path: Path) -> None:
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nfind-links = /from/config\n[install]\nconstraint = /c.txt\n[other]\ncert = /no\n")
    values = pip_settings({"PIP_FIND_LINKS": "/from/env", "PIP_CONFIG_FILE": str(config), "UNRELATED": "/x"})
    assert "/from/env" in values and "/from/config" in values and "/c.txt" in values
    assert "/no" not in values and "/x" not in values


def test_pip_settings_ignores_a_malformed_configuration_file(tmp_path: Path) -> None:
    config = tmp_path / "pip.conf"
    config.write_bytes(b"not an ini file\xff\n[")
    assert "/from/env" in pip_settings({"PIP_FIND_LINKS": "/from/env", "PIP_CONFIG_FILE": str(config)})


@pytest.mark.parametrize("path", ["/repo", "/repo/wheels", "/repo/.git/objects"])
def test_a_read_only_path_in_the_repository_is_refused(path: str) -> None:
    with pytest.raises(GateError, match=f"name {path}, which lies in /repo"):
        refuse_inside([path], ["/repo"])


@pytest.mark.parametrize("path", ["/repository", "/re", "/opt/wheels"])
def test_a_read_only_path_beside_the_repository_is_allowed(path: str) -> None:
    refuse_inside([path], ["/repo"])


def test_a_guarded_path_under_a_shown_one_is_masked_unless_it_is_the_runs_own_or_gone(tmp_path: Path) -> None:
    usr, home, runs = tmp_path / "usr", tmp_path / "home" / "me", tmp_path / "runs" / "clean-1"
    for folder in (usr / "src" / "repo" / ".git", home / "repo", runs / "tree" / "oracles"):
        folder.mkdir(parents=True)
    guarded = [
        str(usr / "src" / "repo"),
        str(usr / "src" / "repo" / ".git"),
        str(usr / "src" / "gone"),
        str(home / "repo"),
        str(runs / "tree" / "oracles"),
    ]
    assert masks([str(usr), str(tmp_path / "etc")], guarded, str(runs)) == (guarded[0], guarded[1])
    assert masks([str(usr), str(home)], guarded, str(runs))[-1] == str(home / "repo")


def test_shows_is_the_runs_folder_only() -> None:
    s = seal()
    assert s.shows("/runs/clean-1") and s.shows("/runs/clean-1/tree/oracles")
    assert not s.shows("/runs/clean-10") and not s.shows("/runs") and not s.shows("/usr/bin")


def test_wrap_builds_the_root_then_mounts_proc_then_runs_the_command() -> None:
    argv = seal(read_only=("/opt/wheels",), masked=("/usr/src/repo",)).wrap(["bazel", "info"], "/runs/clean-1/tree")
    assert argv[0] == "/usr/bin/bwrap"
    joined = " ".join(argv)
    assert "--ro-bind /usr /usr --symlink usr/bin /bin --ro-bind /etc /etc --ro-bind /sys /sys" in joined
    # Shown paths come after the private /tmp, which would otherwise cover one that lies under /tmp.
    assert joined.index("--ro-bind /opt/wheels /opt/wheels") > joined.index("--tmpfs /tmp")
    # The mask comes after the binds it covers; the run's folder is the only writable bind.
    assert joined.index("--tmpfs /usr/src/repo") > joined.index("--ro-bind /usr /usr")
    assert (
        argv.count("--bind") == 1 and argv[argv.index("--bind") + 1 : argv.index("--bind") + 3] == ["/runs/clean-1"] * 2
    )
    for flag in ("--unshare-pid", "--die-with-parent", "--new-session", "--tmpfs", "--dev"):
        assert flag in argv
    assert argv[argv.index("--chdir") + 1] == "/runs/clean-1/tree"
    assert "--proc" not in argv  # a covered /proc would keep Bazel's linux-sandbox from mounting its own
    tail = argv[argv.index("--") + 1 :]
    assert tail[:2] == ["/bin/sh", "-c"] and "mount -t proc" in tail[2] and tail[-2:] == ["bazel", "info"]


def test_description_names_mechanism_version_and_what_the_root_holds() -> None:
    text = seal(read_only=("/opt/wheels",)).description()
    assert text.startswith("bubblewrap 0.8.0 (/usr/bin/bwrap): a root holding only the run's folder /runs/clean-1")
    assert "/usr, /etc, /opt/wheels, /sys read-only, a private /tmp and /dev" in text


def test_no_bwrap_on_path_is_an_exit_1_error(tmp_path: Path) -> None:
    with pytest.raises(GateError, match="`bwrap` is not on PATH; install bubblewrap") as raised:
        find_bwrap({"PATH": str(tmp_path)})
    assert raised.value.code == 1
    with pytest.raises(GateError, match="`bwrap` is not on PATH"):
        sealed_root(str(tmp_path), {"PATH": str(tmp_path)}, [])


def test_a_bwrap_that_cannot_make_the_root_is_an_exit_1_error_with_its_first_line(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 9.9'; exit 0; }\n"
        "echo 'bwrap: Creating new namespace failed: Operation not permitted' >&2\necho more >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(
        GateError,
        match="cannot make the clean run's sealed root here: bwrap: Creating new namespace "
        "failed: Operation not permitted$",
    ):
        sealed_root(str(tmp_path), {"PATH": str(fake.parent)}, [])


def test_system_entries_keep_symlinks_as_symlinks(tmp_path: Path) -> None:
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "etc").mkdir()
    (tmp_path / "bin").symlink_to("usr/bin")
    assert system_entries(str(tmp_path)) == (("usr", None), ("bin", "usr/bin"), ("etc", None))


def test_a_host_without_usr_cannot_be_sealed(tmp_path: Path) -> None:
    with pytest.raises(GateError, match="usr is not a directory"):
        system_entries(str(tmp_path))


def test_this_hosts_usr_is_a_directory() -> None:
    assert ("usr", None) in system_entries() and os.path.isdir("/usr")


def test_named_paths_are_real_absolute_paths_that_exist(tmp_path: Path) -> None:
    (tmp_path / "gate").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "gate")
    assert (
        named_paths({"ORACLE_GATE_SEAL_READ_ONLY": f"{tmp_path / 'link'}::{tmp_path / 'gate'}"})
        == [str(tmp_path / "gate")] * 2
    )
    assert named_paths({}) == []
    for bad in ("relative/path", str(tmp_path / "missing")):
        with pytest.raises(GateError, match="ORACLE_GATE_SEAL_READ_ONLY: .* is not an absolute path that exists"):
            named_paths({"ORACLE_GATE_SEAL_READ_ONLY": bad})


def test_a_named_path_inside_the_repository_is_refused_before_bwrap_runs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "oracles").mkdir(parents=True)
    with pytest.raises(
        GateError,
        match="ORACLE_GATE_SEAL_READ_ONLY settings, or a local repository of the "
        "workspace, name .*/repo/oracles, which lies in",
    ):
        sealed_root(
            str(tmp_path),
            {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ORACLE_GATE_SEAL_READ_ONLY": str(repo / "oracles")},
            [str(repo)],
        )


def test_pip_paths_are_blockable_and_named_paths_are_not(tmp_path: Path) -> None:
    wheels, gate_copy = tmp_path / "wheels", tmp_path / "oracle-gate"
    wheels.mkdir()
    gate_copy.mkdir()
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'bubblewrap 9.9'\nexit 0\n")
    fake.chmod(0o755)
    seal = sealed_root(
        str(tmp_path),
        {"PATH": str(fake.parent), "PIP_FIND_LINKS": str(wheels), "ORACLE_GATE_SEAL_READ_ONLY": str(gate_copy)},
        [],
    )
    assert str(wheels) in seal.blockable and str(gate_copy) not in seal.blockable
    assert str(wheels) in seal.read_only and str(gate_copy) in seal.read_only
