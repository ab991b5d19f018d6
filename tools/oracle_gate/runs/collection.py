"""Traces of an output collected through a symlinked folder, looked for after the change's invocation.

Bazel's server collects each declared output of a sandboxed action by moving it out of the
sandbox, as its own user and outside the sandbox: an action that replaces its output folder by a
symlink into a folder the server can reach gets whatever file of that name lies there moved into
its outputs (docs/threat-model.md). The seal keeps secrets out of the server's reach; this module
looks for the trace the mechanism leaves where it can be seen, so that a run in which it happened
fails (exit 4) naming the action:

- before the change's invocation, the gate writes a canary (random bytes) into each folder of its
  own that it protects (the judge's views of every configuration, the oracle test logs) and records
  the sha256 of every file there and under the tree's `oracles/` (`arm`);
- after it (`traces`), each declared output of a spawn that ran (from the execution log) must not
  be a link, must not hold a link, and must not have the bytes of a canary or of a file the gate
  wrote (a committed blob may be copied honestly, so its bytes are not compared); and every
  canary and protected file must still be where it was, with the same bytes.

What it cannot see: a file taken from a folder the gate does not protect (nothing the gate knows
of is there), and bytes the action changed after taking them (a transformed copy).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tools.oracle_gate.runs.execlog import Escape, Spawn

CANARY_NAME = ".oracle-gate-canary"
# Files shorter than this are not compared by their bytes: `[]`, `{}` or an empty file could be an
# output of the change's own by chance. Every canary is longer.
MIN_COMPARED_BYTES = 16
# Protected files larger than this are not hashed (a large blob costs a read on every check).
MAX_GUARDED_BYTES = 64 << 20
# Outputs larger than the largest protected file cannot be a copy of one and are not hashed.
_CHUNK = 1 << 20
_CACHE_HITS = ("remote cache hit", "disk cache hit")
_MECHANISM = (
    "an output folder replaced by a symlink, which Bazel's server follows when it collects outputs: "
    "docs/threat-model.md"
)


@dataclass
class Guard:
    """What `arm` recorded before the change's invocation.

    Attributes:
        digests: sha256 hex -> the protected file (or canary) that has those bytes.
        present: path -> sha256 of every protected file and canary, which must stay in place.
        largest: the size in bytes of the largest of them.
    """

    digests: dict[str, str] = field(default_factory=dict)
    present: dict[str, str] = field(default_factory=dict)
    largest: int = 0


def _sha256(path: str, limit: int) -> str | None:
    """The sha256 of the regular file `path` (never through a link), or None when it is not one or
    is larger than `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        digest = hashlib.sha256()
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _files(folder: str) -> Iterable[str]:
    """Every regular file under `folder`, links not followed."""
    for top, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
        for name in names:
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path


def arm(folders: Sequence[str], readable: Sequence[str] = ()) -> Guard:
    """Writes a canary into each existing folder of `folders` (the gate's own: judge's views, oracle
    test logs) and records the digest of every file in them, which no output may have, and of
    every file in `readable` (folders the gate cannot write, such as the work tree's `oracles/`),
    which must stay in place. Raises nothing: a folder that cannot be written gets no canary."""
    guard = Guard()
    for folder in folders:
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        canary = os.path.join(folder, CANARY_NAME)
        try:
            if os.path.lexists(canary):
                os.unlink(canary)
            with open(canary, "xb") as f:
                f.write(secrets.token_hex(32).encode() + b"\n")
        except OSError:
            pass
    for folder in [*folders, *readable]:
        if not os.path.isdir(folder):
            continue
        for path in _files(folder):
            size = os.path.getsize(path)
            if size > MAX_GUARDED_BYTES:
                continue
            digest = _sha256(path, size)
            if digest is None:
                continue
            guard.present[path] = digest
            # The gate's own files only: a committed file's bytes (a blob) may be the harness's
            # honest copy of it.
            if size >= MIN_COMPARED_BYTES and folder in folders:
                guard.digests.setdefault(digest, path)
                guard.largest = max(guard.largest, size)
    return guard


def execroot(bazel_bin: str) -> str:
    """The execution root that the execution log's output paths are relative to: three folders
    above `bazel-bin` (`<execroot>/bazel-out/<configuration>/bin`)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(bazel_bin)))


def traces(guard: Guard, spawns: Sequence[Spawn], execroot: str) -> list[Escape]:
    """The traces of an output collected through a symlinked folder after the change's invocation
    (module docstring): one Escape per spawn whose output is a link, holds one, or has the bytes of
    a protected file; and one for a protected file or canary gone or changed. Raises nothing."""
    found: list[Escape] = []
    for spawn in spawns:
        if spawn.runner in _CACHE_HITS:
            continue
        why = ""
        for output in spawn.outputs:
            why = _output_trace(guard, os.path.join(execroot, output), execroot)
            if why:
                found.append(Escape(spawn.mnemonic, spawn.runner, output, why))
                break
    for path, digest in sorted(guard.present.items()):
        if _sha256(path, max(guard.largest, os.path.getsize(path) if os.path.isfile(path) else 0)) != digest:
            found.append(
                Escape(
                    "",
                    "",
                    _shown(path, execroot),
                    "is gone or changed while the change's code ran: "
                    f"Bazel's server moved it out as an action's output ({_MECHANISM})",
                )
            )
            break
    return found


def _shown(path: str, execroot: str) -> str:
    """`path` relative to the execution root when it lies there, else as it is."""
    return os.path.relpath(path, execroot) if path.startswith(execroot.rstrip(os.sep) + os.sep) else path


def _output_trace(guard: Guard, path: str, execroot: str) -> str:
    """Why the declared output at `path` is a trace, or ""."""
    if os.path.islink(path):
        return f"and left that output a link ({_MECHANISM})"
    candidates = _files(path) if os.path.isdir(path) else [path]
    for top, dirs, names in os.walk(path) if os.path.isdir(path) else ():
        for name in [*dirs, *names]:
            if os.path.islink(os.path.join(top, name)):
                return f"and left a link in that output ({_MECHANISM})"
    for file in candidates:
        digest = _sha256(file, guard.largest)
        if digest is not None and digest in guard.digests:
            return (
                f"and took {_shown(guard.digests[digest], execroot)}, which the gate protects: the output has its "
                f"bytes ({_MECHANISM})"
            )
    return ""
