"""The REAPI engine end to end: BuildGrid + PostgreSQL + worker.py, driven by a real REAPI client.

The client (`client_check.py`) runs under BuildGrid's Python, which has grpcio and the protos.
Unit tests of the engine's pure helpers come first; they need no server.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.tests.reapi import engine

CLIENT = engine.HERE / "client_check.py"
PATH = "/bin:/usr/bin"


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
    assert "allow-updates: true" in config


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


def run_actions(target: str, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Executes actions through the Execution service (see client_check.py for the shapes)."""
    proc = subprocess.run([engine.buildgrid_python(), "-B", str(CLIENT), "--target", target],
                          input=json.dumps(specs).encode(), capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    results = json.loads(proc.stdout)
    for result in results:
        assert result["status"] == 0, result
    return results


def test_action_reads_its_input_and_returns_the_output_bytes(target: str, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"hello \xe2\x9c\x93 reapi\n")
    [result] = run_actions(target, [{
        "root": str(tmp_path), "argv": ["sh", "-c", "cat in.txt > out/result.txt"], "env": {"PATH": PATH},
        "output_files": ["out/result.txt"]}])
    assert result["exit_code"] == 0, result
    assert result["output_files"] == {"out/result.txt": {"text": "hello \u2713 reapi\n", "executable": False}}


def test_a_host_file_outside_the_input_root_is_not_there(target: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "in.txt").write_text("declared\n")
    (tmp_path / "secret.txt").write_text("undeclared\n")
    assert (root / "../secret.txt").read_text() == "undeclared\n"  # Reachable from the client's tree.
    [result] = run_actions(target, [{"root": str(root), "argv": ["cat", "in.txt", "../secret.txt"], "env": {"PATH": PATH}}])
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
    [result] = run_actions(target, [{
        "root": str(tmp_path), "working_directory": "sub", "env": {"PATH": PATH, "ONLY": "this"},
        "argv": ["/bin/sh", "-c", "./tool.sh && cat data_link/x.txt && test -x tool.sh && /usr/bin/env"]}])
    assert result["exit_code"] == 0, result
    tool, x, *env = result["stdout"].splitlines()
    assert (tool, x) == ("tool ran", "x")
    assert sorted(line for line in env if not line.startswith("PWD=")) == ["ONLY=this", f"PATH={PATH}"]
    assert [line for line in env if line.startswith("PWD=")][0].endswith("/sub")


def test_outputs_missing_ones_omitted_modes_and_directories(target: str, tmp_path: Path) -> None:
    script = "printf '#!/bin/sh\\n' > bin/made.sh && chmod +x bin/made.sh && mkdir -p tree/a && echo b > tree/a/b.txt"
    [result] = run_actions(target, [{
        "root": str(tmp_path), "argv": ["sh", "-c", script], "env": {"PATH": PATH},
        "output_files": ["bin/made.sh", "never/made.txt"], "output_directories": ["tree", "never_dir"]}])
    assert result["exit_code"] == 0, result
    assert result["output_files"] == {"bin/made.sh": {"text": "#!/bin/sh\n", "executable": True}}
    assert result["output_directories"] == {"tree": {"a/b.txt": "b\n"}}


def test_many_leases_in_a_row_keep_their_exit_codes(target: str, tmp_path: Path) -> None:
    specs = [{"root": str(tmp_path), "argv": ["sh", "-c", f"echo {n}; exit {n}"], "env": {"PATH": PATH}}
             for n in range(8)]
    results = run_actions(target, specs)
    assert [(r["exit_code"], r["stdout"]) for r in results] == [(n, f"{n}\n") for n in range(8)]


def test_a_missing_executable_is_exit_127_and_the_worker_carries_on(target: str, tmp_path: Path) -> None:
    [missing, after] = run_actions(target, [
        {"root": str(tmp_path), "argv": ["./no-such-tool"]},
        {"root": str(tmp_path), "argv": ["/bin/true"]}])
    assert missing["exit_code"] == 127 and "cannot execute" in missing["stderr"]
    assert after["exit_code"] == 0


def test_cache_server_round_trips_a_blob(tmp_path: Path) -> None:
    with engine.cache_server(tmp_path / "cache") as cache_target:
        proc = subprocess.run([engine.buildgrid_python(), "-B", str(CLIENT), "--target", cache_target,
                               "--cas-round-trip", "cached bytes"], capture_output=True, timeout=120, check=False)
        server_pid = int((tmp_path / "cache" / "pid").read_text())
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["text"] == "cached bytes"
    assert not _alive(server_pid)
