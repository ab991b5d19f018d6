"""`oracle_gate engine start` on an empty cache with a poisoned environment, and the repair of a
broken BuildGrid environment, with the real lock (tools/engine/requirements_lock.txt) from the configured
PyPI index.

The poison is what a test's environment under `bazel test` holds, and more: a PYTHONPATH folder
with installed-looking `click`, `jsonschema` and `requests` at the lock's versions (pip without a
clean environment prints `Requirement already satisfied` for them and leaves them out of the
environment), a user base with the same, a startup file, and PIP_TARGET / PIP_PREFIX. Each test's
cache is its own temporary folder, so nothing on the machine decides the outcome.

It needs no nested Bazel: it installs and starts the engine, which `check --remote` would use."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.engine import service, venv
from tools.engine.engine import pid_alive
from tools.testing.workspace_copy import gate, nested_env

SHADOWED = ("click", "jsonschema", "requests")


def pinned(name: str) -> str:
    """The version the engine's lock pins for `name`."""
    found = re.search(rf"^{re.escape(name)}==(\S+)", venv.LOCK.read_text(), re.MULTILINE)
    assert found, name
    return found.group(1)


def plant(site: Path) -> None:
    """Installed-looking distributions of SHADOWED in `site`, each failing on import."""
    for name in SHADOWED:
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(f"raise ImportError('the poisoned {name} was imported')\n")
        info = site / f"{name}-{pinned(name)}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {pinned(name)}\n")
        (info / "INSTALLER").write_text("pip\n")
        (info / "RECORD").write_text("")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty cache folder of this module's own (removed afterwards)."""
    folder = tmp_path_factory.mktemp("cache")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def engine_env(cache: Path) -> dict[str, str]:
    return dict(nested_env(), ORACLE_GATE_CACHE=str(cache), **{service.STATE_DIR_VARIABLE: str(cache / "engine")})


def start_and_stop(repo: Path, env: dict[str, str]) -> str:
    """`engine start`, then `engine stop`; asserts both worked and every process is gone; returns
    start's stderr."""
    started = gate(repo, "engine", "start", env=env)
    pids: list[int] = []
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        state = json.loads((Path(env[service.STATE_DIR_VARIABLE]) / service.STATE_FILE).read_text())
        pids = [state["supervisor"], *state["pids"].values()]
        assert sorted(state["pids"]) == ["buildgrid", "postgres", "worker"]
    finally:
        stopped = gate(repo, "engine", "stop", env=env)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not [p for p in pids if pid_alive(p)]
    return started.stderr


def site_packages(cache: Path) -> Path:
    return next(cache.glob("buildgrid-*-py*/lib/python*/site-packages"))


def test_a_poisoned_environment_installs_a_complete_environment_on_an_empty_cache(repo, cache, tmp_path):
    poison = tmp_path / "pythonpath"
    plant(poison)
    plant(tmp_path / "userbase" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages")
    (tmp_path / "startup.py").write_text("raise SystemExit('startup file ran')\n")
    env = dict(
        engine_env(cache),
        PYTHONPATH=str(poison),
        PYTHONUSERBASE=str(tmp_path / "userbase"),
        PYTHONSTARTUP=str(tmp_path / "startup.py"),
        PIP_TARGET=str(tmp_path / "target"),
        PIP_PREFIX=str(tmp_path / "prefix"),
    )
    said = start_and_stop(repo, env)
    assert re.search(
        r"^oracle-gate engine: installing BuildGrid's environment in .* from "
        r"tools/engine/requirements_lock.txt: none yet$",
        said,
        re.MULTILINE,
    ), said
    site = site_packages(cache)
    for name in SHADOWED:
        assert (site / name / "__init__.py").is_file(), name
    assert not (tmp_path / "target").exists() and not (tmp_path / "prefix").exists()
    # Then a plain start, without the poison, uses that environment as it is.
    again = start_and_stop(repo, engine_env(cache))
    assert "installing" not in again, again


def test_an_environment_that_lacks_a_module_is_repaired_by_the_next_start(repo, cache):
    if not list(cache.glob("buildgrid-*")):  # run alone: install first
        start_and_stop(repo, engine_env(cache))
    site = site_packages(cache)
    shutil.rmtree(site / "click")
    said = start_and_stop(repo, engine_env(cache))
    assert re.search(
        r"^oracle-gate engine: installing BuildGrid's environment in .*: verification failed: "
        r".*No module named 'click'",
        said,
        re.MULTILINE,
    ), said
    assert (site_packages(cache) / "click" / "__init__.py").is_file()
