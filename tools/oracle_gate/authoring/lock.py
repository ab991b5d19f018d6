"""`lock`: an adopting repository's hash-pinned lock of its third-party Python distributions, and
which distribution each imported module comes from (docs/adopting.md, "Third-party dependencies").

The lock is resolved by the pip of the Python that runs the gate, from pip's own configured index
(`pip install --dry-run --report`, wheels only), so it works wherever `pip install` does, offline
mirrors included; it holds pins and sha256 hashes alone (`tools/lock/lock_check.py`'s allow-list,
the rule the repository rules apply before pip runs) and no path or index of this machine. A
requirements file that is a lock already (every line a pin or a hash) is taken as it is.

Which top-level modules a distribution gives comes from its wheel (`top_level.txt`, else the
paths of its `RECORD`), downloaded with `pip download --require-hashes` into a temporary folder.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.lock.lock_check import line_problems, normalize, parse_lock
from tools.oracle_gate.errors import UsageError

LOCK_NAME = "requirements_lock.txt"
# The first line of a lock this module writes; `SOURCE_PREFIX` names the requirements file it was resolved from.
HEADER = "# Third-party Python distributions, pinned with their wheels' sha256 by oracle-gate's `lock`."
SOURCE_PREFIX = "# source: "
# pip's settings that would send an install elsewhere, cleared as the repository rules clear them.
_PIP_ENV = {"PIP_PREFIX": "", "PIP_REQUIRE_VIRTUALENV": "0", "PIP_ROOT": "", "PIP_TARGET": "", "PIP_USER": "0"}
# A requirements.in line: a name, extras, a version specifier, a marker; nothing that is a pip option, URL or path.
_REQUIREMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._, -]*\])?\s*([<>=!~][^#@]*)?(;[^#@]*)?")


@dataclass(frozen=True)
class Pin:
    """One locked distribution: its name as its metadata gives it, version, and its wheel's sha256 hex digest."""

    name: str
    version: str
    sha256: str


class LockError(UsageError):
    """A requirements file that cannot be locked (exit 1): one line naming the file, line and why."""


def is_lock(text: str) -> bool:
    """True when `text` is a lock already: at least one pin, every pin with a sha256 hash, and
    every line passing the lock's allow-list (`lock_check.parse_lock`, `lock_check.line_problems`)."""
    pins, hashed, _ = parse_lock(text)
    return bool(pins) and set(pins) == hashed and not line_problems(text)


def check_requirements(text: str, path: str) -> None:
    """Refuses a requirements.in line pip would read as an option, a URL or a path (`-e`, `-r`,
    `--index-url`, `git+https://...`, `./lib`): the lock must come from the index alone.

    Raises:
        LockError: (exit 1) naming `path`, the line number and the line.
    """
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if not _REQUIREMENT.fullmatch(line):
            raise LockError(
                f"{path} line {number}: {line[:80]!r} is not a requirement of a distribution by name "
                "(pip options, URLs and paths are not locked)"
            )


def resolve(requirements: str, environ: Mapping[str, str], python: str = sys.executable) -> list[Pin]:
    """The distributions pip installs for the requirements file `requirements` (wheels only, every
    dependency included), sorted by normalized name.

    Args:
        requirements: path of a requirements.in file (checked by `check_requirements`).
        environ: the environment pip runs with (its index settings; `_PIP_ENV` cleared).
        python: the interpreter whose pip resolves.

    Raises:
        LockError: (exit 1) when pip cannot resolve them (its first ERROR line), a distribution has
            no wheel for this platform, or the index gives no sha256 for a wheel.
    """
    with open(requirements, encoding="utf-8") as f:
        check_requirements(f.read(), requirements)
    with tempfile.TemporaryDirectory(prefix="oracle-gate-lock-") as tmp:
        report = os.path.join(tmp, "report.json")
        proc = _pip(
            python,
            environ,
            "install",
            "--dry-run",
            "--ignore-installed",
            "--only-binary=:all:",
            "--quiet",
            "--report",
            report,
            "-r",
            os.path.abspath(requirements),
        )
        if proc.returncode != 0:
            raise LockError(f"{requirements}: pip could not resolve it: {_pip_error(proc.stderr)}")
        with open(report, encoding="utf-8") as f:
            items = json.load(f).get("install", [])
    pins = []
    for item in items:
        meta = item.get("metadata", {})
        info = item.get("download_info", {}).get("archive_info", {})
        digest = (info.get("hashes") or {}).get("sha256") or info.get("hash", "").partition("sha256=")[2]
        if not re.fullmatch(r"[0-9a-f]{64}", digest or ""):
            raise LockError(
                f"{requirements}: pip's index gives no sha256 for {meta.get('name')} "
                f"{meta.get('version')}, so it cannot be hash-pinned"
            )
        pins.append(Pin(meta["name"], meta["version"], digest))
    return sorted(pins, key=lambda p: normalize(p.name))


