"""The loopback engine as a service of one machine: `oracle_gate engine start|status|stop`.

`start` launches a supervisor process in its own session that runs `engine.execution_engine`
(PostgreSQL, BuildGrid with execution, one locked-down test worker, all on 127.0.0.1) until it gets
SIGTERM, and records the endpoint and every pid it started in `state.json`. `status` reads that
file and checks that the supervisor lives and the endpoint accepts connections. `stop` sends the
supervisor SIGTERM, which stops the worker, the server and PostgreSQL by pid, in that order; what
is still alive after STOP_TIMEOUT_S seconds is killed by the pids on record.

State lives in `$ORACLE_GATE_ENGINE_DIR`, else `engine/` under the cache root (`venv.cache_root`:
`$ORACLE_GATE_CACHE`, else `~/.cache/oracle-gate`): `state.json`, `engine.log` (the supervisor's
output) and `work/` (each part's folder with its log and pid file). Standard library only; BuildGrid runs from its own
virtual environment (`venv.buildgrid_python`), which `start` installs, repairs and verifies in the
foreground, before the supervisor starts. The supervisor runs isolated (`python -I`) in an
environment of its own: nothing of the caller's PYTHON* or pip settings reaches it or its parts.

Run as a script, `service.py serve --state DIR` is the supervisor itself.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script by `start`: make `tools` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.engine.engine import EngineError, execution_engine, pid_alive, port_open, tail
from tools.engine.venv import buildgrid_python, cache_root, process_environment

STATE_FILE = "state.json"
LOG_FILE = "engine.log"
# Seconds, from the supervisor's start (BuildGrid's environment is installed before it).
START_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 60.0
# Exported for `check --clean --remote` (clean_run.REMOTE_ENV).
EXECUTOR_VARIABLE = "ORACLE_GATE_REMOTE_EXECUTOR"


@dataclass(frozen=True)
class EngineState:
    """What `state.json` records about a running engine.

    Attributes:
        target: the gRPC endpoint, e.g. "grpc://127.0.0.1:41234" (instance name "", no TLS).
        supervisor: pid of the supervisor process.
        pids: part name (postgres, buildgrid, worker) -> pid of the process it started.
        started: when the engine became ready, seconds since the epoch.
    """

    target: str
    supervisor: int
    pids: dict[str, int]
    started: float

    def port(self) -> int:
        """The endpoint's TCP port."""
        return int(self.target.rsplit(":", 1)[1])


# Overrides the engine's folder (state, logs, pids); BuildGrid's venv stays under the cache root.
STATE_DIR_VARIABLE = "ORACLE_GATE_ENGINE_DIR"


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The engine's folder: `$ORACLE_GATE_ENGINE_DIR`, else `engine/` under `engine.cache_root(environ)`."""
    if environ.get(STATE_DIR_VARIABLE):
        return Path(environ[STATE_DIR_VARIABLE])
    return cache_root(environ) / "engine"


# What each recorded process's command line holds (/proc/PID/cmdline), so a pid the system has
# since given to another process is never signalled.
IDENTITY = {"postgres": "postgres", "buildgrid": "bgd", "worker": "worker.py"}
_TARGET = re.compile(r"grpc://127\.0\.0\.1:[0-9]{1,5}\Z")


def _pid(value: object) -> int:
    """A recorded pid: a plain int above 1 (never 0, -1 or init, which kill(2) would widen)."""
    if type(value) is not int or value <= 1:
        raise ValueError(f"{value!r} is not a process id above 1")
    return value


