"""Git plumbing the gate relies on. Every output is read NUL-separated, never as quoted text."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from tools.oracle_gate.errors import GitError

_NO_QUOTE = ("--no-replace-objects", "-c", "core.quotepath=off")
# Git's lookup order for a short ref name (gitrevisions(7), "<refname>").
_REF_RULES = ("{}", "refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")


def git_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment git runs with: no ambient GIT_* variables (GIT_DIR, GIT_INDEX_FILE,
    GIT_OBJECT_DIRECTORY, ... would point it at other objects), and replace refs off."""
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_")}
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    return env


def git(repo: str, *args: str) -> bytes:
    """Runs `git -C repo ARGS` in the gate's environment (`git_env`) and returns its stdout bytes.

    Raises:
        GitError: (exit 1) when git is missing or exits non-zero; the message is git's first line.
    """
    try:
        proc = subprocess.run(
            ["git", "-C", repo, *_NO_QUOTE, *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=git_env(os.environ),
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed; install it (apt-get install -y git)") from None
    if proc.returncode != 0:
        raise GitError(f"git {args[0]} failed: {_first_error(proc)}")
    return proc.stdout


def toplevel(start: str) -> str:
    """Returns the root of the work tree containing `start`.

    Raises:
        GitError: when `start` is not inside a git work tree.
    """
    if not os.path.isdir(start):
        raise GitError(f"{start} is not a directory; pass --repo with the repository's root")
    try:
        out = git(start, "rev-parse", "--show-toplevel")
    except GitError:
        raise GitError(f"{start} is not inside a git repository; run the gate in a clone or pass --repo DIR") from None
    return out.decode("utf-8", "surrogateescape").rstrip("\n")


def resolve_commit(repo: str, rev: str) -> str:
    """Returns the full commit id `rev` names.

    Raises:
        GitError: for an empty or all-zero id, a missing ref, or an object that is not a commit.
    """
    if not rev.strip():
        raise GitError("--base is empty (an unset variable?); pass a branch, tag or commit id")
    if rev.startswith("-") or set(rev) == {"0"}:
        raise GitError(f"base {rev!r} does not name a commit; pass --base with a branch, tag or commit id")
    _refuse_ambiguous(repo, rev)
    try:
        out = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    except GitError:
        if rev == "HEAD":
            raise GitError("HEAD has no commit yet; commit the change before running the gate") from None
        raise GitError(
            f"base {rev!r} is not a commit in this repository; fetch it first (e.g. `git fetch origin main`) "
            "or pass --base REV"
        ) from None
    return out.decode().strip()


def _refuse_ambiguous(repo: str, rev: str) -> None:
    """Refuses a short name that several refs answer to with different commits.

    Git would pick `refs/tags/X` before `refs/heads/X` and `refs/remotes/X` with only a warning, so
    a pushed tag named `origin/main` could stand in for the real base.

    Raises:
        GitError: naming the refs, with the fully qualified spelling to use instead.
    """
    if rev.startswith("refs/") or "^" in rev or "~" in rev or ":" in rev or "@" in rev:
        candidates = [rev] if rev.startswith("refs/") else []
    else:
        candidates = [rule.format(rev) for rule in _REF_RULES]
    raw = (
        git(repo, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)", "--", *candidates)
        if candidates
        else b""
    )
    found: dict[str, str] = {}
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        name, oid, peeled = (line.split("\0") + ["", ""])[:3]
        if name in candidates:
            found[name] = peeled or oid
    if len(set(found.values())) > 1:
        names = ", ".join(sorted(found))
        raise GitError(
            f"base {rev!r} is ambiguous ({names}); pass the full ref name, e.g. --base refs/remotes/origin/main"
        )


def parents(repo: str, commit: str) -> list[str]:
    """Returns the parent ids written in `commit`'s object, first parent first ([] for a root commit).

    Read from the object itself (`git cat-file commit`, replace refs off), so neither a grafts
    file nor a shallow clone, which hides the parents of its boundary commits from history walks,
    changes the answer.

    Args:
        commit: a full commit id (as resolve_commit returns).

    Raises:
        GitError: (exit 1) when `commit` does not name a commit object.
    """
    raw = git(repo, "cat-file", "commit", commit)
    found = []
    for line in raw.split(b"\n"):
        if not line:  # the blank line ends the header; the message follows
            break
        if line.startswith(b"parent "):
            found.append(line[len(b"parent ") :].decode("ascii", "replace").strip())
    return found


def refuse_grafts(repo: str) -> None:
    """Refuses a repository with a grafts file, which rewrites history for every git command.

    Raises:
        GitError: (exit 1) when `info/grafts` exists in the git directory.
    """
    path = git(repo, "rev-parse", "--git-path", "info/grafts").decode("utf-8", "surrogateescape").strip()
    if os.path.exists(os.path.join(repo, path) if not os.path.isabs(path) else path):
        raise GitError(f"{path} exists and rewrites history; remove it before running the gate")


def has_ref(repo: str, ref: str) -> bool:
    """True when `ref` resolves to a commit."""
    try:
        resolve_commit(repo, ref)
    except GitError:
        return False
    return True


def default_base(repo: str) -> str:
    """Returns `origin/main` when it exists, else `main` (docs/merge-rule.md, "What `check` runs"),
    spelled as full ref names so no tag or oddly named branch can stand in for them.

    Raises:
        GitError: when neither exists.
    """
    for ref in ("refs/remotes/origin/main", "refs/heads/main"):
        if has_ref(repo, ref):
            return ref
    raise GitError("neither origin/main nor main exists; pass --base REV")


def is_shallow(repo: str) -> bool:
    """True when the repository is a shallow clone."""
    return git(repo, "rev-parse", "--is-shallow-repository").strip() == b"true"


def merge_base(repo: str, base: str, head: str) -> str:
    """Returns the merge base of two commits; never falls back to a two-dot diff.

    Raises:
        GitError: when the commits share no history (with advice to unshallow a shallow clone).
    """
    try:
        return git(repo, "merge-base", base, head).decode().strip()
    except GitError:
        pass
    if is_shallow(repo):
        raise GitError(
            "no merge base between the base and HEAD in this shallow clone; fetch more history "
            "(`git fetch --unshallow`, or `git fetch --deepen=N`) and run the gate again"
        )
    raise GitError("the base and HEAD share no history; pass a --base that HEAD was branched from")


@dataclass(frozen=True)
class Change:
    """One changed path between two commits.

    Attributes:
        status: git's status letter (A, C, D, M, R, T, U, X); renames are split into D and A.
        path: repository-relative path, exactly as stored in git (any bytes, decoded with surrogateescape).
    """

    status: str
    path: str


def parse_name_status(raw: bytes) -> list[Change]:
    """Parses `git diff --name-status -z` output (with or without rename detection).

    A rename or copy (`R100`/`C75`) yields both its old and its new path.

    Raises:
        GitError: when the output does not have the expected shape (fail closed).
    """
    fields = raw.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    changes: list[Change] = []
    i = 0
    while i < len(fields):
        status = fields[i].decode("ascii", "replace")
        if not status or status[0] not in "ACDMRTUXB":
            raise GitError(f"cannot parse git diff output near field {i}: {status!r}")
        count = 2 if status[0] in "RC" else 1
        paths = fields[i + 1 : i + 1 + count]
        if len(paths) != count or any(not p for p in paths):
            raise GitError(f"cannot parse git diff output: status {status!r} lacks its path")
        for p in paths:
            changes.append(Change(status[0], p.decode("utf-8", "surrogateescape")))
        i += 1 + count
    return changes


def changed_paths(repo: str, base: str, head: str) -> list[Change]:
    """Lists every path that differs between two commits, renames split into delete and add."""
    raw = git(
        repo,
        "diff",
        "--name-status",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        "--ignore-submodules=none",
        base,
        head,
        "--",
    )
    return parse_name_status(raw)


def on_first_parent_chain(repo: str, tip: str, commit: str) -> bool:
    """True when `commit` is `tip` or one of its first parents, back to the root: a commit the
    branch itself pointed at (each one gated when it was merged), not one inside a merged branch.

    Raises:
        GitError: (exit 1) when git fails.
    """
    if commit == tip:
        return True
    return commit.encode() in git(repo, "rev-list", "--first-parent", tip).split()


class MergeConflict(GitError):
    """The change does not merge cleanly into the base tip (exit 1: the branch must be updated)."""

    def __init__(self, paths: list[str], tip: str) -> None:
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        super().__init__(
            f"HEAD does not merge cleanly into the base tip {tip[:12]}: conflict in {shown or 'the trees'}",
            fix="update the branch (merge or rebase it onto the base tip), resolve the "
            "conflict, and run the gate again",
        )
        self.paths = paths


# Who and when of the merge commit the gate writes: fixed, so that the same tip and HEAD always give
# the same commit id (and a warm Bazel sees the same tree).
MERGE_IDENTITY = {
    "GIT_AUTHOR_NAME": "oracle-gate",
    "GIT_AUTHOR_EMAIL": "oracle-gate@localhost",
    "GIT_AUTHOR_DATE": "@0 +0000",
    "GIT_COMMITTER_NAME": "oracle-gate",
    "GIT_COMMITTER_EMAIL": "oracle-gate@localhost",
    "GIT_COMMITTER_DATE": "@0 +0000",
}


def merge_commit(repo: str, tip: str, head: str) -> str:
    """Merges `head` into `tip` without a work tree or an index, and returns the merge commit's id.

    `git merge-tree --write-tree` (git 2.38 or later) does the three-way merge in memory and writes
    the result tree as objects, bare and from an empty folder, so no `.gitattributes` of a checkout
    chooses a merge driver; `git commit-tree` writes a commit with parents `tip` and `head`
    (author, committer and dates fixed: MERGE_IDENTITY). Nothing else changes: no ref, no index,
    no work-tree file; the objects are unreachable and `git gc` removes them in time.

    Args:
        repo: the repository.
        tip, head: full commit ids.

    Raises:
        MergeConflict: (exit 1) naming the paths git could not merge.
        GitError: (exit 1) when git is older than 2.38 or fails otherwise.
    """
    env = git_env(os.environ)
    git_dir = git(repo, "rev-parse", "--absolute-git-dir").decode("utf-8", "surrogateescape").strip()
    tree = _merge_tree(git_dir, tip, head, env)
    return _commit_merge(repo, tree, tip, head, env)


def _merge_tree(git_dir: str, tip: str, head: str, env: Mapping[str, str]) -> str:
    """The id of the tree `git merge-tree --write-tree` writes for `head` merged into `tip`.

    Raises:
        MergeConflict: naming the paths git could not merge.
        GitError: when git is older than 2.38 or fails otherwise.
    """
    proc = _run_merge_tree(git_dir, tip, head, env)
    fields = [f.decode("utf-8", "surrogateescape") for f in proc.stdout.split(b"\0")]
    if proc.returncode == 1 and fields and len(fields[0]) in (40, 64):
        raise MergeConflict(list(dict.fromkeys(f for f in fields[1:] if f)), tip)
    if proc.returncode != 0 or not fields or len(fields[0]) not in (40, 64):
        raise GitError(
            f"git merge-tree failed: {_first_error(proc)}",
            fix="the gate merges HEAD into the base tip with `git merge-tree --write-tree`, which needs "
            "git 2.38 or later",
        )
    return fields[0]


def _run_merge_tree(git_dir: str, tip: str, head: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    """Runs `git merge-tree --write-tree` of `head` into `tip`, bare, in an empty folder."""
    # git 2.39 reads `.gitattributes` (merge drivers such as `merge=union`) from the working
    # directory, the change's checkout: run it bare, in an empty folder, so only the repository's
    # own `info/attributes` and the user's configuration count, as in a merge on a server.
    with tempfile.TemporaryDirectory(prefix="oracle-gate-merge-") as empty:
        return subprocess.run(
            [
                "git",
                f"--git-dir={git_dir}",
                "--bare",
                *_NO_QUOTE,
                "merge-tree",
                "--write-tree",
                "--no-messages",
                "--name-only",
                "-z",
                tip,
                head,
            ],
            cwd=empty,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env={**env, "GIT_INDEX_FILE": os.path.join(empty, "index")},
            check=False,
        )


def _commit_merge(repo: str, tree: str, tip: str, head: str, env: Mapping[str, str]) -> str:
    """Writes the merge commit of `tree` with parents `tip` and `head` (MERGE_IDENTITY) and returns its id.

    Raises:
        GitError: when `git commit-tree` fails.
    """
    made = subprocess.run(
        [
            "git",
            "-C",
            repo,
            *_NO_QUOTE,
            "-c",
            "commit.gpgSign=false",
            "commit-tree",
            tree,
            "-p",
            tip,
            "-p",
            head,
            "-m",
            f"oracle-gate: merge result of {head} into {tip}",
        ],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env={**env, **MERGE_IDENTITY},
        check=False,
    )
    if made.returncode != 0:
        raise GitError(f"git commit-tree failed: {_first_error(made)}")
    return made.stdout.decode().strip()


def _first_error(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The first line of a failed git's stderr, or its exit status when it printed none."""
    why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return why[0] if why else f"exit {proc.returncode}"


@dataclass(frozen=True)
class Judged:
    """Which commits a change is judged by (docs/design.md section 11).

    Attributes:
        merge_base: the merge base of the tip and HEAD: the base side of what the change did.
        commit: what would land: HEAD when it contains the tip (or with `head_only`), else the
            merge result of HEAD into the tip (`merge_commit`).
        claims: whose `oracles/` are in force without the label: the tip, or the merge base with
            `head_only`.
    """

    merge_base: str
    commit: str
    claims: str


def judged_commits(repo: str, tip: str, head: str, *, head_only: bool = False) -> Judged:
    """The commits `check` and `clean-run` judge a change by; writes the merge commit when HEAD
    does not contain the tip (HEAD contains it exactly when the tip is the merge base).

    Args:
        repo: the repository.
        tip, head: full commit ids of the base tip and HEAD.
        head_only: judge HEAD with the merge base's claims, without merging the tip.

    Raises:
        GitError: (exit 1) no merge base, or a change that does not merge cleanly into the tip
            (`MergeConflict`).
    """
    mb = merge_base(repo, tip, head)
    commit = head if head_only or mb == tip else merge_commit(repo, tip, head)
    return Judged(mb, commit, mb if head_only else tip)
