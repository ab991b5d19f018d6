"""The REAPI engine end to end: BuildGrid + PostgreSQL + worker.py, driven by a real REAPI client.

The client (`client_check.py`) runs under BuildGrid's Python, which has grpcio and the protos.
Unit tests of the engine's pure helpers and of the worker's lockdown helpers come first; they need no
server. The worker runs every action under bwrap; the lockdown tests check from inside an action
that host paths it was not given do not exist there.

It needs no nested Bazel: a REAPI client stands in for Bazel against the real engine."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tools.testing.reapi
from tools.engine import engine, venv, worker

CLIENT = Path(os.path.abspath(tools.testing.reapi.__file__)).parent / "client_check.py"
PATH = "/bin:/usr/bin"
DEADLINE_EXCEEDED = 4  # google.rpc.Code
_SLEEP_SERIAL = itertools.count(1)


def buildgrid_argv(*argv: str) -> list[str]:
    """`argv` (a script and its arguments, or `-c CODE`) run by BuildGrid's Python, isolated, as
    the engine runs its own processes."""
    return venv.isolated(engine.buildgrid_python(), *argv)


def with_worker(script: str) -> str:
    """`script` with worker.py importable: an isolated Python puts no script folder on sys.path."""
    return f"import sys\nsys.path.insert(0, {str(engine.HERE)!r})\n" + script


CLEAN_ENV = venv.process_environment(os.environ.get("TEST_TMPDIR", "/tmp"))


# Pure helpers.


def test_execution_config_serves_everything_bazel_needs_on_loopback() -> None:
    config = engine.execution_config(4242, Path("/s p/cas"), engine.postgres_url(5555), keepalive=12)
    assert 'address: "127.0.0.1:4242"' in config
    assert 'name: ""' in config
    for service in ("!execution", "!action-cache", "!cas", "!bytestream"):
        assert f"      - {service}\n" in config
    assert "bot-session-keepalive-timeout: 12\n" in config
    assert 'connection-string: "postgresql+psycopg2://bgd@127.0.0.1:5555/bgd"' in config
    assert 'path: "/s p/cas"' in config
    # The scheduler writes the cache; clients reach it read-only.
    assert "action-cache: *ac\n" in config and "      - !action-cache\n        cache: *client-ac\n" in config
    client = config.split("&client-ac\n", 1)[1].split("\n  - ", 1)[0].split("\nschedulers:", 1)[0]
    assert "allow-updates: false" in client, client


def test_cache_config_has_no_execution_and_no_database() -> None:
    config = engine.cache_config(4242, Path("/cas"))
    assert "!execution" not in config and "sql" not in config
    assert "allow-updates: true" in config


def test_postgres_url_names_psycopg2() -> None:
    # Plain postgresql:// makes SQLAlchemy pick psycopg 3, and BuildGrid's notifier then fails.
    assert engine.postgres_url(5432) == "postgresql+psycopg2://bgd@127.0.0.1:5432/bgd"


def test_tail_keeps_the_end_and_names_a_missing_file(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_bytes(b"a" * 100 + b"\xff end")
    assert engine.tail(log, max_bytes=5) == "\ufffd end"
    assert "no log file" in engine.tail(tmp_path / "missing.log")


def test_cache_root_prefers_the_variable_and_ignores_home() -> None:
    assert engine.cache_root({"ORACLE_GATE_CACHE": "/c"}) == Path("/c")
    assert engine.cache_root({"HOME": "/per-test-tmp"}).parts[-2:] == (".cache", "oracle-gate")
    assert not str(engine.cache_root({"HOME": "/per-test-tmp"})).startswith("/per-test-tmp")


def test_free_port_is_free_and_closed() -> None:
    port = engine.free_port()
    assert not engine.port_open(port)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_lockdown_description_names_bwrap_its_version_and_the_layout() -> None:
    version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    description = worker.lockdown_description()
    assert description.startswith(f"{version} ({worker.find_bwrap()}): "), description
    assert f"input root read-write at {worker.SANDBOX_ROOT}" in description
    assert "read-only /usr" in description and "no network" in description


def test_sandbox_argv_binds_only_system_directories_and_the_input_root() -> None:
    argv = worker.sandbox_argv(
        "/usr/bin/bwrap", Path("/host/lease/root"), "sub/dir", {"PATH": PATH, "A": "x y"}, ["tool", "--flag"]
    )
    assert argv[0] == "/usr/bin/bwrap"
    binds = [argv[i + 1] for i, arg in enumerate(argv) if arg in ("--bind", "--ro-bind")]
    assert sorted(binds) == sorted(["/host/lease/root", *worker.system_directories()])
    assert argv[argv.index("--bind") + 2] == worker.SANDBOX_ROOT
    assert argv[argv.index("--chdir") + 1] == f"{worker.SANDBOX_ROOT}/sub/dir"
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--clearenv"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv.index("--clearenv") < argv.index("--setenv")
    assert "/etc" not in argv and "/root" not in argv and "/home" not in argv
    assert argv[argv.index("--clearenv") + 1 :] == [
        "--setenv",
        "PATH",
        PATH,
        "--setenv",
        "A",
        "x y",
        "--",
        "/usr/bin/env",
        "-u",
        "PWD",
        "--",
        "tool",
        "--flag",
    ]
    given = worker.sandbox_argv("bwrap", Path("/r"), "", {"PWD": "/given"}, ["tool"])
    assert given[given.index("--chdir") + 1] == worker.SANDBOX_ROOT
    assert given[-4:] == ["/usr/bin/env", "--", "PWD=/given", "tool"]
    with pytest.raises(ValueError):
        worker.sandbox_argv("bwrap", Path("/r"), "", {}, ["a=b"])  # `env` would take it for a variable.
    with pytest.raises(ValueError):
        worker.sandbox_argv("bwrap", Path("/r"), "", {"A=B": "c"}, ["tool"])
    with pytest.raises(ValueError):
        worker.sandbox_argv("bwrap", Path("/r"), "", {}, [])


def test_the_worker_refuses_to_start_without_bwrap(tmp_path: Path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    proc = subprocess.run(
        [
            *buildgrid_argv(str(engine.WORKER_SCRIPT)),
            "--target",
            "grpc://127.0.0.1:9",
            "--work-dir",
            str(tmp_path / "work"),
            "--ready-file",
            str(tmp_path / "ready"),
        ],
        env={"PATH": str(empty)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "bwrap not found" in proc.stderr, proc.stderr
    assert not (tmp_path / "work").exists() and not (tmp_path / "ready").exists()


def test_bots_calls_retry_while_the_server_is_at_its_rpc_limit() -> None:
    # A busy BuildGrid answers RESOURCE_EXHAUSTED ("Concurrent RPC limit exceeded!") without handling
    # the request; taking that for a rejected session would drop a completed lease and stall its job.
    script = textwrap.dedent("""
        import threading, grpc, worker
        class Error(grpc.RpcError):
            def __init__(self, code): self._code = code
            def code(self): return self._code
            def details(self): return "test"
        class Future:
            def __init__(self, outcome): self.outcome = outcome
            def done(self): return True
            def cancel(self): pass
            def result(self):
                if isinstance(self.outcome, Exception): raise self.outcome
                return self.outcome
        class Method:
            def __init__(self, *outcomes): self.outcomes = list(outcomes)
            def future(self, request, timeout): return Future(self.outcomes.pop(0))
        busy = Method(Error(grpc.StatusCode.RESOURCE_EXHAUSTED), Error(grpc.StatusCode.UNAVAILABLE), "answer")
        print(worker.call(busy, None, 1.0, threading.Event()))
        try:
            worker.call(Method(Error(grpc.StatusCode.NOT_FOUND)), None, 1.0, threading.Event())
        except grpc.RpcError as e:
            print(e.code().name)
    """)
    proc = subprocess.run(
        buildgrid_argv("-c", with_worker(script)),
        cwd=engine.HERE,
        capture_output=True,
        text=True,
        env=CLEAN_ENV,
        timeout=120,
        check=False,
    )
    assert (proc.returncode, proc.stdout.split()) == (0, ["answer", "NOT_FOUND"]), proc.stderr


def test_cas_calls_retry_while_the_server_is_busy_and_stop_on_other_errors() -> None:
    # A CAS read refused as busy inside a lease must not fail the action (FAILED_PRECONDITION): Bazel
    # does not retry that, so the whole build would fail on a momentary server limit.
    script = textwrap.dedent("""
        import grpc, worker
        class Error(grpc.RpcError):
            def __init__(self, code): self._code = code
            def code(self): return self._code
            def details(self): return "test"
        def calls(*outcomes):
            outcomes = list(outcomes)
            def attempt():
                o = outcomes.pop(0)
                if isinstance(o, Exception): raise o
                return o
            return attempt
        waits = []
        busy = calls(Error(grpc.StatusCode.RESOURCE_EXHAUSTED), Error(grpc.StatusCode.UNAVAILABLE), "blob")
        print(worker.with_retries(busy, "read", sleep=waits.append), waits)
        for attempt, n in ((calls(Error(grpc.StatusCode.NOT_FOUND), "never"), 5),
                           (calls(*[Error(grpc.StatusCode.RESOURCE_EXHAUSTED)] * 3, "never"), 3)):
            try:
                worker.with_retries(attempt, "read", attempts=n, sleep=lambda s: None)
            except grpc.RpcError as e:
                print(e.code().name)
    """)
    proc = subprocess.run(
        buildgrid_argv("-c", with_worker(script)),
        cwd=engine.HERE,
        capture_output=True,
        text=True,
        env=CLEAN_ENV,
        timeout=120,
        check=False,
    )
    assert (proc.returncode, proc.stdout.splitlines()) == (
        0,
        ["blob [0.25, 0.5]", "NOT_FOUND", "RESOURCE_EXHAUSTED"],
    ), proc.stderr


# The engine.


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _with_descendants(pids: set[int]) -> set[int]:
    """`pids` plus every live process whose parent chain leads to one of them."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
    found = set(pids)
    while True:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        if not more:
            return found
        found |= more


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = os.environ.get("TEST_TMPDIR")
    return Path(base) / "engine" if base else tmp_path_factory.mktemp("engine")


