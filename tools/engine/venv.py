"""BuildGrid's virtual environment for the loopback engine: installed from a hashed lock, in a clean
environment, and verified before it counts.

The engine (engine.py) runs BuildGrid and its worker under a Python of their own, never the
caller's: BuildGrid pins its own grpcio, protobuf and SQLAlchemy. That environment is
`<cache_root()>/buildgrid-<version>-py3.X`, installed from `requirements_lock.txt` beside this
file (a pip-compile lock with hashes of `requirements.in`, by the rules of the repository's own
lock, refreshed with it by `bazel run //:requirements.update`) with `pip install --require-hashes
--no-deps --only-binary=:all:`. Three rules keep a caller's environment out of it:

1. pip and every process of the engine get an environment built from an allowlist
   (`pip_environment`, `process_environment`), never the caller's `PYTHONPATH`, `PYTHONHOME`,
   `PYTHONSTARTUP`, `PYTHONUSERBASE`, `PIP_TARGET`, `PIP_PREFIX`, ...; under `bazel test`, a test's
   `PYTHONPATH` holds its runfiles' packages, and pip would take them for installed.
2. Every Python of the environment runs isolated (`python -I`: no `PYTHON*` variable, no user site,
   not even the script's own folder on `sys.path`).
3. An install counts only after `verify` imported, in such a clean process, every module the engine
   runs (`REQUIRED_MODULES`) from inside the environment; only then is the marker file written,
   naming the lock's sha256. A missing or stale marker, or a failed verification, rebuilds the
   environment from scratch with one line saying why, so a broken environment (an interrupted
   install, an older lock, a module gone) is repaired by the next `engine start` with no hand work.

Standard library only.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from tools.engine.errors import EngineError, tail

HERE = Path(os.path.abspath(__file__)).parent
LOCK = HERE / "requirements_lock.txt"
MARKER = ".oracle-gate-installed"
CACHE_VARIABLE = "ORACLE_GATE_CACHE"
# What the engine imports: bgd's command-line module (its console script is
# `bgd = buildgrid.server.app:cli`) and the two subcommands it runs (`server start`,
# `migrate apply`), the SQL scheduler's drivers (postgresql+psycopg2, engine.postgres_url), the
# migrations, the config loader, grpc and protobuf, and the protos worker.py and the tests' client use.
REQUIRED_MODULES = (
    "buildgrid.server.app.cli",
    "buildgrid.server.app.commands.cmd_server",
    "buildgrid.server.app.commands.cmd_migrate",
    "click",
    "sqlalchemy",
    "sqlalchemy.dialects.postgresql.psycopg2",
    "psycopg2",
    "alembic",
    "yaml",
    "grpc",
    "google.protobuf",
    "buildgrid._protos.build.bazel.remote.execution.v2.remote_execution_pb2_grpc",
    "buildgrid._protos.google.bytestream.bytestream_pb2_grpc",
    "buildgrid._protos.google.devtools.remoteworkers.v1test2.bots_pb2_grpc",
)
# pip's settings that say where packages come from and how to reach them (pip's documentation,
# "Configuration": every option is also a PIP_<NAME> variable), and the proxy and CA settings pip's
# HTTP client reads. Nothing that says where or how to install (PIP_TARGET, PIP_PREFIX, PIP_USER,
# PIP_ROOT, PIP_SRC, PIP_NO_DEPS, ...): those would send the install elsewhere.
PIP_SOURCE_VARIABLES = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_NO_INDEX",
    "PIP_FIND_LINKS",
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_TRUSTED_HOST",
    "PIP_PROXY",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_TIMEOUT",
    "PIP_RETRIES",
    "PIP_CONFIG_FILE",
    "PIP_NO_CACHE_DIR",
    "PIP_CACHE_DIR",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    # Where pip finds the user's configuration file and keeps its download cache.
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
)
PATH = "/usr/local/bin:/usr/bin:/bin"
# Seconds.
INSTALL_TIMEOUT_S = 1800.0
VERIFY_TIMEOUT_S = 300.0

# Run by the environment's Python (`-I`): imports each module and says which failed or came from
# outside the environment (sys.prefix is the environment in a venv).
_VERIFY = """\
import importlib, json, os, sys
prefix = os.path.realpath(sys.prefix) + os.sep
problems = []
for name in sys.argv[1:]:
    try:
        module = importlib.import_module(name)
    except BaseException as exc:
        problems.append(f"{name}: {type(exc).__name__}: {exc}")
        continue
    where = os.path.realpath(getattr(module, "__file__", None) or "")
    if not where.startswith(prefix):
        problems.append(f"{name} comes from {where or 'nowhere'}, outside {sys.prefix}")
print(json.dumps(problems))
"""


class InstallError(EngineError):
    """The environment could not be created, installed or verified; the message has the log tail."""


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the BuildGrid environment (and, by default, the engine's state) is kept.

    Args:
        environ: The environment; `ORACLE_GATE_CACHE` overrides the default.

    Returns:
        `$ORACLE_GATE_CACHE`, else `.cache/oracle-gate` in the user's home directory from the
        password database: under `bazel test`, `$HOME` is the per-run `TEST_TMPDIR`, which would
        reinstall BuildGrid (about a minute) on every run.
    """
    if environ.get(CACHE_VARIABLE):
        return Path(environ[CACHE_VARIABLE])
    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "oracle-gate"


