"""Git blob objects, read through one `git cat-file --batch` process per repository and hashed as a
stream, and the sha256 of each object, known once per run (docs/design.md section 4).

A git object id names its bytes (content-addressed), so a digest computed, or trusted, for an
object id holds for every tree that has that object. `check` trusts the merge base's pins for the
objects the base pinned (`trust`), and hashes only objects it has no digest for: a blob the change
did not touch costs no read at all (docs/design.md section 4, "Which blobs are hashed").
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator

from tools.oracle_gate.errors import GitError
from tools.oracle_gate.git.gitio import git_env

# Bytes read from git per chunk while hashing: large enough that hashlib releases the GIL and a
# pipe read is cheap, small enough that memory stays flat (1 MiB).
CHUNK = 1 << 20

# object id -> sha256 hex of its bytes, as hashed (true in every repository: ids are content-addressed).
_COMPUTED: dict[str, str] = {}
# object id -> sha256 hex a caller vouched for (`trust`), and (object id, claim) pairs a caller
# vouched for (`vouch`), until `forget_trusted`.
_TRUSTED: dict[str, str] = {}
_CLAIMS: set[tuple[str, str]] = set()
_CONFLICTED: set[str] = set()


class CatFile:
    """One `git cat-file --batch` process for a repository: every blob read by object id through
    one pipe, instead of one `git` process per file (about 2 ms each)."""

    def __init__(self, repo: str) -> None:
        self.repo = repo
        self._proc: subprocess.Popen[bytes] | None = None
        self._unread = False

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._proc = subprocess.Popen(
                    ["git", "-C", self.repo, "--no-replace-objects", "cat-file", "--batch"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    env=git_env(os.environ))
            except FileNotFoundError:
                raise GitError("git is not installed; install it (apt-get install -y git)") from None
        return self._proc

    def chunks(self, oid: str) -> Iterator[bytes]:
        """Yields the bytes of blob `oid` in chunks of at most CHUNK bytes. When a caller stops
        before the end, the next call starts a fresh git process (the rest is still in the pipe).

        Raises:
            GitError: (exit 1) when the object is missing, not a blob, or git stops answering.
        """
        if self._unread:  # an earlier object was not read to its end: its bytes are still in the pipe
            self.close(kill=True)
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        if len(oid) not in (40, 64) or any(c not in "0123456789abcdef" for c in oid):
            raise GitError(f"git cat-file: {oid!r} is not a full object id")
        try:
            proc.stdin.write(oid.encode("ascii") + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, UnicodeEncodeError):
            raise GitError(f"git cat-file stopped answering (object {oid!r})") from None
        header = proc.stdout.readline().split()
        if len(header) != 3 or header[0] != oid.encode() or header[1] != b"blob" or not header[2].isdigit():
            # Another type's body (or anything unexpected) may still be in the pipe: start afresh.
            self.close(kill=True)
            raise GitError(f"git cat-file: object {oid} is not a readable blob ({b' '.join(header).decode('ascii', 'replace')})")
        left = int(header[2])
        self._unread = True
        while left:
            piece = proc.stdout.read(min(left, CHUNK))
            if not piece:
                raise GitError(f"git cat-file stopped in the middle of object {oid}")
            left -= len(piece)
            yield piece
        if proc.stdout.read(1) != b"\n":  # git ends each object with a newline
            self.close(kill=True)
            raise GitError(f"git cat-file: object {oid} did not end where its size said")
        self._unread = False

    def read(self, oid: str) -> bytes:
        """The whole bytes of blob `oid` (`chunks` joined)."""
        return b"".join(self.chunks(oid))

    def close(self, kill: bool = False) -> None:
        """Ends the git process; killed when `kill` or when an object was left half-read (git
        would otherwise block writing the rest)."""
        kill = kill or self._unread
        self._unread = False
        if self._proc is not None:
            if kill:
                self._proc.kill()
            if self._proc.stdin is not None:
                try:
                    self._proc.stdin.close()
                except BrokenPipeError:
                    pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def digest(cat: CatFile, oid: str) -> str:
    """The sha256 hex digest of blob `oid`: known (computed or trusted) for this id, else hashed
    from `cat`'s stream in CHUNK pieces, so memory stays flat whatever the size.

    Raises:
        GitError: (exit 1) when git cannot give the object.
    """
    known = _COMPUTED.get(oid) or _TRUSTED.get(oid)
    if known is None:
        h = hashlib.sha256()
        for piece in cat.chunks(oid):
            h.update(piece)
        known = _COMPUTED[oid] = h.hexdigest()
    return known


def trust(oid: str, sha256: str) -> None:
    """Records that blob `oid` hashes to `sha256` without reading it: the caller vouches for it
    (`check` does for the manifest of its merge base, which passed the gate when it was merged),
    until `forget_trusted`. Two different claims for one object cancel each other: it is hashed."""
    if oid in _CONFLICTED:
        return
    if _TRUSTED.setdefault(oid, sha256) != sha256:
        del _TRUSTED[oid]
        _CONFLICTED.add(oid)


def known_trusted(oid: str) -> str | None:
    """The digest a caller vouched for blob `oid` (`trust`), or None."""
    return _TRUSTED.get(oid)


def vouch(oid: str, claim: str) -> None:
    """Records a caller's claim about blob `oid` (a string the caller defines, such as "fits the
    shape of this kind"), until `forget_trusted`."""
    _CLAIMS.add((oid, claim))


def is_trusted(oid: str, claim: str) -> bool:
    """True when a caller vouched for `claim` about blob `oid` (`vouch`)."""
    return (oid, claim) in _CLAIMS


def forget_trusted() -> None:
    """Drops every digest and claim a caller vouched for (each `check` starts and ends with none)."""
    _TRUSTED.clear()
    _CLAIMS.clear()
    _CONFLICTED.clear()
