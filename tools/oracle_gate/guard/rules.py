"""The protected globs the agent-side guard enforces (docs/design.md section 13), read from the
policy on every call: the base tip's `oracles/policy.toml` (as `check` would judge the change)
plus any glob the work tree's copy adds, the paths every policy protects, and the guard's own
files. No copy is kept, so the guard cannot drift from the policy."""

from __future__ import annotations

import glob as globbing
import os
import re
from dataclasses import dataclass

from tools.oracle_gate.approval.globs import matches
from tools.oracle_gate.approval.policy import (
    AGENT_FILES,
    DEFAULT_PROTECTED,
    POLICY_PATH,
    Policy,
    parse_policy,
    protection,
)
from tools.oracle_gate.errors import GateError, GitError
from tools.oracle_gate.git.gitio import default_base, git, resolve_commit

# The clone's hooks and configuration, which no commit carries (the pre-push hook `guard install`
# writes, and `core.hooksPath`); the files it writes in the work tree are `policy.AGENT_FILES`.
CLONE_FILES = (".git/hooks/**", ".git/config", ".git/info/**", ".git/HEAD", ".git/refs/**", ".git/packed-refs")
# The largest policy file the guard reads (bytes); a larger one, or one that is not a regular
# file (a link, a FIFO, a device), cannot be read and every write is denied.
MAX_POLICY = 1024 * 1024
# At most this many files below a folder a command names are compared with the globs; a larger
# folder counts as protected (fail closed).
MAX_WALK = 20_000


_BRACKET = re.compile(r"\[(?:\[:[a-z]+:\]|[^\]])*\]")


class PolicyUnreadable(GateError):
    """The policy the guard needs cannot be read (exit 1): the guard denies every write."""


@dataclass(frozen=True)
class Protection:
    """What the guard enforces.

    Attributes:
        label: the label a human puts on a change to protected paths.
        globs: the protected globs, the base tip's first.
        source: where they came from, for messages (`oracles/policy.toml at refs/remotes/origin/main`).
        repo: the work tree's root (real path).
        policy_globs: the globs of the policies alone (without AGENT_FILES and CLONE_FILES), for
            `guard install` to say which of its files the policy does not protect.
        packages: the production packages of the base tip's policy (else the work tree's).
        base: the revision the policy was read at (`origin/main`, `main`, `HEAD`), or "".
    """

    label: str
    globs: tuple[str, ...]
    source: str
    repo: str
    policy_globs: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    base: str = ""

    def protecting(self, rel: str, *, deep: bool = True) -> str | None:
        """The glob that protects the repository-relative path `rel` (normalized, `/`-separated),
        or None: the path itself, a folder a glob protects as a whole (`oracles` for `oracles/**`),
        the files a wildcard in it expands to, and with `deep` (a program that changes what a
        folder holds: `rm -rf`, `mv`, a copy's destination) any file below a folder, the root `.`
        included."""
        if rel in (".", ""):
            return (self._below(".") or self.globs[0]) if deep else None
        if any(c in rel for c in "*?["):
            # A bracket expression bash knows and Python's glob does not (`[[:alpha:]]`, `[^x]`)
            # stands for any one character.
            rel = _BRACKET.sub("?", rel)
            for path in sorted(globbing.glob(os.path.join(self.repo, rel), recursive=True))[:MAX_WALK]:
                found = self.protecting(os.path.relpath(path, self.repo), deep=deep)
                if found:
                    return found
            rel = rel.replace("*", "x").replace("?", "x").replace("[", "x").replace("]", "x")
        found = matches(rel, self.globs) or matches(rel + "/x", self.globs)
        full = os.path.join(self.repo, rel)
        if found or not deep or not os.path.isdir(full) or os.path.islink(full):
            return found
        return self._below(rel)

    def _below(self, rel: str) -> str | None:
        """The glob that protects a file below the folder `rel`, or None (MAX_WALK: fail closed)."""
        seen = 0
        for folder, dirs, files in os.walk(os.path.join(self.repo, rel)):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in (*files, *dirs):
                seen += 1
                found = matches(os.path.relpath(os.path.join(folder, name), self.repo), self.globs)
                if found or seen > MAX_WALK:
                    return found or f"{rel}/** (more than {MAX_WALK} files to compare)"
        return None


def load_protection(repo: str, base: str | None = None) -> Protection:
    """The protection in force for the work tree `repo` (module docstring): the base tip is
    `base` when given, else `origin/main`, else `main` (`gitio.default_base`), else HEAD.

    Raises:
        PolicyUnreadable: (exit 1) when the base tip's or the work tree's policy exists but is not a
            valid policy (the parse error in the message), or git cannot read the repository.
    """
    real = os.path.realpath(repo)
    try:
        rev = resolve_commit(real, base) if base is not None else _base(real)
        committed = _committed_policy(real, rev) if rev else None
        worktree = _worktree_policy(real)
    except (GateError, OSError) as exc:
        raise PolicyUnreadable(f"the guard cannot read {POLICY_PATH}: {exc}") from None
    label, globs = protection(committed, worktree)
    if committed is None and worktree is None:
        globs = DEFAULT_PROTECTED
    where = f"{POLICY_PATH} at {rev}" if committed is not None else f"{POLICY_PATH} in the work tree"
    if committed is None and worktree is None:
        where = "the gate's default policy (no oracles/policy.toml)"
    source = committed or worktree
    packages = source.production_packages if source is not None else ()
    return Protection(
        label, tuple(dict.fromkeys((*globs, *AGENT_FILES, *CLONE_FILES))), where, real, tuple(globs), packages, rev
    )


def _base(repo: str) -> str:
    """The revision whose policy is in force: origin/main, main, else HEAD; "" in a repository
    without a commit."""
    try:
        return default_base(repo)
    except GitError:
        try:
            resolve_commit(repo, "HEAD")
        except GitError:
            return ""
        return "HEAD"


def _committed_policy(repo: str, rev: str) -> Policy | None:
    """The policy committed at `rev`, or None when it has none.

    Raises:
        OracleError: (exit 5) when it is invalid.
    """
    listed = git(repo, "ls-tree", "-z", "-l", rev, "--", POLICY_PATH).split(b"\0")[0].split(b"\t")[0].split()
    if len(listed) != 4:
        return None
    if listed[1] != b"blob" or not listed[3].isdigit() or int(listed[3]) > MAX_POLICY:
        raise OSError(f"{POLICY_PATH} at {rev} is not a file of at most {MAX_POLICY} bytes")
    return parse_policy(git(repo, "cat-file", "blob", listed[2].decode()), f"{POLICY_PATH} at {rev}")


def _worktree_policy(repo: str) -> Policy | None:
    """The work tree's policy, or None when the file does not exist.

    Raises:
        OracleError: (exit 5) when it is invalid.
        OSError: when it exists but cannot be read.
    """
    path = os.path.join(repo, POLICY_PATH)
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > MAX_POLICY:
        raise OSError(f"{POLICY_PATH} in the work tree is not a regular file of at most {MAX_POLICY} bytes")
    with open(path, "rb") as handle:
        return parse_policy(handle.read(MAX_POLICY + 1), f"{POLICY_PATH} in the work tree")
