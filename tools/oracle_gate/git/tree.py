"""Read-only views of a tree of files: a git commit or a work-tree directory."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.gitio import git
from tools.oracle_gate.git.objects import CHUNK, CatFile, Hashed, Trust, digest, known_digest

REGULAR = "100644"
EXECUTABLE = "100755"
SYMLINK = "120000"
GITLINK = "160000"


@dataclass(frozen=True)
class Entry:
    """A file in a tree: `mode` is git's octal mode string; `ref` locates its bytes."""

    mode: str
    ref: str

    @property
    def is_regular(self) -> bool:
        """True for a regular (possibly executable) file, not a symlink or submodule."""
        return self.mode in (REGULAR, EXECUTABLE)


class Tree(Protocol):
    """What the gate needs of a tree: a listing under a prefix and the bytes of a file.

    `committed` is True when the bytes are git's objects (what was committed), False when they are
    files on disk (which a checkout may have rewritten); messages about rewritten bytes differ.
    """

    committed: bool

    def files(self, prefix: str) -> dict[str, Entry]:
        """Maps each repository-relative path under `prefix` to its entry."""

    def read(self, entry: Entry) -> bytes:
        """Returns the bytes of a regular file entry."""

    def digest(self, entry: Entry) -> str:
        """Returns the sha256 hex digest of a regular file entry's bytes, read as a stream."""

    def known_digest(self, entry: Entry) -> str | None:
        """Returns the sha256 hex digest of a regular file entry's bytes when known without
        reading them, else None."""

    def stream(self, entry: Entry) -> Hashed:
        """Returns a regular file entry's bytes as pieces of at most CHUNK bytes, hashed as they
        are read (`objects.Hashed`)."""

    def vouched(self, entry: Entry, claim: str) -> bool:
        """True when the run's `Trust` vouches for `claim` about the entry's bytes."""


class GitTree:
    """The tree of one commit, read from git objects (so the bytes are what was committed).

    `trust`: what the caller vouches for about this run's blob objects (`objects.Trust`), used by
    `digest` and `vouched`; None vouches for nothing. One `git cat-file --batch` process per tree.
    """

    def __init__(self, repo: str, commit: str, trust: Trust | None = None) -> None:
        self.repo = repo
        self.commit = commit
        self.trust = trust
        self.committed = True
        self._cat = CatFile(repo)

    def files(self, prefix: str) -> dict[str, Entry]:
        spec = ["--", prefix] if prefix else []
        raw = git(self.repo, "ls-tree", "-r", "-z", "--full-tree", self.commit, *spec)
        out: dict[str, Entry] = {}
        for record in raw.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, _kind, oid = meta.decode("ascii").split(" ")
            out[path.decode("utf-8", "surrogateescape")] = Entry(mode, oid)
        return out

    def read(self, entry: Entry) -> bytes:
        return self._cat.read(entry.ref)

    def digest(self, entry: Entry) -> str:
        """sha256 of the object (`objects.digest`: computed once per object id, else vouched for
        in `trust`, else streamed)."""
        return digest(self._cat, entry.ref, self.trust)

    def known_digest(self, entry: Entry) -> str | None:
        """`objects.known_digest`: computed before in this process, else vouched for in `trust`."""
        return known_digest(entry.ref, self.trust)

    def stream(self, entry: Entry) -> Hashed:
        """The object's bytes in CHUNK pieces (`CatFile.chunks`); its digest is remembered once
        all of them are read."""
        return Hashed(self._cat.chunks(entry.ref), entry.ref)

    def vouched(self, entry: Entry, claim: str) -> bool:
        """True when `trust` vouches for `claim` about the entry's object."""
        return self.trust is not None and self.trust.vouches(entry.ref, claim)

    def close(self) -> None:
        """Ends the tree's git process (`CatFile.close`); a later read starts a new one."""
        self._cat.close()

    def symlinks(self, listing: dict[str, Entry]) -> dict[str, str]:
        """Maps every symlink of `listing` to its target (decoded with surrogateescape)."""
        return {
            path: self.read(entry).decode("utf-8", "surrogateescape")
            for path, entry in listing.items()
            if entry.mode == SYMLINK
        }


class WorkTree:
    """A directory on disk; symlinks are reported as such and never followed, unless
    `follow_symlinks` (for a Bazel runfiles tree, where every file is a symlink to its source)."""

    def __init__(self, root: str, follow_symlinks: bool = False) -> None:
        self.root = root
        self.follow = follow_symlinks
        self.committed = False

    def files(self, prefix: str) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        base = os.path.join(self.root, prefix)
        if not os.path.isdir(base):
            return out
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                st = os.stat(full) if self.follow else os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    mode = SYMLINK
                elif stat.S_ISREG(st.st_mode):
                    mode = EXECUTABLE if st.st_mode & 0o111 else REGULAR
                else:
                    mode = "000000"
                out[rel] = Entry(mode, full)
        return out

    def _chunks(self, entry: Entry, size: int = -1) -> Iterator[bytes]:
        """The file's bytes in pieces of `size` (-1: one piece), never through a symlink unless
        `follow_symlinks`.

        Raises:
            GateError: (exit 1) when the file cannot be read.
        """
        try:
            fd = os.open(entry.ref, os.O_RDONLY | (0 if self.follow else os.O_NOFOLLOW))
            with os.fdopen(fd, "rb") as f:
                while piece := f.read(size):
                    yield piece
                    if size < 0:
                        return
        except OSError as exc:
            raise GateError(f"cannot read {entry.ref}: {exc.strerror}") from None

    def read(self, entry: Entry) -> bytes:
        return b"".join(self._chunks(entry))

    def digest(self, entry: Entry) -> str:
        """sha256 of the file, read in CHUNK pieces."""
        return self.stream(entry).hexdigest()

    def known_digest(self, entry: Entry) -> str | None:
        """None: files on disk are hashed each time they are needed."""
        return None

    def stream(self, entry: Entry) -> Hashed:
        """The file's bytes in CHUNK pieces (see `read` for what cannot be read)."""
        return Hashed(self._chunks(entry, CHUNK))

    def vouched(self, entry: Entry, claim: str) -> bool:
        """False: files on disk are read, never vouched for."""
        return False
