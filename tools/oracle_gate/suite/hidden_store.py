"""The hidden store: blobs whose bytes are in no commit, held where only the gate's CI job reads them.

A row's `hidden_sha256` names one (docs/oracles.md, "Hidden samples"). The store is a folder named by
`ORACLE_GATE_HIDDEN_STORE`: one regular file per blob, named by the 64 lowercase hex digits of its
bytes' sha256, nothing else. Only `check --clean` reads it: each blob is verified here and written
into the clean run's pristine tree under `schema.HIDDEN_DIR`, the one place the oracle suite picks it up
(`glob(["blobs/**"])`); no commit may hold a file there (`loader`). What this guarantees and what
leaks: docs/threat-model.md, "Hidden samples".
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.spec.schema import SHA256_PATTERN

STORE_VARIABLE = "ORACLE_GATE_HIDDEN_STORE"
# A hidden blob is read whole into memory to be verified; a store file larger than this is refused.
MAX_HIDDEN_BYTES = 256 << 20


@dataclass
class Fetched:
    """What the store gave for the digests asked.

    Attributes:
        blobs: digest -> bytes, for every file that exists and whose bytes match its name.
        missing: digests the store has no file for.
        problems: one line per file the store holds wrongly (bytes that do not match the name, a
            symlink, not a regular file, too large, unreadable).
    """

    blobs: dict[str, bytes] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def store_folder(environ: Mapping[str, str], repo: str) -> str | None:
    """The store folder `ORACLE_GATE_HIDDEN_STORE` names (made absolute), or None when it is unset
    or empty.

    Raises:
        GateError: (exit 1) when the folder does not exist, is not a directory, is a symlink, or lies
            inside the repository `repo` (where the change's code and its commits could read it).
    """
    value = environ.get(STORE_VARIABLE, "")
    if not value:
        return None
    folder = os.path.abspath(value)
    check_folder(folder, repo)
    return folder


def check_folder(folder: str, repo: str) -> None:
    """Refuses a store `folder` that is missing, not a directory, a symlink, or inside `repo`.

    Raises:
        GateError: (exit 1) naming the folder and why.
    """
    try:
        info = os.lstat(folder)
    except OSError as exc:
        raise GateError(f"{STORE_VARIABLE}={folder}: cannot read it: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise GateError(f"{STORE_VARIABLE}={folder}: is a symlink; name the store folder itself")
    if not stat.S_ISDIR(info.st_mode):
        raise GateError(f"{STORE_VARIABLE}={folder}: is not a directory")
    real, top = os.path.realpath(folder), os.path.realpath(repo)
    if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
        raise GateError(
            f"{STORE_VARIABLE}={folder}: lies inside the repository {repo}, where the change's code and "
            "its commits can read it; keep the store outside every checkout (docs/oracles.md, "
            '"Hidden samples")'
        )


def fetch(folder: str, digests: Iterable[str]) -> Fetched:
    """Reads and verifies the store files of `digests` from `folder`. Never follows a symlink: a
    file is opened with O_NOFOLLOW and must be regular. Raises nothing."""
    out = Fetched()
    for digest in sorted(set(digests)):
        path = os.path.join(folder, digest)
        try:
            with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NOFOLLOW)) as f:
                info = os.fstat(f.fileno())
                why = (
                    "is not a regular file"
                    if not stat.S_ISREG(info.st_mode)
                    else f"is {info.st_size} bytes, more than {MAX_HIDDEN_BYTES}"
                    if info.st_size > MAX_HIDDEN_BYTES
                    else ""
                )
                data = b"" if why else f.read()
        except FileNotFoundError:
            out.missing.append(digest)
            continue
        except OSError as exc:
            why = "is a symlink; the store holds regular files only" if os.path.islink(path) else str(exc.strerror)
        if why:
            out.problems.append(f"{path}: {why}")
            continue
        actual = hashlib.sha256(data).hexdigest()
        if actual != digest:
            out.problems.append(f"{path}: its bytes have sha256 {actual}, not the name's")
            continue
        out.blobs[digest] = data
    return out


def add(folder: str, data: bytes) -> tuple[str, bool]:
    """Writes `data` (a blob's bytes) into the store `folder` under its sha256; returns (digest,
    True when it was written, False when the store already held it).

    Raises:
        GateError: (exit 1) when the store holds a wrong file under that name, or it cannot be written.
    """
    from tools.oracle_gate.files import replace_file

    digest = hashlib.sha256(data).hexdigest()
    assert SHA256_PATTERN.fullmatch(digest)
    held = fetch(folder, [digest])
    if digest in held.blobs:
        return digest, False
    if held.problems:
        raise GateError(held.problems[0])
    try:
        replace_file(os.path.join(folder, digest), data)
    except OSError as exc:
        raise GateError(f"cannot write {os.path.join(folder, digest)}: {exc.strerror}") from None
    return digest, True
