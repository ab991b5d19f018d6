"""Git blob objects, read through one `git cat-file --batch` process per repository and hashed as a
stream, and the sha256 of each object, computed once per process (docs/design.md section 4).

A git object id names its bytes (content-addressed), so a digest computed for an object id holds
for every tree that has that object, in every run: those are remembered for the process. What a
caller vouches for without reading is not a fact but trust, and lives in a `Trust` value that the
caller makes and hands to whatever reads blobs (`check` makes one per run and vouches in it for
the merge base's pins, `manifest.vouch_for_base`), so a blob the change did not touch costs no
read at all (docs/design.md section 4, "Which blobs are hashed").
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Iterator

from tools.oracle_gate.errors import GitError
from tools.oracle_gate.git.gitio import git_env

# Bytes read from git per chunk while hashing: large enough that hashlib releases the GIL and a
# pipe read is cheap, small enough that memory stays flat (1 MiB).
CHUNK = 1 << 20

# object id -> sha256 hex of its bytes, as hashed: a fact, true in every repository and run (ids are
# content-addressed), so no trust; what is vouched for lives in a `Trust`.
_COMPUTED: dict[str, str] = {}


class Trust:
    """What one caller vouches for about blob objects without reading them, for as long as it keeps
    this value: a digest per object id (`vouch_digest`) and claims such as "fits the shape of this
    kind" (`vouch`). `check` makes one per run (`check.run_check`), fills it from the merge base's
    manifest and pins (`manifest.vouch_for_base`) and hands it to the trees of that run
    (`tree.GitTree`); nothing else holds it. Two different digests vouched for one object cancel
    each other: it is hashed.
    """

    def __init__(self) -> None:
        self._digests: dict[str, str] = {}
        self._claims: set[tuple[str, str]] = set()
        self._conflicted: set[str] = set()

    def vouch_digest(self, oid: str, sha256: str) -> None:
        """Records that blob `oid` hashes to `sha256` (64 hex digits), without reading it."""
        if oid in self._conflicted:
            return
        if self._digests.setdefault(oid, sha256) != sha256:
            del self._digests[oid]
            self._conflicted.add(oid)

    def digest(self, oid: str) -> str | None:
        """The digest vouched for blob `oid` (`vouch_digest`), or None."""
        return self._digests.get(oid)

    def vouch(self, oid: str, claim: str) -> None:
        """Records a claim about blob `oid` (a string the caller defines)."""
        self._claims.add((oid, claim))

    def vouches(self, oid: str, claim: str) -> bool:
        """True when `claim` about blob `oid` was vouched for (`vouch`)."""
        return (oid, claim) in self._claims


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
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=git_env(os.environ),
                )
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
            raise GitError(
                f"git cat-file: object {oid} is not a readable blob ({b' '.join(header).decode('ascii', 'replace')})"
            )
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


def known_digest(oid: str, trust: Trust | None = None) -> str | None:
    """The sha256 hex digest of blob `oid` without reading it: computed before in this process,
    else vouched for in `trust`; None when neither. A digest once computed is never overridden by
    what is vouched for."""
    return _COMPUTED.get(oid) or (trust.digest(oid) if trust is not None else None)


def digest(cat: CatFile, oid: str, trust: Trust | None = None) -> str:
    """The sha256 hex digest of blob `oid`: `known_digest`, else hashed from `cat`'s stream in
    CHUNK pieces, so memory stays flat whatever the size.

    Raises:
        GitError: (exit 1) when git cannot give the object.
    """
    return known_digest(oid, trust) or Hashed(cat.chunks(oid), oid).hexdigest()


class Hashed:
    """The bytes of one blob as an iterable of pieces (bytes), hashed with sha256 as they pass:
    iterate it at most once, then call `hexdigest`. For a git object (`oid` given) the digest is
    remembered for the process once the last piece has passed, as `digest` remembers it.

    Raises (while iterating or from `hexdigest`): whatever reading `pieces` raises (GitError,
    GateError: exit 1).
    """

    def __init__(self, pieces: Iterable[bytes], oid: str | None = None) -> None:
        self._pieces = iter(pieces)
        self._oid = oid
        self._sha = hashlib.sha256()
        self._done: str | None = None

    def __iter__(self) -> Iterator[bytes]:
        for piece in self._pieces:
            self._sha.update(piece)
            yield piece
        self._finish()

    def _finish(self) -> None:
        if self._done is None:
            self._done = self._sha.hexdigest()
            if self._oid is not None:
                _COMPUTED[self._oid] = self._done

    def hexdigest(self) -> str:
        """The sha256 hex digest of all the bytes: the pieces not yet iterated are read (and
        hashed) first."""
        for piece in self._pieces:
            self._sha.update(piece)
        self._finish()
        assert self._done is not None
        return self._done