def _pip(python: str, environ: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [python, "-I", "-m", "pip", *args, "--disable-pip-version-check"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            env={**environ, **_PIP_ENV},
            timeout=1200,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LockError(f"cannot run pip: {exc}") from None


def _pip_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("ERROR:"):
            return line
    return lines[-1] if lines else "no output"


def lock_text(pins: Sequence[Pin], source: str) -> str:
    """The lock of `pins`: the header, the source line, then `name==version \\` and its indented
    `--hash=sha256:...` line per distribution. Passes `lock_check.line_problems`."""
    lines = [HEADER, f"{SOURCE_PREFIX}{source}", "# Refresh: bazel run @oracle_gate//tools:oracle_gate -- lock", ""]
    for pin in pins:
        lines += [f"{pin.name}=={pin.version} \\", f"    --hash=sha256:{pin.sha256}"]
    return "\n".join(lines) + "\n"


def requirements_path(repo: str, given: str) -> str:
    """The path of `--requirements FILE`: a relative FILE is read from the repository's root (as
    `git -C` reads paths), whatever the current directory, so that the gate run from its own
    checkout never takes its own requirements.in.

    Raises:
        LockError: (exit 1) when the file is not one of the repository's: the lock names its source
            relative to the root, for `lock` to refresh it from.
    """
    path = given if os.path.isabs(given) else os.path.join(repo, given)
    root = os.path.realpath(repo)
    if not os.path.realpath(path).startswith(root + os.sep):
        raise LockError(
            f"--requirements {given}: {os.path.realpath(path)} is not a file of the repository {root}; "
            "the lock names its source for `lock` to refresh from, so put the requirements file in the repository"
        )
    return path


def source_of(text: str) -> str | None:
    """The requirements file a lock this module wrote names on its source line, or None."""
    for line in text.splitlines()[:4]:
        if line.startswith(SOURCE_PREFIX):
            return line[len(SOURCE_PREFIX) :].strip() or None
    return None


def modules_of(lock: str, environ: Mapping[str, str], python: str = sys.executable) -> dict[str, str]:
    """Top-level module name -> normalized distribution name, for every wheel of the lock file
    `lock` (downloaded, hash-checked, into a temporary folder).

    Raises:
        LockError: (exit 1) when pip cannot download them (its first ERROR line).
    """
    with tempfile.TemporaryDirectory(prefix="oracle-gate-wheels-") as tmp:
        proc = _pip(
            python,
            environ,
            "download",
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            "--quiet",
            "-d",
            tmp,
            "-r",
            os.path.abspath(lock),
        )
        if proc.returncode != 0:
            raise LockError(f"{lock}: pip could not download its wheels: {_pip_error(proc.stderr)}")
        out: dict[str, str] = {}
        for name in sorted(os.listdir(tmp)):
            if name.endswith(".whl"):
                dist, modules = wheel_modules(os.path.join(tmp, name))
                for module in modules:
                    out.setdefault(module, dist)
    return out


def wheel_modules(path: str) -> tuple[str, list[str]]:
    """(normalized distribution name, its top-level modules) of the wheel at `path`: the names in
    its `*.dist-info/top_level.txt`, else the first part of each path its `RECORD` lists (a `.py`
    file's stem or a folder), without `*.dist-info`, `*.data` and `__pycache__`."""
    dist = normalize(os.path.basename(path).split("-", 1)[0])
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        top = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/top_level.txt")]
        if top:
            text = wheel.read(top[0]).decode("utf-8", "replace")
            return dist, sorted({line.strip().split("/")[0] for line in text.splitlines() if line.strip()})
    found = set()
    for name in names:
        first = name.split("/", 1)[0]
        if first.endswith((".dist-info", ".data")) or first == "__pycache__":
            continue
        if "/" in name or first.endswith(".py"):
            found.add(first.removesuffix(".py"))
    return dist, sorted(m for m in found if m.isidentifier())


def imports_of(folder: str) -> set[str]:
    """The top-level module names the `.py` files under `folder` import absolutely (`import a.b`,
    `from a import b`; relative imports are the package's own). A file that does not parse counts
    for nothing. Raises nothing."""
    out: set[str] = set()
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(root, name), "rb") as f:
                    tree = ast.parse(f.read())
            except (OSError, SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    out.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    out.add(node.module.split(".")[0])
    return out


def third_party(imported: set[str], own: str, modules: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(distributions, unknown modules) of the modules a production package `own` imports: each
    imported module that a locked wheel gives maps to its distribution; one that is neither the
    package itself, the standard library (`sys.stdlib_module_names`) nor a locked wheel's is unknown."""
    dists = sorted({modules[m] for m in imported if m in modules and m != own})
    unknown = sorted(
        m for m in imported if m not in modules and m != own and m not in sys.stdlib_module_names and m != "__future__"
    )
    return dists, unknown