def process_environment(home: Path | str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The whole environment of a process of the engine (BuildGrid, the worker, a verification).

    Args:
        home: The process's HOME, a folder of its own (e.g. its part's work folder).
        environ: The caller's environment; only `TMPDIR` is taken from it.

    Returns:
        A fixed PATH (`PATH`), HOME, `LANG=C.UTF-8`, `TZ=UTC` and the caller's TMPDIR when set: no
        `PYTHON*` variable, no proxy (the engine talks to 127.0.0.1 only), nothing else.
    """
    env = {"PATH": PATH, "HOME": str(home), "LANG": "C.UTF-8", "TZ": "UTC"}
    if environ.get("TMPDIR"):
        env["TMPDIR"] = environ["TMPDIR"]
    return env


def pip_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The whole environment of `python -m venv` and `pip install`.

    Args:
        environ: The caller's environment.

    Returns:
        `process_environment` with the caller's HOME (pip reads the user's configuration file
        there), plus the caller's `PIP_SOURCE_VARIABLES`: where packages come from and how to
        reach them, never where to install them.
    """
    home = environ.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir
    env = process_environment(home, environ)
    env.update({name: environ[name] for name in PIP_SOURCE_VARIABLES if environ.get(name)})
    return env


def lock_digest(lock: Path = LOCK) -> str:
    """The sha256 of the lock file, hex.

    Raises:
        InstallError: the lock cannot be read (a copy of `tools/` without the repository root).
    """
    try:
        return hashlib.sha256(lock.read_bytes()).hexdigest()
    except OSError as exc:
        raise InstallError(f"cannot read the engine's lock {lock}: {exc.strerror or exc}") from None


def buildgrid_version(lock: Path = LOCK) -> str:
    """The BuildGrid version the lock pins (`buildgrid==X` line), e.g. "0.4.4".

    Raises:
        InstallError: the lock cannot be read or pins no buildgrid.
    """
    try:
        text = lock.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InstallError(f"cannot read the engine's lock {lock}: {exc.strerror or exc}") from None
    found = re.search(r"^buildgrid==([A-Za-z0-9._+!-]+)", text, re.MULTILINE)
    if found is None:
        raise InstallError(f"{lock} pins no buildgrid (`buildgrid==VERSION`)")
    return found.group(1)


def venv_folder(environ: Mapping[str, str] = os.environ, lock: Path = LOCK) -> Path:
    """`<cache_root()>/buildgrid-<version>-py<major>.<minor>` for this Python."""
    version = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return cache_root(environ) / f"buildgrid-{buildgrid_version(lock)}-{version}"


def marker_text(lock: Path = LOCK) -> str:
    """What the marker file of an environment installed from `lock` holds: the lock's sha256."""
    return f"lock sha256 {lock_digest(lock)}\n"


def shown(lock: Path) -> str:
    """The lock's path as messages show it: from the repository root when it is this module's own
    (`tools/engine/requirements_lock.txt`), else as given."""
    if lock == LOCK:
        return "tools/engine/requirements_lock.txt"
    return str(lock)


def verify(
    python: Path | str, modules: tuple[str, ...] = REQUIRED_MODULES, timeout: float = VERIFY_TIMEOUT_S
) -> str | None:
    """Imports `modules` with the environment's Python in a clean, isolated process.

    Args:
        python: The environment's `bin/python`.
        modules: Dotted module names; each must import, from a file inside the environment.
        timeout: Seconds.

    Returns:
        None when every module imported from inside the environment; else one line naming the
        first problem (and how many more), e.g. "buildgrid.server.app.cli: ModuleNotFoundError:
        No module named 'click'".
    """
    if not Path(python).is_file():
        return f"{python} does not exist"
    home = Path(python).parent.parent
    try:
        proc = subprocess.run(
            [str(python), "-I", "-B", "-c", _VERIFY, *modules],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=process_environment(home),
            cwd=home,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python} did not run: {exc}"
    try:
        problems = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{python} exited with {proc.returncode}: {last}"
    if not problems:
        return None
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{problems[0]}{more}"


def why_rebuild(venv: Path, lock: Path = LOCK, modules: tuple[str, ...] = REQUIRED_MODULES) -> str | None:
    """Why the environment in `venv` does not count as installed from `lock`, or None when it does.

    Args:
        venv: The environment's folder.
        lock: The lock it must have been installed from.
        modules: What `verify` imports.

    Returns:
        "none yet" (no folder), "no install marker (an interrupted install)", "installed from
        another lock (...)", or what `verify` found wrong; None when the marker names the lock's
        sha256 and every required module imports from inside the environment.
    """
    if not venv.exists():
        return "none yet"
    marker = venv / MARKER
    try:
        recorded = marker.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "no install marker (an interrupted install)"
    expected = marker_text(lock)
    if recorded != expected:
        shown = recorded.strip().splitlines()[0][:80] if recorded.strip() else "empty"
        return f"installed from another lock (marker: {shown})"
    seen = _state(venv, recorded, modules)
    if seen in _VERIFIED:
        return None
    problem = verify(venv / "bin" / "python", modules)
    if problem is not None:
        return f"verification failed: {problem}"
    _VERIFIED.add(seen)
    return None


