"""A pristine tree: committed content only, written from git objects into an empty directory.

No work-tree file, untracked or ignored file, git filter, or eol conversion reaches it: each file
is the exact bytes of its blob, with its committed mode; symlinks are recreated as symlinks;
submodules (gitlinks) are left out. It is the clean run's tree (docs/design.md section 10).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
from collections.abc import Mapping

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.git.gitio import git_env
from tools.oracle_gate.git.tree import EXECUTABLE, GITLINK, SYMLINK, Entry, GitTree

# The most folders a written path may lie in. Removing or comparing a tree recurses once per
# folder, and Python's recursion limit is 1,000 (sys.getrecursionlimit); no repository comes near.
MAX_DEPTH = 200


def safe_target(dest: str, path: str) -> str:
    """Joins `path` under `dest`, refusing absolute paths and `..` (a tree cannot hold them, but
    the gate does not rely on that), and a path more than MAX_DEPTH folders deep."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
        raise GateError(f"refusing to write {path!r} into the pristine tree")
    if len(parts) > MAX_DEPTH + 1:
        raise GateError(
            f"refusing to write {path[:80]!r}... into the pristine tree: it lies {len(parts) - 1} folders "
            f"deep, more than {MAX_DEPTH}"
        )
    return os.path.join(dest, *parts)


