"""Unit tests of runs/kept_root.py with a real bubblewrap root (skipped where bubblewrap cannot make
one): the root and its shell outlive a session, the next session with the same key attaches to
them, a daemon a command forked does not outlive the session while the named Bazel server does,
and a changed key, a session that raised, a check that never ended or `stop_all` end the root."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.kept_root import KEPT_LOOP, SUFFIX, KeptRoot, stop_all
from tools.oracle_gate.runs.sealed_root import sealed_root

ENV = {"PATH": "/usr/bin:/bin"}


@pytest.fixture
def folder(tmp_path):
    run = tmp_path / "runs" / "workspace-0"
    run.mkdir(parents=True)
    try:
        probe = sealed_root(str(run), ENV, [])
        subprocess.run(probe.wrap(["true"], str(run)), env=ENV, check=True, capture_output=True, timeout=60)
    except (GateError, subprocess.CalledProcessError) as exc:  # a machine without user namespaces
        pytest.skip(str(exc))
    yield run
    stop_all(str(run.parent))


def shell_pid(session) -> str:
    return session.run(["sh", "-c", "echo $PPID"]).stdout.strip()


def test_the_root_outlives_the_session_and_the_next_one_attaches(folder):
    kept = KeptRoot(str(folder))
    root = sealed_root(str(folder), ENV, [])
    with kept.session(root, str(folder), ENV) as s:
        first = shell_pid(s)
        assert s.run(["sh", "-c", "ls /proc | grep -c '^[0-9]'"]).returncode == 0
    pid = kept._first()
    assert pid is not None and not os.path.exists(Path(kept.channel) / "in-use")
    with kept.session(root, str(folder), ENV) as s:
        assert shell_pid(s) == first  # the same shell, in the same root
    assert kept._first() == pid
    assert stop_all(str(folder.parent)) == 1 and kept._first() is None
    assert not _alive(pid)


def test_a_changed_key_a_session_that_raised_or_never_ended_starts_a_new_root(folder):
    kept = KeptRoot(str(folder))
    root = sealed_root(str(folder), ENV, [])
    with kept.session(root, str(folder), ENV):
        pass
    first = kept._first()
    with kept.session(root, str(folder), dict(ENV, LANG="C")):  # another environment: another root
        pass
    second = kept._first()
    assert second != first and not _alive(first)
    with pytest.raises(RuntimeError), kept.session(root, str(folder), dict(ENV, LANG="C")):
        raise RuntimeError("the run failed")
    assert kept._first() is None and not _alive(second)
    with kept.session(root, str(folder), ENV):
        pass
    third = kept._first()
    (Path(kept.channel) / "in-use").write_text("1\n")  # a check killed while it ran
    with kept.session(root, str(folder), ENV):
        pass
    assert kept._first() not in (None, third) and not _alive(third)


def test_a_daemon_a_command_forked_dies_with_the_session_the_server_does_not(folder):
    kept = KeptRoot(str(folder))
    root = sealed_root(str(folder), ENV, [])
    start = "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"
    # A process that copies the shell's command line is not the shell.
    mimic = 'setsid /bin/sh -c "$0" </dev/null >/dev/null 2>&1 & echo $!'
    with kept.session(root, str(folder), ENV) as s:
        server = s.run(["sh", "-c", start]).stdout.strip()
        daemon = s.run(["sh", "-c", start]).stdout.strip()
        copy = s.run(["sh", "-c", mimic, KEPT_LOOP.replace("timeout 10800", "timeout 1000")]).stdout.strip()
        pid_file = folder / "bazel" / "0123" / "server" / "server.pid.txt"
        pid_file.parent.mkdir(parents=True)
        pid_file.write_text(server)
    with kept.session(root, str(folder), ENV) as s:
        alive = s.run(
            [
                "sh",
                "-c",
                f"kill -0 {server} && echo server; kill -0 {daemon} 2>/dev/null && echo daemon; "
                f"kill -0 {copy} 2>/dev/null && echo copy",
            ]
        )
        words = alive.stdout.split()
        assert words == ["server"], alive.stdout


def test_a_masked_folder_made_anew_is_another_root(folder, tmp_path):
    # The kernel drops a mask whose place was removed: a `.git` made anew would show in the old root.
    tree = tmp_path / "tree"
    (tree / ".git").mkdir(parents=True)
    (tree / ".git" / "config").write_text("token\n")
    root = sealed_root(str(folder), ENV, [str(tree / ".git")], trees=[str(tree)])
    kept = KeptRoot(str(folder))
    look = ["sh", "-c", f"cat {tree}/.git/config 2>&1"]
    with kept.session(root, str(folder), ENV) as s:
        assert "token" not in s.run(look).stdout
    first = kept._first()
    with kept.session(root, str(folder), ENV) as s:
        assert "token" not in s.run(look).stdout
    assert kept._first() == first  # attached: the same root, the mask in place
    (tree / ".git" / "config").unlink()
    (tree / ".git").rmdir()
    (tree / ".git").mkdir()  # whatever inode number it gets
    (tree / ".git" / "config").write_text("token\n")
    with kept.session(root, str(folder), ENV) as s:
        again = s.run(look).stdout
    assert kept._first() not in (None, first) and "token" not in again, again  # a new root, masking it again


def test_nothing_of_the_channel_is_inside_the_root(folder):
    kept = KeptRoot(str(folder))
    root = sealed_root(str(folder), ENV, [])
    with kept.session(root, str(folder), ENV) as s:
        seen = s.run(["sh", "-c", f"ls {kept.channel} 2>&1; ls {folder.parent}"]).stdout
    assert "No such file or directory" in seen and SUFFIX not in seen.split("\n", 1)[1]


def _alive(pid: int | None) -> bool:
    """True while `pid` runs (a zombie is not running); waits up to 5 s for a killed one to go."""
    deadline = time.monotonic() + 5
    while pid is not None and time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except OSError:
            return False
        time.sleep(0.05)
    return pid is not None
