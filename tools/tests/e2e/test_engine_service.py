"""`oracle_gate engine start|status|stop` (tools/engine/service.py).

With stand-in processes: the recorded state, a stale state, stopping by pid (also what ignores
SIGTERM), an unreadable state file. Then the real engine on loopback: `start` twice, `status`,
`check --clean --remote` on a copy of this repository with the exported endpoint, `stop`, and
every process it started gone.

It needs a nested Bazel for its one `check --clean --remote`, whose runs Bazel sends to the engine."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.engine import service
from tools.engine.engine import EngineError, pid_alive
from tools.testing.workspace_copy import gate, nested_env


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections, as a running engine's does."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def sleeper(*argv: str, ignore_term: bool = False) -> subprocess.Popen[bytes]:
    """A stand-in process whose command line ends with `argv` (what identifies the engine's
    processes); with `ignore_term`, one that only SIGKILL stops."""
    code = "import signal, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('ready', flush=True)\ntime.sleep(600)\n"
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def record(folder: Path, port: int, supervisor: int, **pids: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / service.STATE_FILE).write_text(
        json.dumps({"target": f"grpc://127.0.0.1:{port}", "supervisor": supervisor, "pids": pids, "started": 0.0})
    )


def reap(*procs: subprocess.Popen[bytes]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_status_reports_a_recorded_engine_only_while_it_runs_and_listens(tmp_path, listener):
    env = {service.STATE_DIR_VARIABLE: str(tmp_path)}
    assert service.status(env) is None  # no state at all
    supervisor = sleeper("service.py", "serve", "--state", str(tmp_path))
    try:
        record(tmp_path, listener, supervisor.pid, worker=supervisor.pid)
        found = service.status(env)
        assert found is not None and found.target == f"grpc://127.0.0.1:{listener}"
        record(tmp_path, 1, supervisor.pid)  # nothing listens on port 1
        assert service.status(env) is None
    finally:
        reap(supervisor)
    record(tmp_path, listener, supervisor.pid)  # the supervisor is gone
    assert service.status(env) is None


def test_stop_ends_every_recorded_process_by_pid_also_one_that_ignores_sigterm(tmp_path, listener, monkeypatch):
    monkeypatch.setattr(service, "STOP_TIMEOUT_S", 2.0)
    supervisor = sleeper("service.py", "serve", "--state", str(tmp_path))
    stubborn = sleeper("worker.py", ignore_term=True)
    try:
        record(tmp_path, listener, supervisor.pid, worker=stubborn.pid)
        # Parent-reaped children turn into zombies, which count as gone; reap them as they end.
        stopped = service.stop({service.STATE_DIR_VARIABLE: str(tmp_path)})
        assert sorted(stopped) == sorted([supervisor.pid, stubborn.pid])
        assert supervisor.wait(timeout=10) == -signal.SIGTERM
        assert stubborn.wait(timeout=10) == -signal.SIGKILL
        assert not (tmp_path / service.STATE_FILE).exists()
    finally:
        reap(supervisor, stubborn)
    assert service.stop({service.STATE_DIR_VARIABLE: str(tmp_path)}) == []  # nothing recorded: nothing to do


def test_a_pid_the_system_gave_to_another_process_is_never_signalled(tmp_path, listener):
    # The engine died and its pids were reused: neither "supervisor" nor "worker" is the engine's.
    stranger, other = sleeper(), sleeper("not-the-worker")
    try:
        record(tmp_path, listener, stranger.pid, worker=other.pid)
        assert service.status({service.STATE_DIR_VARIABLE: str(tmp_path)}) is None
        assert service.stop({service.STATE_DIR_VARIABLE: str(tmp_path)}) == []
        assert stranger.poll() is None and other.poll() is None  # both still running
        assert not (tmp_path / service.STATE_FILE).exists()
    finally:
        reap(stranger, other)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        b"\xff".decode("latin-1"),
        '{"target": "grpc://127.0.0.1:x", "supervisor": 1234, "pids": {}, "started": 0}',
        '{"target": "t", "supervisor": 1234, "pids": {}}',
        '{"target": "grpc://10.0.0.1:5", "supervisor": 1234, "pids": {}, "started": 0}',
        # pids kill(2) would widen: a process group, every process, init; and non-integers
        '{"target": "grpc://127.0.0.1:5", "supervisor": 0, "pids": {}, "started": 0}',
        '{"target": "grpc://127.0.0.1:5", "supervisor": -1, "pids": {}, "started": 0}',
        '{"target": "grpc://127.0.0.1:5", "supervisor": 1, "pids": {}, "started": 0}',
        '{"target": "grpc://127.0.0.1:5", "supervisor": 1.5, "pids": {}, "started": 0}',
        '{"target": "grpc://127.0.0.1:5", "supervisor": 1234, "pids": {"a": true}, "started": 0}',
    ],
)
def test_an_unreadable_state_file_is_an_error_naming_it(tmp_path, text):
    (tmp_path / service.STATE_FILE).write_text(text)
    for action in (service.status, service.stop, service.start):
        with pytest.raises(EngineError, match="state.json is not an engine state"):
            action({service.STATE_DIR_VARIABLE: str(tmp_path)})


def test_the_cli_says_not_running_with_exit_1_and_a_bad_state_in_one_line(repo, tmp_path):
    env = dict(nested_env(), **{service.STATE_DIR_VARIABLE: str(tmp_path)})
    proc = gate(repo, "engine", "status", env=env)
    assert (proc.returncode, proc.stdout) == (1, f"engine: not running (state in {tmp_path})\n"), proc.stderr
    (tmp_path / service.STATE_FILE).write_text("{")
    proc = gate(repo, "engine", "stop", env=env)
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("oracle-gate: [1] engine stop: ") and "Traceback" not in proc.stderr


def test_start_status_check_and_stop_on_this_machine(repo, tmp_path):
    env = dict(nested_env(), **{service.STATE_DIR_VARIABLE: str(tmp_path / "engine")})
    for var in ("ORACLE_GATE_CACHE",):  # BuildGrid's venv: the one the other engine tests use
        if var in os.environ:
            env[var] = os.environ[var]
    started = gate(repo, "engine", "start", env=env)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert started.stdout.startswith("engine: started; state in ")
        export = next(line for line in started.stdout.splitlines() if line.startswith("export "))
        endpoint = export.split("=", 1)[1]
        state = json.loads((tmp_path / "engine" / service.STATE_FILE).read_text())
        pids = [state["supervisor"], *state["pids"].values()]
        assert sorted(state["pids"]) == ["buildgrid", "postgres", "worker"]
        again = gate(repo, "engine", "start", env=env)
        assert again.stdout.startswith("engine: already running") and export in again.stdout, again.stdout
        status = gate(repo, "engine", "status", env=env)
        assert status.returncode == 0 and f"engine: running at {endpoint} " in status.stdout, status.stdout
        checked = gate(
            repo, "check", "--base", "main", "--clean", "--remote", env=dict(env, ORACLE_GATE_REMOTE_EXECUTOR=endpoint)
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr[-3000:]
        assert re.search(r"clean run: Bazel \d+ processes: .*\d+ remote", checked.stdout), checked.stdout
        assert "every action ran by remote execution, sealed by the engine's worker" in checked.stdout
    finally:
        stopped = gate(repo, "engine", "stop", env=env)
    assert stopped.returncode == 0 and stopped.stdout.startswith("engine: stopped pids "), (
        stopped.stdout + stopped.stderr
    )
    deadline = time.monotonic() + 30
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if pid_alive(p)]
    assert gate(repo, "engine", "status", env=env).returncode == 1
