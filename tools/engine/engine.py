"""Real Remote Execution API (REAPI) servers on loopback, for `oracle_gate engine` (service.py) and tests.

Two context managers, each owning every process it starts and stopping it by pid on exit:

- `cache_server(workdir)`: a cache-only BuildGrid (CAS, ActionCache, ByteStream), for
  `bazel --remote_cache=...`.
- `execution_engine(workdir)`: a private PostgreSQL cluster, a BuildGrid with execution on it and one
  test worker (`worker.py`), for `bazel --remote_executor=...`.

Both yield a target such as ``"grpc://127.0.0.1:41234"`` (instance name ``""``, no TLS, no auth).
BuildGrid and the worker run from BuildGrid's own virtual environment (venv.py: installed from
tools/engine/requirements_lock.txt and verified), never from the caller's interpreter, each isolated
(`python -I`) in an environment of its own (`venv.process_environment`): nothing of the caller's
PYTHON* or pip settings reaches them. This module uses the standard library only.

Example::

    with execution_engine(tmp_path) as target:
        subprocess.run(["bazel", "test", f"--remote_executor={target}", "//..."], check=True)
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from tools.engine.errors import EngineError, tail
from tools.engine.venv import buildgrid_python, cache_root, isolated, process_environment

__all__ = ["EngineError", "buildgrid_python", "cache_root", "cache_server", "execution_engine", "tail"]

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
# PostgreSQL refuses to run as root; as root the cluster runs as this user.
POSTGRES_USER = "postgres"
RUNUSER = "/usr/sbin/runuser"

HERE = Path(os.path.abspath(__file__)).parent
WORKER_SCRIPT = HERE / "worker.py"

# Seconds. BuildGrid considers a bot dead after this long without an UpdateBotSession call; the
# worker heartbeats well within it, and a killed worker's jobs are requeued after it.
BOT_KEEPALIVE_S = 15
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
# Longest Unix socket path the kernel accepts (sun_path is 108 bytes including the NUL).
_MAX_SOCKET_PATH = 107


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a TCP connection to `host:port` succeeds right now (0.5 s connect timeout)."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


class Process:
    """A child process in its own session, its output appended to a log file, stopped by pid."""

    def __init__(
        self, name: str, argv: Sequence[str], log: Path, *, cwd: Path, env: Mapping[str, str] | None = None
    ) -> None:
        """Starts `argv` with stdin from /dev/null and stdout and stderr to `log`.

        Args:
            name: Shown in error messages, e.g. "BuildGrid server".
            argv: The command.
            log: Log file, appended to.
            cwd: Working directory.
            env: The whole environment; `venv.process_environment(cwd)` when None (never the
                caller's).
        """
        self.name = name
        self.log = log
        env = process_environment(cwd) if env is None else env
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
            )
        self.pid = self.popen.pid

    def failure(self, what: str) -> EngineError:
        """An EngineError saying `what`, with the process's exit status and log tail."""
        code = self.popen.poll()
        state = "running" if code is None else f"exited with {code}"
        return EngineError(f"{self.name} (pid {self.pid}, {state}): {what}; log {self.log}:\n{tail(self.log)}")

    def wait_for_port(self, port: int, timeout: float = START_TIMEOUT_S) -> None:
        """Waits until 127.0.0.1:`port` accepts connections.

        Args:
            port: TCP port.
            timeout: Seconds.

        Raises:
            EngineError: The process exited, or the port stayed closed for `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        while not port_open(port):
            if self.popen.poll() is not None:
                raise self.failure(f"exited before listening on 127.0.0.1:{port}")
            if time.monotonic() > deadline:
                raise self.failure(f"not listening on 127.0.0.1:{port} after {timeout:.0f} s")
            time.sleep(0.1)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM to the pid, waits up to `timeout` seconds, then SIGKILL; then kills what is left
        of its process group (its pgid is its pid), so no grandchild outlives it."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)


# gRPC server threads, which BuildGrid also uses as its limit of concurrent RPCs (beyond it a call
# fails with RESOURCE_EXHAUSTED). Above Bazel's default --remote_max_connections (100) plus the
# worker's long polls, so one client's uploads never crowd out the worker.
GRPC_THREADS = 256


def cache_config(port: int, storage: Path) -> str:
    """BuildGrid YAML config: CAS, ActionCache (updatable) and ByteStream, instance "", no TLS.

    Args:
        port: TCP port on 127.0.0.1 to listen on.
        storage: Directory for the disk CAS.
    """
    return f"""\
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
storages:
  - !disk-storage &cas
    path: {json.dumps(str(storage))}
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 100000
    allow-updates: true
    cache-failed-actions: false
instances:
  - name: ""
    services:
      - !action-cache
        cache: *ac
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
thread-pool-size: {GRPC_THREADS}
"""


def execution_config(port: int, storage: Path, database_url: str, keepalive: int = BOT_KEEPALIVE_S) -> str:
    """BuildGrid YAML config: `cache_config` plus Execution, Operations and Bots on a SQL scheduler.

    Capabilities is always served. Jobs are assigned every 0.1 s; a bot silent for `keepalive`
    seconds is presumed dead and its jobs are requeued.

    The action cache takes writes only from the engine's own workers: the scheduler stores each
    finished job's result in the writable cache `ac`, while clients reach it through `client-ac`
    (`!with-cache-action-cache` over `ac` with `allow-updates: false`). A client's
    UpdateActionResult is refused, and Capabilities says `update_enabled: false`, which Bazel
    honours by uploading no local result. Otherwise a pull request's job could store a forged
    result for the caller action's digest, which later runs would be served.

    Args:
        port: TCP port on 127.0.0.1 to listen on.
        storage: Directory for the disk CAS.
        database_url: SQLAlchemy URL, `postgresql+psycopg2://...` (see `postgres_url`).
        keepalive: Bot session keepalive timeout, seconds.
    """
    config = _with_client_action_cache(cache_config(port, storage))
    config = _with_sql_scheduler(config, database_url, keepalive)
    return config.replace("    services:\n", _EXECUTION_SERVICE, 1)


# The read-only view of the action cache that clients reach (`execution_config`).
_CLIENT_ACTION_CACHE = """\
  - !with-cache-action-cache &client-ac
    cache: *ac
    fallback: *ac
    allow-updates: false
    cache-failed-actions: false
instances:
"""

# The Execution service on the SQL scheduler (`execution_config`).
_EXECUTION_SERVICE = """\
    services:
      - !execution
        scheduler: *scheduler
        operation-stream-keepalive-timeout: 30
"""


def _with_client_action_cache(config: str) -> str:
    """`config` with the client's view of the action cache (`client-ac`, no updates) declared, and
    served as the instance's action cache in place of the writable `ac`."""
    return config.replace("instances:\n", _CLIENT_ACTION_CACHE, 1).replace(
        "      - !action-cache\n        cache: *ac\n", "      - !action-cache\n        cache: *client-ac\n", 1
    )


def _with_sql_scheduler(config: str, database_url: str, keepalive: int) -> str:
    """`config` with the SQL connection to `database_url` and the scheduler on it (bot keepalive
    `keepalive` seconds, jobs assigned every 0.1 s) declared."""
    return config.replace(
        "storages:\n",
        f"""\
connections:
  - !sql-connection &sql
    connection-string: {json.dumps(database_url)}
    pool-size: 10
    max-overflow: 10
storages:
""",
        1,
    ).replace(
        "instances:\n",
        f"""\
schedulers:
  - !sql-scheduler &scheduler
    sql: *sql
    storage: *cas
    action-cache: *ac
    bot-session-keepalive-timeout: {int(keepalive)}
    session-expiry-timer-interval: 2
    poll-interval: 0.2
    bot-poll-interval: 0.2
    assigners:
      - !priority-age-assigner
        count: 1
        interval: 0.1
instances:
""",
        1,
    )


def postgres_url(port: int, user: str = "bgd", database: str = "bgd") -> str:
    """SQLAlchemy URL of a trust-authenticated database on 127.0.0.1:`port`.

    The scheme names psycopg2: with plain `postgresql://`, SQLAlchemy 2.1 picks psycopg 3 and
    BuildGrid's job notifier fails (clients then wait forever).
    """
    return f"postgresql+psycopg2://{user}@127.0.0.1:{port}/{database}"


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While active, SIGTERM raises KeyboardInterrupt in the main thread, so `finally` blocks and
    pytest's fixture teardown run and stop the engine's processes (which live in their own
    sessions and would otherwise outlive e.g. a `bazel test` timeout, which sends SIGTERM).

    Does nothing outside the main thread or when SIGTERM already has a handler; restores the
    previous disposition on exit.
    """
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def bgd(python: str, *args: str) -> list[str]:
    """The command line of `bgd ARGS` run by the environment's `python` isolated (`-I`): the
    console script `bgd` beside it, as a script, so no caller's PYTHONPATH or user site counts."""
    return isolated(python, str(Path(python).parent / "bgd"), *args)


@contextlib.contextmanager
def buildgrid_server(
    workdir: Path, render: Callable[[int, Path], str], name: str = "BuildGrid server", python: str | None = None
) -> Iterator[str]:
    """Runs `bgd server start` on a rendered config and yields its gRPC target.

    Args:
        workdir: Directory for the config (`buildgrid.yml`), the log (`buildgrid.log`), the
            server's `pid` and the CAS (`cas/`); created if missing.
        render: Makes the config text from (port, CAS directory), e.g. `cache_config`.
        name: For error messages.
        python: BuildGrid's Python (default `buildgrid_python()`).

    Yields:
        `"grpc://127.0.0.1:PORT"`, once the port accepts connections.

    Raises:
        EngineError: The server exited or did not listen within START_TIMEOUT_S seconds.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    storage = workdir / "cas"
    storage.mkdir(exist_ok=True)
    config_path = workdir / "buildgrid.yml"
    config_path.write_text(render(port, storage))
    server = Process(
        name,
        bgd(python or buildgrid_python(), "server", "start", str(config_path)),
        workdir / "buildgrid.log",
        cwd=workdir,
    )
    (workdir / "pid").write_text(f"{server.pid}\n")
    try:
        server.wait_for_port(port)
        yield f"grpc://127.0.0.1:{port}"
    finally:
        server.stop()


@contextlib.contextmanager
def cache_server(workdir: Path) -> Iterator[str]:
    """A cache-only BuildGrid: CAS + ActionCache (updates allowed) + ByteStream, instance "".

    Disk CAS in `workdir/cas`; the action cache is in memory and lost on exit. Startup takes
    about 3 s once BuildGrid is installed (see `venv.buildgrid_python`).

    Args:
        workdir: Scratch directory for config, CAS and `buildgrid.log`.

    Yields:
        The target for `bazel --remote_cache=`, e.g. `"grpc://127.0.0.1:41234"`.

    Raises:
        EngineError: Install or startup failed; the message has the server log tail.
    """
    with sigterm_interrupts(), buildgrid_server(Path(workdir), cache_config) as target:
        yield target


def _postgres_home(workdir: Path) -> tuple[Path, bool]:
    """A directory for the cluster: `workdir` when the server user can write there and the socket
    path fits, else a short private directory under /tmp (the caller removes it).

    As root, the server user is `postgres`, which cannot reach e.g. Bazel's `TEST_TMPDIR` under
    /root. Returns (directory, is_fallback).
    """
    home = workdir
    fits = len(str(home)) + len("/.s.PGSQL.65535") <= _MAX_SOCKET_PATH
    if os.geteuid() != 0:
        if fits:
            return home, False
        return Path(tempfile.mkdtemp(prefix="reapi-pg-", dir="/tmp")), True
    if fits:
        shutil.chown(home, POSTGRES_USER, POSTGRES_USER)
        probe = subprocess.run([RUNUSER, "-u", POSTGRES_USER, "--", "test", "-w", str(home)], check=False)
        if probe.returncode == 0:
            return home, False
    fallback = Path(tempfile.mkdtemp(prefix="reapi-pg-", dir="/tmp"))
    shutil.chown(fallback, POSTGRES_USER, POSTGRES_USER)
    return fallback, True


def _as_server_user(argv: list[str]) -> list[str]:
    return [RUNUSER, "-u", POSTGRES_USER, "--", *argv] if os.geteuid() == 0 else argv


def _run_logged(argv: list[str], log: Path, cwd: Path, what: str, timeout: float = START_TIMEOUT_S) -> None:
    """Runs a short command with its output appended to `log`; EngineError with the tail if it fails."""
    with open(log, "ab") as out:
        out.write(f"$ {shlex.join(argv)}\n".encode())
        out.flush()
        try:
            code = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=_quiet_env(),
                timeout=timeout,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired as e:
            raise EngineError(f"{what}: timed out after {timeout:.0f} s; log {log}:\n{tail(log)}") from e
    if code != 0:
        raise EngineError(f"{what}: `{shlex.join(argv)}` exited with {code}; log {log}:\n{tail(log)}")


def _quiet_env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "TZ": "UTC"}


@contextlib.contextmanager
def postgres(workdir: Path) -> Iterator[str]:
    """A private PostgreSQL 15 cluster on 127.0.0.1, trust auth, database `bgd` owned by `bgd`.

    fsync is off (scratch data). As root, the server runs as user `postgres` (it refuses root).
    Logs go to `workdir/postgres.log`, the postmaster's pid to `workdir/pid`. The cluster lives in
    `workdir` if the server user can write there and its socket path is short enough, else in a
    private `/tmp/reapi-pg-*` directory that is removed on exit.

    Args:
        workdir: Scratch directory owned by this call (as root, it is given to user `postgres`).

    Yields:
        The database URL for BuildGrid (`postgres_url`).

    Raises:
        EngineError: initdb, start or createdb failed; the message has the log tail.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "postgres.log"
    home, fallback = _postgres_home(workdir)
    data = home / "data"
    port = free_port()
    postmaster_pid: int | None = None
    try:
        _initdb(data, log, home)
        postmaster_pid = _start_postgres(data, port, log, home)
        (workdir / "pid").write_text(f"{postmaster_pid}\n")
        _run_logged(
            [str(POSTGRES_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "bgd", "bgd"],
            log,
            home,
            "createdb",
        )
        yield postgres_url(port)
    finally:
        if postmaster_pid is not None:
            _stop_postgres(data, postmaster_pid, log, home)
        if fallback:
            shutil.rmtree(home, ignore_errors=True)


def _initdb(data: Path, log: Path, cwd: Path) -> None:
    """Creates the cluster in `data` as the server user: superuser `bgd`, trust auth, UTF-8."""
    _run_logged(
        _as_server_user(
            [str(POSTGRES_BIN / "initdb"), "-D", str(data), "-U", "bgd", "--auth=trust", "-E", "UTF8", "--no-sync"]
        ),
        log,
        cwd,
        "initdb",
    )


def _start_postgres(data: Path, port: int, log: Path, home: Path) -> int:
    """Starts the server of `data` on 127.0.0.1:`port`, its socket in `home`; returns the postmaster's pid."""
    options = (
        f"-p {port} -k {shlex.quote(str(home))} -c listen_addresses=127.0.0.1 "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    # Without -l, pg_ctl hands the server our log file descriptor: the server user need not be
    # able to open a path in `postgres`'s `workdir`.
    _run_logged(
        _as_server_user(
            [
                str(POSTGRES_BIN / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-w",
                "-t",
                str(int(START_TIMEOUT_S)),
                "start",
            ]
        ),
        log,
        home,
        "pg_ctl start",
    )
    return int((data / "postmaster.pid").read_text().split()[0])


def _stop_postgres(data: Path, pid: int, log: Path, cwd: Path) -> None:
    """`pg_ctl stop -m fast`; if the postmaster (by pid) is still there, SIGQUIT then SIGKILL."""
    with contextlib.suppress(EngineError):
        _run_logged(
            _as_server_user(
                [
                    str(POSTGRES_BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-m",
                    "fast",
                    "-w",
                    "-t",
                    str(int(STOP_TIMEOUT_S)),
                    "stop",
                ]
            ),
            log,
            cwd,
            "pg_ctl stop",
            timeout=STOP_TIMEOUT_S + 5,
        )
    for sig in (signal.SIGQUIT, signal.SIGKILL):
        if not pid_alive(pid):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)


def pid_alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie (the postmaster is not our child: pg_ctl forks it)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


@contextlib.contextmanager
def worker(
    workdir: Path, target: str, python: str | None = None, timeout: float = START_TIMEOUT_S
) -> Iterator[Process]:
    """Runs `worker.py` against `target` until exit; waits until it has reached the server.

    Args:
        workdir: Scratch directory: `worker.log`, `pid`, `ready` and per-lease scratch under `roots/`.
        target: The server, `grpc://127.0.0.1:PORT`.
        python: BuildGrid's Python (default `buildgrid_python()`).
        timeout: Seconds to wait for the worker's ready file.

    Yields:
        The worker process.

    Raises:
        EngineError: The worker exited or did not become ready; the message has its log tail.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    ready = workdir / "ready"
    with contextlib.suppress(FileNotFoundError):
        ready.unlink()
    argv = isolated(
        python or buildgrid_python(),
        str(WORKER_SCRIPT),
        "--target",
        target,
        "--work-dir",
        str(workdir / "roots"),
        "--ready-file",
        str(ready),
        "--keepalive",
        str(BOT_KEEPALIVE_S),
    )
    proc = Process("REAPI worker", argv, workdir / "worker.log", cwd=workdir)
    (workdir / "pid").write_text(f"{proc.pid}\n")
    try:
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if proc.popen.poll() is not None:
                raise proc.failure("exited before connecting")
            if time.monotonic() > deadline:
                raise proc.failure(f"not ready after {timeout:.0f} s")
            time.sleep(0.1)
        yield proc
    finally:
        proc.stop()


@contextlib.contextmanager
def execution_engine(workdir: Path, python: str | None = None) -> Iterator[str]:
    """A remote execution engine: PostgreSQL, BuildGrid with execution, and one worker.

    BuildGrid serves Execution, Operations, Bots, Capabilities, CAS, ActionCache and ByteStream
    for instance "" on 127.0.0.1; its scheduler state is in a private PostgreSQL cluster
    (`bgd migrate apply` run first). One `worker.py` process (capacity 1) executes actions in
    fresh, empty input roots. On exit (also on failure) the worker, the server and PostgreSQL are
    stopped by pid, in that order. Each part has a folder `workdir/{postgres,buildgrid,worker}`
    with its `*.log` and a `pid` file (the postmaster's, the server's, the worker's). Startup takes
    about 9 s once BuildGrid is installed.

    Args:
        workdir: Scratch directory.
        python: BuildGrid's Python (default `buildgrid_python()`, which installs it when needed).

    Yields:
        The target for `bazel --remote_executor=`, e.g. `"grpc://127.0.0.1:41234"`.

    Raises:
        EngineError: BuildGrid's environment could not be installed, or some part failed to
            start; the message has the relevant log tail.
    """
    workdir = Path(workdir)
    python = python or buildgrid_python()
    with sigterm_interrupts(), postgres(workdir / "postgres") as database_url:
        _run_logged(
            bgd(python, "migrate", "apply", database_url),
            workdir / "postgres" / "migrate.log",
            workdir,
            "bgd migrate apply",
            timeout=120,
        )

        def render(port: int, storage: Path) -> str:
            return execution_config(port, storage, database_url)

        with (
            buildgrid_server(workdir / "buildgrid", render, python=python) as target,
            worker(workdir / "worker", target, python),
        ):
            yield target
