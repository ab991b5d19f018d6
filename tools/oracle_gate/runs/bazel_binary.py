"""Which program the gate runs as Bazel: a real Bazel binary, never a wrapper the checked tree chooses.

Bazel's launcher script (Debian's `/usr/bin/bazel`, `scripts/packages/bazel.sh` in Bazel's source)
runs the workspace's executable `tools/bazel` instead of Bazel when there is one, and picks the
binary from the workspace's `.bazelversion`; Bazelisk downloads and runs the Bazel that
`.bazelversion` or `.bazeliskrc` name. Both are files of the change, read before any sandbox
exists. So the gate resolves the binary itself (`resolve`), in this order:

1. `$ORACLE_GATE_BAZEL`, an absolute path set by whoever runs the gate (the change cannot set it),
   taken as it is;
2. the `bazel` on PATH when it is a binary (an ELF file, as Debian sid's Bazel 7 is);
3. when that `bazel` is the launcher script: the binary beside it that the launcher would have run
   for an empty `.bazelversion`, `bazel-real`, else the highest `bazel-<version>` (Debian 12's
   `bazel-bootstrap` ships `/usr/bin/bazel-4`).

Bazelisk is refused (exit 1): it would read the change's `.bazelversion` and `.bazeliskrc`.
Standard library only.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping

from tools.oracle_gate.errors import GateError

BAZEL_VARIABLE = "ORACLE_GATE_BAZEL"
# The workspace file the launcher runs instead of Bazel (Bazel's scripts/packages/bazel.sh).
WRAPPER = "tools/bazel"
_VERSIONED = re.compile(r"bazel-(\d+(?:\.\d+)*)\Z")
_ELF = b"\x7fELF"


def _is_binary(path: str) -> bool:
    """Whether `path` is an executable ELF file (not a script)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == _ELF and os.access(path, os.X_OK)
    except OSError:
        return False


def _is_bazelisk(path: str) -> bool:
    return "bazelisk" in os.path.basename(path).lower()


def _beside(launcher: str) -> str | None:
    """The binary the launcher at `launcher` runs with no `.bazelversion`: `bazel-real`, else the
    highest `bazel-<version>` in its folder."""
    folder = os.path.dirname(launcher)
    real = os.path.join(folder, "bazel-real")
    if _is_binary(real):
        return real
    versions = []
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        match = _VERSIONED.match(name)
        if match and _is_binary(os.path.join(folder, name)):
            versions.append((tuple(int(p) for p in match.group(1).split(".")), name))
    return os.path.join(folder, max(versions)[1]) if versions else None


def resolve(environ: Mapping[str, str]) -> str:
    """The absolute path of the Bazel binary the gate runs.

    Args:
        environ: the gate's environment: `ORACLE_GATE_BAZEL` and `PATH` are read.

    Returns:
        `$ORACLE_GATE_BAZEL` as given, else the real path of an executable ELF file.

    Raises:
        GateError: (exit 1) when `ORACLE_GATE_BAZEL` is not an absolute path to an executable file,
            when no `bazel` is on PATH, when it is Bazelisk, or when it is a launcher script with
            no binary beside it; each message says to set `ORACLE_GATE_BAZEL`.
    """
    given = environ.get(BAZEL_VARIABLE, "")
    if given:
        if not os.path.isabs(given) or not os.path.isfile(given) or not os.access(given, os.X_OK):
            raise GateError(f"${BAZEL_VARIABLE} is {given!r}, not the absolute path of an executable file")
        return given
    # Only absolute PATH entries: an empty or relative one names the working directory, which may
    # be the checked tree, and a `bazel` committed there would be run.
    path = os.pathsep.join(p for p in environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(p))
    found = shutil.which("bazel", path=path)
    if found is None:
        raise GateError("bazel is not installed; run tools/setup.sh, set $ORACLE_GATE_BAZEL, or pass --results FILE")
    real = os.path.realpath(found)
    if _is_bazelisk(real):
        raise GateError(
            f"bazel on PATH is Bazelisk ({real}), which runs the Bazel the change's .bazelversion or "
            f".bazeliskrc names; set ${BAZEL_VARIABLE} to a Bazel binary"
        )
    if _is_binary(real):
        return real
    binary = _beside(real)
    if binary is None:
        raise GateError(
            f"bazel on PATH ({real}) is a script with no Bazel binary beside it (bazel-real or "
            f"bazel-<version>); set ${BAZEL_VARIABLE} to a Bazel binary"
        )
    return os.path.realpath(binary)


def wrapper_note(repo: str) -> str | None:
    """A line for the report when the tree holds a `tools/bazel` the launcher would run instead of
    Bazel (a file, or a link: the launcher tests `-x` and `-f`), which the gate never runs; None
    otherwise, and for a folder of that name (Starlark rules often live in `tools/bazel/`)."""
    path = os.path.join(repo, WRAPPER)
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        return f"{WRAPPER} is in the tree and was not run: the gate runs the Bazel binary itself"
    return None