def read_state(folder: Path) -> EngineState | None:
    """The recorded state, or None when there is none.

    Raises:
        EngineError: when `state.json` exists but is not a state this module wrote (wrong types,
            a pid that is not an int above 1, an endpoint that is not on 127.0.0.1).
    """
    try:
        data = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
        if type(data) is not dict or type(data.get("pids")) is not dict or type(data.get("target")) is not str:
            raise ValueError("not an object with target and pids")
        if not _TARGET.match(data["target"]) or type(data.get("started")) not in (int, float):
            raise ValueError("bad target or start time")
        pids = {str(k): _pid(v) for k, v in data["pids"].items()}
        return EngineState(data["target"], _pid(data.get("supervisor")), pids, float(data["started"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise EngineError(f"{folder / STATE_FILE} is not an engine state ({exc}); remove it") from None


def command_line(pid: int) -> str:
    """The command line of process `pid`, arguments joined by spaces ("" when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def is_ours(state: EngineState, name: str, pid: int, folder: Path) -> bool:
    """True when process `pid` is still the one recorded as `name` (the supervisor, or a part):
    alive and with the command line that process had, so a reused pid is left alone."""
    if not pid_alive(pid):
        return False
    line = command_line(pid)
    if name == "supervisor":
        return "service.py" in line and " serve " in f"{line} " and str(folder) in line
    return IDENTITY.get(name, "\0") in line


def is_running(state: EngineState, folder: Path) -> bool:
    """True when the recorded supervisor is still that process and the endpoint accepts connections."""
    return is_ours(state, "supervisor", state.supervisor, folder) and port_open(state.port())


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Holds an exclusive lock on the engine's folder, so two commands never start or stop at once."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def start(environ: Mapping[str, str] = os.environ) -> tuple[EngineState, bool]:
    """Starts the engine unless it is running.

    BuildGrid's environment is installed (or repaired) and verified first, in the foreground
    (`venv.buildgrid_python`, which prints one line to stderr when it installs); the supervisor
    then runs `python -I -B service.py serve --state DIR --python P` in `process_environment`.

    Returns:
        (state, started): `started` is False when an engine was already running.

    Raises:
        EngineError: when BuildGrid's environment cannot be installed or verified, when the
            supervisor exits or is not ready within START_TIMEOUT_S seconds (the message has the
            tail of its log), or the recorded state is unreadable.
    """
    folder = state_dir(environ)
    with _locked(folder):
        state = read_state(folder)
        if state is not None and is_running(state, folder):
            return state, False
        if state is not None:
            _stop_recorded(state, folder)  # leftovers of an engine that died
        python = buildgrid_python(environ)
        shutil.rmtree(folder / "work", ignore_errors=True)  # a fresh cluster and storage each start
        log = folder / LOG_FILE
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-B",
                    str(Path(__file__).resolve()),
                    "serve",
                    "--state",
                    str(folder),
                    "--python",
                    python,
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=process_environment(folder, environ),
                cwd=str(folder),
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            state = read_state(folder)
            if state is not None and state.supervisor == proc.pid:
                return state, True
            if proc.poll() is not None:
                raise EngineError(f"the engine did not start (exit {proc.returncode}); {log}:\n{tail(log)}")
            if time.monotonic() > deadline:
                _terminate(proc.pid)
                raise EngineError(f"the engine was not ready after {START_TIMEOUT_S:.0f} s; {log}:\n{tail(log)}")
            time.sleep(0.2)


def status(environ: Mapping[str, str] = os.environ) -> EngineState | None:
    """The running engine's state, or None when none runs.

    Raises:
        EngineError: when the recorded state is unreadable.
    """
    folder = state_dir(environ)
    state = read_state(folder)
    return state if state is not None and is_running(state, folder) else None


def stop(environ: Mapping[str, str] = os.environ) -> list[int]:
    """Stops the engine and every process it started; returns the pids that were alive.

    Raises:
        EngineError: when the recorded state is unreadable, or a process outlives SIGKILL.
    """
    folder = state_dir(environ)
    with _locked(folder):
        state = read_state(folder)
        if state is None:
            return []
        return _stop_recorded(state, folder)


def _stop_recorded(state: EngineState, folder: Path) -> list[int]:
    """SIGTERM to the supervisor (it stops its parts in order), then SIGKILL to every recorded
    process still alive after STOP_TIMEOUT_S; removes the state file. Only processes that are
    still the recorded ones (`is_ours`) are signalled."""
    every = [("supervisor", state.supervisor), *state.pids.items()]
    ours = [(name, pid) for name, pid in every if is_ours(state, name, pid, folder)]
    if ("supervisor", state.supervisor) in ours:
        _signal(state.supervisor, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while any(pid_alive(pid) for _, pid in ours) and time.monotonic() < deadline:
        time.sleep(0.2)
    for name, pid in ours:
        if is_ours(state, name, pid, folder):
            _signal(pid, signal.SIGKILL)
    time.sleep(0.2)
    left = [pid for _, pid in ours if pid_alive(pid)]
    if left:
        raise EngineError(f"processes {left} of the engine outlived SIGKILL")
    (folder / STATE_FILE).unlink(missing_ok=True)
    return [pid for _, pid in ours]


def _signal(pid: int, sig: int) -> None:
    if pid <= 1:  # kill(2) would signal a process group, every process, or init
        return
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _terminate(pid: int) -> None:
    _signal(pid, signal.SIGTERM)


def _part_pids(work: Path) -> dict[str, int]:
    """name -> pid from each part's `pid` file (engine.execution_engine writes them)."""
    pids = {}
    for name in ("postgres", "buildgrid", "worker"):
        try:
            pids[name] = int((work / name / "pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return pids


def serve(folder: Path, python: str | None = None) -> int:
    """The supervisor: runs the engine until SIGTERM, with its state in `folder/state.json`.

    Args:
        folder: The engine's folder.
        python: BuildGrid's verified Python (default: `venv.buildgrid_python()`).
    """
    work = folder / "work"
    try:
        with execution_engine(work, python) as target:
            state = EngineState(target, os.getpid(), _part_pids(work), time.time())
            partial = folder / (STATE_FILE + ".partial")
            partial.write_text(json.dumps(asdict(state), indent=2) + "\n", encoding="utf-8")
            partial.replace(folder / STATE_FILE)
            print(f"engine ready at {target}", flush=True)
            while True:
                signal.pause()
    except KeyboardInterrupt:  # SIGTERM, turned into this by execution_engine
        print("engine stopped", flush=True)
        return 0
    finally:
        (folder / STATE_FILE).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """`service.py serve --state DIR [--python P]`."""
    parser = argparse.ArgumentParser(prog="service.py")
    parser.add_argument("command", choices=("serve",))
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--python", help="BuildGrid's verified Python")
    args = parser.parse_args(argv)
    return serve(args.state, args.python)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