# Environments this process verified, with what they looked like then (`_state`): a second call
# skips the imports (about 2.5 s) unless the marker or a site-packages folder changed since.
_VERIFIED: set[tuple[str, ...]] = set()


def _state(venv: Path, marker: str, modules: tuple[str, ...]) -> tuple[str, ...]:
    """The environment's folder, marker text, modules and each site-packages folder's mtime (ns):
    adding or removing a package changes its folder's mtime."""
    stamps = []
    for folder in sorted((venv / "lib").glob("python*/site-packages")):
        try:
            stamps.append(f"{folder}:{folder.stat().st_mtime_ns}")
        except OSError:
            stamps.append(f"{folder}:gone")
    return (str(venv), marker, *modules, *stamps)


def _run(argv: list[str], log: Path, env: Mapping[str, str], cwd: Path) -> None:
    """Runs one install step with its output appended to `log`; InstallError with the tail if it fails."""
    with open(log, "ab") as out:
        out.write(f"$ {shlex.join(argv)}\n".encode())
        out.flush()
        try:
            code = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                cwd=cwd,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
    if code != 0:
        state = "timed out" if code is None else f"exited with {code}"
        raise InstallError(f"`{shlex.join(argv)}` {state}; log {log}:\n{tail(log)}")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def buildgrid_python(
    environ: Mapping[str, str] = os.environ,
    lock: Path = LOCK,
    report: Callable[[str], None] = _stderr,
    modules: tuple[str, ...] = REQUIRED_MODULES,
) -> str:
    """The Python of a verified BuildGrid environment, installing or repairing it when needed.

    Under an exclusive lock on `<cache_root()>/.buildgrid.lock` (concurrent installers wait): when
    `why_rebuild` finds a reason, reports one line naming the folder and the reason, removes the
    folder, creates a venv with this Python (`python -I -m venv`), runs `pip install
    --require-hashes --no-deps --only-binary=:all: -r <lock>` with its Python (`-I`) in
    `pip_environment(environ)`, verifies it (`verify`) and only then writes the marker. pip's
    output goes to `<cache_root()>/buildgrid-install-py3.X.log`.

    Args:
        environ: The caller's environment, for `cache_root()` and pip's sources.
        lock: The hashed lock to install (default: requirements_lock.txt beside this module).
        report: Receives the one line said before an install (default: printed to stderr).
        modules: What `verify` imports (default: REQUIRED_MODULES).

    Returns:
        The absolute path of the environment's `bin/python`.

    Raises:
        InstallError: the lock is unreadable, venv creation or pip failed, or the fresh install
            fails verification; the message holds the log tail or the verification's finding.
    """
    venv = venv_folder(environ, lock)
    python = venv / "bin" / "python"
    root = venv.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".buildgrid.lock", "w", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        reason = why_rebuild(venv, lock, modules)
        if reason is None:
            return str(python)
        report(f"oracle-gate engine: installing BuildGrid's environment in {venv} from {shown(lock)}: {reason}")
        _remove(venv)
        _install(venv, python, lock, environ, modules)
        return str(python)


def _remove(venv: Path) -> None:
    """Removes the folder `venv`, or the file or symlink in its place, if there is one."""
    if venv.exists() or venv.is_symlink():
        if venv.is_dir() and not venv.is_symlink():
            shutil.rmtree(venv)
        else:
            venv.unlink()


def _install(venv: Path, python: Path, lock: Path, environ: Mapping[str, str], modules: tuple[str, ...]) -> None:
    """Creates the venv `venv` (its Python `python`), installs `lock` into it with pip, verifies it
    and only then writes the marker; the log is `<venv's parent>/buildgrid-install-py3.X.log`.

    Raises:
        InstallError: venv creation or pip failed, or the fresh install fails verification.
    """
    root = venv.parent
    log = root / f"buildgrid-install-{venv.name.rsplit('-', 1)[1]}.log"
    log.write_bytes(b"")
    env = pip_environment(environ)
    _run([sys.executable, "-I", "-m", "venv", str(venv)], log, env, root)
    _run(
        [
            str(python),
            "-I",
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--require-hashes",
            "--no-deps",
            "--only-binary=:all:",
            "-r",
            str(lock),
        ],
        log,
        env,
        root,
    )
    problem = verify(python, modules)
    if problem is not None:
        raise InstallError(f"the fresh environment in {venv} fails verification: {problem}; log {log}")
    (venv / MARKER).write_text(marker_text(lock), encoding="utf-8")


def isolated(python: Path | str, *argv: str) -> list[str]:
    """The command line that runs `argv` (a script and its arguments, or `-c CODE ...`) with the
    environment's `python` isolated: `[python, "-I", "-B", *argv]` (`-B`: no bytecode written)."""
    return [str(python), "-I", "-B", *argv]