@pytest.fixture(scope="module")
def target(workdir: Path) -> Iterator[str]:
    """A running engine; on teardown, checks that every process of it is gone and the worker
    exited cleanly on SIGTERM."""
    with engine.execution_engine(workdir) as target:
        pids = {int((workdir / part / "pid").read_text()) for part in ("postgres", "buildgrid", "worker")}
        assert all(_alive(pid) for pid in pids)
        everything = _with_descendants(pids)
        yield target
    assert not [pid for pid in everything if _alive(pid)], "engine processes left running"
    assert (workdir / "worker" / "worker.log").read_text().rstrip().endswith("stopped")


def run_actions(target: str, specs: list[dict[str, Any]], check_status: bool = True) -> list[dict[str, Any]]:
    """Executes actions through the Execution service (see client_check.py for the shapes); with
    `check_status`, asserts that each finished with status OK (whatever its exit code)."""
    proc = subprocess.run(
        buildgrid_argv(str(CLIENT), "--target", target),
        env=CLEAN_ENV,
        input=json.dumps(specs).encode(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    results = json.loads(proc.stdout)
    for result in results:
        assert not check_status or result["status"] == 0, result
    return results


def _sleep_argument() -> str:
    """A `sleep` duration (seconds) that no other process on the machine has as an argument: it
    marks processes an action starts, so a test can look for them on the host."""
    return f"{100000 + os.getpid()}.{next(_SLEEP_SERIAL)}"


def _running_with_argument(argument: str) -> list[int]:
    """Pids of live (not zombie) processes that have `argument` as one of their arguments."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in args and _alive(int(entry.name)):
                pids.append(int(entry.name))
    return pids


def _wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.1)


def test_action_reads_its_input_and_returns_the_output_bytes(target: str, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"hello \xe2\x9c\x93 reapi\n")
    [result] = run_actions(
        target,
        [
            {
                "root": str(tmp_path),
                "argv": ["sh", "-c", "cat in.txt > out/result.txt"],
                "env": {"PATH": PATH},
                "output_files": ["out/result.txt"],
            }
        ],
    )
    assert result["exit_code"] == 0, result
    assert result["output_files"] == {"out/result.txt": {"text": "hello \u2713 reapi\n", "executable": False}}


def test_a_host_file_outside_the_input_root_is_not_there(target: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "in.txt").write_text("declared\n")
    (tmp_path / "secret.txt").write_text("undeclared\n")
    assert (root / "../secret.txt").read_text() == "undeclared\n"  # Reachable from the client's tree.
    [result] = run_actions(
        target, [{"root": str(root), "argv": ["cat", "in.txt", "../secret.txt"], "env": {"PATH": PATH}}]
    )
    assert result["exit_code"] != 0
    assert result["stdout"] == "declared\n"
    assert "../secret.txt: No such file or directory" in result["stderr"]


def test_exact_environment_working_directory_and_input_kinds(target: str, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tool.sh").write_text("#!/bin/sh\necho tool ran\n")
    (tmp_path / "sub" / "tool.sh").chmod(0o755)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.txt").write_text("x\n")
    (tmp_path / "sub" / "data_link").symlink_to("../data")
    [result] = run_actions(
        target,
        [
            {
                "root": str(tmp_path),
                "working_directory": "sub",
                "env": {"PATH": PATH, "ONLY": "this"},
                "argv": ["/bin/sh", "-c", "./tool.sh && cat data_link/x.txt && test -x tool.sh && /usr/bin/env"],
            }
        ],
    )
    assert result["exit_code"] == 0, result
    tool, x, *env = result["stdout"].splitlines()
    assert (tool, x) == ("tool ran", "x")
    assert sorted(line for line in env if not line.startswith("PWD=")) == ["ONLY=this", f"PATH={PATH}"]
    assert [line for line in env if line.startswith("PWD=")][0].endswith("/sub")


def test_outputs_missing_ones_omitted_modes_and_directories(target: str, tmp_path: Path) -> None:
    script = "printf '#!/bin/sh\\n' > bin/made.sh && chmod +x bin/made.sh && mkdir -p tree/a && echo b > tree/a/b.txt"
    [result] = run_actions(
        target,
        [
            {
                "root": str(tmp_path),
                "argv": ["sh", "-c", script],
                "env": {"PATH": PATH},
                "output_files": ["bin/made.sh", "never/made.txt"],
                "output_directories": ["tree", "never_dir"],
            }
        ],
    )
    assert result["exit_code"] == 0, result
    assert result["output_files"] == {"bin/made.sh": {"text": "#!/bin/sh\n", "executable": True}}
    assert result["output_directories"] == {"tree": {"a/b.txt": "b\n"}}


def test_many_leases_in_a_row_keep_their_exit_codes(target: str, tmp_path: Path) -> None:
    specs = [
        {"root": str(tmp_path), "argv": ["sh", "-c", f"echo {n}; exit {n}"], "env": {"PATH": PATH}} for n in range(8)
    ]
    results = run_actions(target, specs)
    assert [(r["exit_code"], r["stdout"]) for r in results] == [(n, f"{n}\n") for n in range(8)]


def test_a_missing_executable_is_exit_127_and_the_worker_carries_on(target: str, tmp_path: Path) -> None:
    (tmp_path / "not_executable.sh").write_text("#!/bin/sh\n")
    [missing, not_executable, after] = run_actions(
        target,
        [
            {"root": str(tmp_path), "argv": ["./no-such-tool"]},
            {"root": str(tmp_path), "argv": ["./not_executable.sh"]},
            {"root": str(tmp_path), "argv": ["/bin/true"]},
        ],
    )
    assert missing["exit_code"] == 127 and "./no-such-tool': No such file or directory" in missing["stderr"], missing
    assert not_executable["exit_code"] == 126 and "Permission denied" in not_executable["stderr"], not_executable
    assert after["exit_code"] == 0


# Lockdown: what an action can see of the host.


def test_host_paths_the_action_was_not_given_do_not_exist_inside(target: str, workdir: Path, tmp_path: Path) -> None:
    secret = Path(os.environ.get("TEST_TMPDIR", tmp_path)) / "sealing-secret.txt"
    secret.write_text("host only\n")
    work_tree_file = Path(os.path.realpath(__file__))  # Runfiles link back into the repository's work tree.
    host_paths = [
        secret,
        work_tree_file,
        work_tree_file.parent,
        engine.HERE,
        workdir,
        workdir / "worker" / "roots",
        Path.home(),
        Path("/etc/passwd"),
        Path("/work"),
    ]
    host_paths = [p for p in host_paths if p.exists()]
    assert secret in host_paths and work_tree_file in host_paths and workdir / "worker" / "roots" in host_paths
    script = 'for p in "$@"; do if test -e "$p" || test -L "$p"; then echo "visible: $p"; fi; done; cat "$1"'
    [result] = run_actions(
        target,
        [
            {
                "root": str(tmp_path),
                "env": {"PATH": PATH},
                "argv": ["/bin/sh", "-c", script, "sh", *map(str, host_paths)],
            }
        ],
    )
    assert result["stdout"] == "", result
    assert result["exit_code"] == 1 and f"{secret}: No such file or directory" in result["stderr"], result


def test_root_and_the_hosts_tmp_are_not_there_and_the_root_holds_only_system_directories(
    target: str, tmp_path: Path
) -> None:
    fd, host_tmp_file = tempfile.mkstemp(prefix="reapi-sealing-", dir="/tmp")
    os.close(fd)
    try:
        script = (
            'ls -A /; echo ---; ls -A /tmp; echo ---; for p in /root "$1" /home /etc; do '
            'test -e "$p" && echo "visible: $p"; done; touch /tmp/own; ls /tmp'
        )
        [result] = run_actions(
            target,
            [{"root": str(tmp_path), "env": {"PATH": PATH}, "argv": ["/bin/sh", "-c", script, "sh", host_tmp_file]}],
        )
    finally:
        os.unlink(host_tmp_file)
    assert result["exit_code"] == 0, result
    top = sorted(
        {"dev", "proc", "tmp", worker.SANDBOX_ROOT.split("/")[1]} | {name for name, _ in worker.system_entries()}
    )
    assert result["stdout"].split("---\n") == ["\n".join(top) + "\n", "", "own\n"], result


def test_system_python_and_sh_run_inside_at_the_fixed_input_root(target: str, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "in.txt").write_text("input\n")
    program = (
        "import os, sys; data = open('in.txt').read(); "
        "open('out/py.txt', 'w').write(f'{os.getcwd()} {sys.version_info[:2]} {data}')"
    )
    [python, sh] = run_actions(
        target,
        [
            {
                "root": str(tmp_path),
                "working_directory": "sub",
                "argv": ["/usr/bin/python3", "-c", program],
                "output_files": ["out/py.txt"],
            },
            {
                "root": str(tmp_path),
                "working_directory": "sub",
                "env": {"PATH": PATH},
                "argv": ["/bin/sh", "-c", "cat in.txt; pwd; id -u"],
            },
        ],
    )
    assert python["exit_code"] == 0, python
    assert python["output_files"]["out/py.txt"]["text"] == f"{worker.SANDBOX_ROOT}/sub (3, 11) input\n", python
    assert sh["exit_code"] == 0, sh
    assert sh["stdout"] == f"input\n{worker.SANDBOX_ROOT}/sub\n{os.getuid()}\n", sh


def test_the_environment_is_exactly_the_commands(target: str, tmp_path: Path) -> None:
    env = {"PATH": PATH, "ONLY": "this", "SPACED": "a=b c"}
    [given, with_pwd, empty] = run_actions(
        target,
        [
            {"root": str(tmp_path), "env": env, "argv": ["/usr/bin/env"]},
            {"root": str(tmp_path), "env": {"PWD": "/given/by/the/command"}, "argv": ["/usr/bin/env"]},
            {"root": str(tmp_path), "argv": ["/usr/bin/env"]},
        ],
    )
    assert sorted(given["stdout"].splitlines()) == sorted(f"{k}={v}" for k, v in env.items()), given
    assert with_pwd["stdout"] == "PWD=/given/by/the/command\n", with_pwd
    assert (empty["exit_code"], empty["stdout"]) == (0, ""), empty


def test_the_worker_log_names_the_lockdown_once(target: str, workdir: Path) -> None:
    log = (workdir / "worker" / "worker.log").read_text()
    assert log.count(" sealing: ") == 1 and f" sealing: {worker.lockdown_description()}\n" in log, log[:3000]


def test_output_symlinks_to_host_paths_are_never_read(target: str, tmp_path: Path) -> None:
    secret_dir = Path(os.environ.get("TEST_TMPDIR", tmp_path)) / "sealing-secret-dir"
    secret_dir.mkdir(exist_ok=True)
    (secret_dir / "secret.txt").write_text("host only, never an output\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "in.txt").write_text("declared\n")
    script = (
        f"ln -s {secret_dir}/secret.txt leak.txt && ln -s in.txt ok.txt && "
        f"rmdir leak_dir && ln -s {secret_dir} leak_dir && "
        f"mkdir d && ln -s {secret_dir}/secret.txt d/leak && ln -s ../in.txt d/ok"
    )
    [result] = run_actions(
        target,
        [
            {
                "root": str(root),
                "env": {"PATH": PATH},
                "argv": ["/bin/sh", "-c", script],
                "output_files": ["leak.txt", "ok.txt", "leak_dir/secret.txt"],
                "output_directories": ["d"],
            }
        ],
    )
    assert result["exit_code"] == 0, result
    assert "never an output" not in json.dumps(result)
    assert result["output_files"] == {"ok.txt": {"text": "declared\n", "executable": False}}, result
    assert result["output_directories"] == {"d": {"leak": f"-> {secret_dir}/secret.txt", "ok": "declared\n"}}, result


def test_processes_an_action_leaves_behind_are_gone_when_its_result_is(target: str, tmp_path: Path) -> None:
    detached, background = _sleep_argument(), _sleep_argument()
    [result] = run_actions(
        target,
        [
            {
                "root": str(tmp_path),
                "env": {"PATH": PATH},
                "argv": ["/bin/sh", "-c", f"setsid sleep {detached} & sleep {background} & echo started"],
            }
        ],
    )
    assert (result["exit_code"], result["stdout"]) == (0, "started\n"), result
    assert _running_with_argument(detached) == [] and _running_with_argument(background) == []


def test_a_timed_out_action_is_killed_with_everything_it_started(target: str, tmp_path: Path) -> None:
    detached, foreground = _sleep_argument(), _sleep_argument()
    [result] = run_actions(
        target,
        [
            {
                "root": str(tmp_path),
                "env": {"PATH": PATH},
                "timeout": 2,
                "argv": ["/bin/sh", "-c", f"setsid sleep {detached} & sleep {foreground}"],
            }
        ],
        check_status=False,
    )
    assert result["status"] == DEADLINE_EXCEEDED, result
    assert _running_with_argument(detached) == [] and _running_with_argument(foreground) == []
    [after] = run_actions(target, [{"root": str(tmp_path), "argv": ["/bin/true"]}])
    assert after["exit_code"] == 0


def test_sigterm_to_the_worker_mid_action_leaves_no_process(tmp_path: Path) -> None:
    detached, foreground = _sleep_argument(), _sleep_argument()
    spec = [
        {
            "root": str(tmp_path),
            "env": {"PATH": PATH},
            "argv": ["/bin/sh", "-c", f"setsid sleep {detached} & sleep {foreground}"],
        }
    ]
    workdir = tmp_path / "engine"
    with engine.execution_engine(workdir) as target:
        client = subprocess.Popen(
            buildgrid_argv(str(CLIENT), "--target", target),
            env=CLEAN_ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert client.stdin is not None
            client.stdin.write(json.dumps(spec).encode())
            client.stdin.close()
            _wait_until(
                lambda: _running_with_argument(detached) and _running_with_argument(foreground),
                120,
                "the action's processes",
            )
            worker_pid = int((workdir / "worker" / "pid").read_text())
            os.kill(worker_pid, signal.SIGTERM)
            _wait_until(lambda: not _alive(worker_pid), 60, "the worker to exit")
            assert _running_with_argument(detached) == [] and _running_with_argument(foreground) == []
        finally:
            client.kill()
            client.wait()
    log = (workdir / "worker" / "worker.log").read_text()
    assert "abandoned" in log and log.rstrip().endswith("stopped"), log[-3000:]


def test_a_client_cannot_write_the_engines_action_cache(target: str, tmp_path: Path) -> None:
    # A pull request's job storing a forged result for an action's digest: refused, not served to a
    # later lookup, and the action, executed with the cache lookup on, runs for real; the result
    # the worker stored is served from then on.
    (tmp_path / "in.txt").write_text("real\n")
    spec = {"root": str(tmp_path), "argv": ["/bin/cat", "in.txt"], "env": {"PATH": PATH}}
    proc = subprocess.run(
        buildgrid_argv(str(CLIENT), "--target", target, "--forge-result", "forged\n"),
        env=CLEAN_ENV,
        input=json.dumps(spec).encode(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    found = json.loads(proc.stdout)
    assert found == {
        "update_enabled": False,
        "update": found["update"],
        "get": "NOT_FOUND",
        "stdout": "real\n",
        "cached": False,
    }, found
    assert found["update"] != "OK", found
    again = subprocess.run(
        buildgrid_argv(str(CLIENT), "--target", target, "--forge-result", "forged\n"),
        env=CLEAN_ENV,
        input=json.dumps(spec).encode(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert json.loads(again.stdout)["get"] == "OK" and json.loads(again.stdout)["stdout"] == "real\n", again.stdout
    assert json.loads(again.stdout)["cached"] is True, again.stdout


def test_cache_server_round_trips_a_blob(tmp_path: Path) -> None:
    with engine.cache_server(tmp_path / "cache") as cache_target:
        proc = subprocess.run(
            buildgrid_argv(str(CLIENT), "--target", cache_target, "--cas-round-trip", "cached bytes"),
            env=CLEAN_ENV,
            capture_output=True,
            timeout=120,
            check=False,
        )
        server_pid = int((tmp_path / "cache" / "pid").read_text())
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["text"] == "cached bytes"
    assert not _alive(server_pid)