def read_blobs(repo: str, oids: list[str], environ: Mapping[str, str] = os.environ) -> dict[str, bytes]:
    """Reads many blobs with one `git cat-file --batch` process.

    Raises:
        GateError: when an object is missing or git fails.
    """
    proc = subprocess.Popen(
        ["git", "-C", repo, "--no-replace-objects", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git_env(environ),
    )
    assert proc.stdin is not None and proc.stdout is not None
    unique = list(dict.fromkeys(oids))
    out: dict[str, bytes] = {}
    try:
        proc.stdin.write("".join(f"{oid}\n" for oid in unique).encode())
        proc.stdin.close()
        for oid in unique:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GateError(f"git object {oid} is missing or not a blob")
            size = int(header[2])
            out[oid] = proc.stdout.read(size)
            proc.stdout.read(1)
    finally:
        proc.stdout.close()
        proc.wait()
    return out


def write_tree(repo: str, dest: str, entries: Mapping[str, Entry]) -> int:
    """Writes tree entries (path -> Entry from `GitTree.files`) under the empty directory `dest`.

    Returns:
        The number of files and symlinks written.

    Raises:
        GateError: (exit 1) for a path that is absolute, holds `..`, `.`, `.git` or an empty part,
            or lies below another entry (a symlink there could lead the write out of `dest`).
    """
    # A malformed tree can hold both an entry `a` and an entry `a/b`; written in order, `a` could be a
    # symlink leading out of `dest` that `a/b` is then written through. Any entry below another
    # entry is refused before anything is written.
    _refuse_nested(list(entries))
    blobs = read_blobs(repo, [e.ref for e in entries.values() if e.mode != GITLINK])
    count = 0
    for path, entry in sorted(entries.items()):
        if entry.mode == GITLINK:
            continue
        target = safe_target(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        data = blobs[entry.ref]
        if entry.mode == SYMLINK:
            os.symlink(os.fsdecode(data), target)
        else:
            fd = os.open(
                target,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                0o755 if entry.mode == EXECUTABLE else 0o644,
            )
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        count += 1
    return count


def is_dotenv(path: str) -> bool:
    """True for a dotenv file (`.env`, `.env.local`, ...): local secrets and settings that must not
    reach a clean run even when committed."""
    name = path.rsplit("/", 1)[-1]
    return name == ".env" or name.startswith(".env.")


def sync_tree(repo: str, dest: str, entries: Mapping[str, Entry], files: Mapping[str, bytes] | None = None) -> int:
    """Makes the folder `dest` hold exactly the tree entries `entries` (path -> Entry from
    `GitTree.files`, as `write_tree` writes them) and `files` (path -> bytes, regular files without
    the executable bit), whatever it held. A file or symlink already there with the same kind,
    bytes (or link target) and executable bit is left in place, with its inode and times, so that a
    Bazel server kept on that folder finds it unchanged and keeps what it loaded and analysed;
    everything else there (other files, links, folders, fifos) is removed first, and what is missing
    or differs is written anew. Nothing is followed through a link.

    Returns:
        The number of files and symlinks written anew.

    Raises:
        GateError: (exit 1) for a path `write_tree` refuses, a path both in `entries` and `files`,
            a blob that cannot be read, or an entry that cannot be removed or written.
    """
    files = files or {}
    both = sorted(set(entries) & set(files))
    if both:
        raise GateError(f"refusing to write {both[0]!r} into the pristine tree twice")
    listed = {p: e for p, e in entries.items() if e.mode != GITLINK}
    wanted: dict[str, tuple[str, bool, bytes]] = {path: ("file", False, data) for path, data in files.items()}
    for path in wanted:
        safe_target(dest, path)
    _refuse_nested([*listed, *wanted])
    blobs = read_blobs(repo, [e.ref for e in listed.values()])
    for path, entry in listed.items():
        safe_target(dest, path)
        kind = "link" if entry.mode == SYMLINK else "file"
        wanted[path] = (kind, entry.mode == EXECUTABLE, blobs[entry.ref])
    folders = {"/".join(path.split("/")[:depth]) for path in wanted for depth in range(1, path.count("/") + 1)}
    try:
        kept = _prune(dest, "", wanted, folders)
        written = 0
        for path, (kind, executable, data) in sorted(wanted.items()):
            if path in kept:
                continue
            target = safe_target(dest, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if kind == "link":
                os.symlink(os.fsdecode(data), target)
            else:
                fd = os.open(
                    target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if executable else 0o644
                )
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            written += 1
    except OSError as exc:
        raise GateError(f"cannot write the tree {dest}: {exc.strerror or exc}") from None
    return written


def _refuse_nested(paths: list[str]) -> None:
    """`write_tree`'s rule: no path lies below another (a link there could lead a write out)."""
    known = set(paths)
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in known:
                raise GateError(
                    f"refusing to write {path!r} into the pristine tree: "
                    f"{'/'.join(parts[:depth])!r} is an entry of its own, not a directory"
                )


def _prune(folder: str, prefix: str, wanted: Mapping[str, tuple[str, bool, bytes]], folders: set[str]) -> set[str]:
    """Removes from `folder` (the tree's `prefix`) every entry `sync_tree` does not keep; returns
    the paths kept as they are."""
    kept: set[str] = set()
    if not os.access(folder, os.W_OK | os.X_OK):
        os.chmod(folder, 0o755)
    with os.scandir(folder) as listing:
        found = list(listing)
    for item in found:
        path = prefix + item.name
        if item.is_dir(follow_symlinks=False) and not item.is_symlink():
            if path in folders:
                kept |= _prune(item.path, path + "/", wanted, folders)
            else:
                remove_folder(item.path)
            continue
        want = wanted.get(path)
        if want is not None and _same(item, want):
            kept.add(path)
        else:
            os.unlink(item.path)
    return kept


def _same(item: os.DirEntry[str], want: tuple[str, bool, bytes]) -> bool:
    """Whether the file or link `item` already is `want` (kind, executable bit, bytes)."""
    kind, executable, data = want
    if item.is_symlink():
        return kind == "link" and os.readlink(item.path) == os.fsdecode(data)
    if kind != "file" or not item.is_file(follow_symlinks=False):
        return False
    st = item.stat(follow_symlinks=False)
    if st.st_size != len(data) or bool(st.st_mode & 0o100) != executable:
        return False
    fd = os.open(item.path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return f.read(len(data) + 1) == data


def remove_folder(path: str, *, strict: bool = True) -> None:
    """Removes the folder `path` whole, read-only and unreadable entries included (the read-only
    files Bazel leaves in an output base), never through a link: a folder an action left may hold
    one to any file of the user, whose mode a chmod that followed it would change. A folder deeper
    than Python's recursion allows (something other than the gate made it) goes with
    `rm -rf --one-file-system`, once `find` has made its folders writable.

    Args:
        path: the folder, an absolute path.
        strict: raise when something is left; otherwise remove what can be removed and say nothing.

    Raises:
        OSError: when `strict` and `path` is still there.
    """

    top = os.path.abspath(path)

    def make_writable(func, target, _exc):  # type: ignore[no-untyped-def]
        # Folders only: a file's mode is shared with its hard links, and removing it needs only its
        # folder writable. Never the folder above `path`; only ENOENT means the entry is gone.
        try:
            parent = os.path.dirname(target)
            if os.path.abspath(target) != top and not os.path.islink(parent):
                os.chmod(parent, 0o755)
            try:
                mode = os.lstat(target).st_mode
            except FileNotFoundError:
                return
            if stat.S_ISDIR(mode):
                os.chmod(target, 0o755)
            if func in (os.rmdir, os.remove, os.unlink):
                func(target)
            else:  # the folder could not be opened or listed before the chmod
                shutil.rmtree(target, onerror=make_writable)
        except OSError:
            if strict:
                raise

    try:
        shutil.rmtree(path, onerror=make_writable)
    except RecursionError:
        # Folders only, never through a link (find's default), then everything.
        for cmd in (
            ["find", path, "-xdev", "-type", "d", "-exec", "chmod", "u+rwx", "{}", "+"],
            ["rm", "-rf", "--one-file-system", "--", path],
        ):
            subprocess.run(cmd, capture_output=True, check=False)
    except OSError:
        if strict:
            raise
    if strict and os.path.lexists(path):
        raise OSError(errno.ENOTEMPTY, "cannot remove the folder", path)


def pristine_entries(repo: str, head: str, oracles_commit: str, *, dotenv: bool = False) -> dict[str, Entry]:
    """`pristine_tree`'s entries: HEAD's committed files, with `oracles/` from `oracles_commit` and
    dotenv files left out (unless `dotenv`). Raises GateError when a commit cannot be read."""
    entries = {
        p: e
        for p, e in GitTree(repo, head).files("").items()
        if not p.startswith("oracles/") and (dotenv or not is_dotenv(p))
    }
    entries.update(GitTree(repo, oracles_commit).files("oracles"))
    return entries


def pristine_tree(repo: str, head: str, oracles_commit: str, dest: str, *, dotenv: bool = False) -> int:
    """Writes HEAD's committed tree to `dest`, with `oracles/` taken from `oracles_commit` instead
    and dotenv files left out (unless `dotenv`).

    Args:
        repo: the repository.
        head: commit whose production code, harness and build files are used.
        oracles_commit: commit whose `oracles/` is used (the base, or HEAD for a labelled change).
        dest: an empty directory.
        dotenv: keep committed dotenv files, as a checkout has them (the workspace run's checkout
            of a merge result: the clean run, which leaves them out, must then agree with it).

    Returns:
        The number of files and symlinks written.
    """
    entries = pristine_entries(repo, head, oracles_commit, dotenv=dotenv)
    if os.listdir(dest):
        raise GateError(f"{dest} is not empty")
    return write_tree(repo, dest, entries)
