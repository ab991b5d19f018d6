"""The sealed root of the clean run: its Bazel, and every action that Bazel runs, see one folder of
the run (the pristine tree, a fresh output root and home) and the system directories, nothing else
of the host (docs/design.md section 10).

The mechanism is bubblewrap (`bwrap`, Debian package `bubblewrap`): a new mount namespace whose root
is an empty tmpfs, with read-only binds of `/usr`, `/etc`, the local paths pip is configured to
read and those `$ORACLE_GATE_SEAL_READ_ONLY` names, `/sys` read-only (kernel state; Bazel 7's
linux-sandbox binds it into every action), a read-write bind of the run's folder at its own path,
a private `/tmp` and `/dev`, and new pid, ipc and uts namespaces with a fresh `/proc`. The work tree, its git
directory, other clones, the user's home, the host's `/tmp` and other runs' folders do not exist inside.
Bazel's own linux-sandbox still runs every action inside it, with the pristine tree's `oracles/` and the
judge's views blocked, so the change's code sees neither.

`/proc` is mounted by a shell inside the root rather than by bwrap's `--proc`: bwrap covers parts of
its `/proc` with read-only binds, and the kernel refuses a nested `/proc` mount (which Bazel's
linux-sandbox makes for every action) while a covered one is the only one visible.
"""

from __future__ import annotations

import configparser
import functools
import os
import shutil
import subprocess
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs.local_paths import LocalPath

# Top-level host entries shown read-only at the same path: a symlink (usr-merged `/bin -> usr/bin`)
# is recreated as a symlink, a directory is bound. `/usr` must exist.
SYSTEM_ENTRIES = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
# Variables whose local paths pip reads (pip's own names); each existing local path is bound read-only.
PIP_PATH_VARIABLES = (
    "PIP_FIND_LINKS",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_CONSTRAINT",
    "PIP_CONFIG_FILE",
)
# The same settings in pip's configuration files ([global] and [install] sections).
PIP_PATH_KEYS = ("find-links", "index-url", "extra-index-url", "cert", "client-cert", "constraint")
# pip's site-wide configuration files on Linux (pip's documentation, "Configuration"); the user's
# files are not read: the clean run has a fresh home.
PIP_SITE_CONFIGS = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf")
# A file the remote clean run's Bazel reads (clean_run.REMOTE_ENV).
REMOTE_PATH_VARIABLES = ("ORACLE_GATE_REMOTE_TLS_CERTIFICATE",)
# Further host folders the clean run's Bazel must read, colon-separated absolute paths: a
# `local_repository` or `local_path_override` outside the repository (oracle-gate itself, say).
READ_ONLY_VARIABLE = "ORACLE_GATE_SEAL_READ_ONLY"
# Mounts a fresh /proc of the root's pid namespace, then runs the command (its arguments follow).
_INIT = 'mount -t proc -o nosuid,nodev,noexec proc /proc && exec "$@"'
_INIT_NAME = "oracle-gate-seal"


@dataclass(frozen=True)
class SealedRoot:
    """A bubblewrap root for commands of one clean run.

    Attributes:
        bwrap: the bwrap executable, real path.
        version: what `bwrap --version` printed, e.g. "bubblewrap 0.8.0".
        folder: the run's folder (real path), shown read-write at the same path; everything the
            run writes (tree, output root, home, event files) lies in it.
        read_only: further host paths shown read-only at the same path (pip's local indexes,
            certificates, configuration files).
        system: (name, symlink target or None for a directory) for each `SYSTEM_ENTRIES` entry
            the host has.
        masked: guarded paths that lie in a shown one (a repository under `/usr`, say), each
            covered by an empty tmpfs inside the root.
        blockable: the shown paths only the run's Bazel needs, never an action (pip's indexes and
            certificates, the remote TLS certificate): the run blocks them from every sandboxed
            action, so a broad setting (a whole home folder) shows nothing to the change's code.
        mounts: (host path, path inside the root) of each local path the workspace names relative
            to its root that points outside the tree (`local_paths.outside`): shown read-only where
            the pristine tree looks for it.
        trees: workspace trees outside `folder` shown read-only at their own path (the workspace
            run's work tree, runs/workspace_seal.py), their git directories masked.
    """

    bwrap: str
    version: str
    folder: str
    read_only: tuple[str, ...]
    system: tuple[tuple[str, str | None], ...]
    masked: tuple[str, ...] = ()
    blockable: tuple[str, ...] = ()
    mounts: tuple[tuple[str, str], ...] = ()
    trees: tuple[str, ...] = ()

    def shows(self, path: str) -> bool:
        """True when `path` (absolute, host) exists inside the root as itself: it lies in `folder`
        or in one of `trees`."""
        real = os.path.realpath(path)
        return any(inside(real, top) for top in (self.folder, *self.trees))

    def wrap(self, argv: Sequence[str], cwd: str, *, die_with_parent: bool = True) -> list[str]:
        """The command line that runs `argv` inside the root, in `cwd` (a path inside `folder`).
        With `die_with_parent` (bwrap's `--die-with-parent`), the root ends when the process that
        started bwrap does; a kept root (kept_root.py) outlives it.

        The environment passes through as the caller gives it to the bwrap process.
        """
        wrapped = [self.bwrap]
        for name, target in self.system:
            wrapped += (
                ["--symlink", target, f"/{name}"] if target is not None else ["--ro-bind", f"/{name}", f"/{name}"]
            )
        # /sys: Bazel 7's linux-sandbox binds it into every action's sandbox (read-only, kernel state
        # only). The cgroup namespace stays the host's: in a new one, /proc/self/cgroup no longer
        # matches the cgroup mounts under /sys, and the JVM of Bazel 4.2 fails to start.
        wrapped += ["--ro-bind", "/sys", "/sys", "--dev", "/dev", "--dir", "/proc", "--tmpfs", "/tmp"]
        # After the private /tmp, so that a shown path under the host's /tmp (a checkout there) is
        # not covered by it.
        for path in (*self.read_only, *self.trees):
            wrapped += ["--ro-bind", path, path]
        for path in self.masked:
            wrapped += ["--tmpfs", path]
        wrapped += [
            "--bind",
            self.folder,
            self.folder,
            *(arg for host, seen in self.mounts for arg in ("--ro-bind", host, seen)),
            "--chdir",
            cwd,
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            *(["--die-with-parent"] if die_with_parent else []),
            "--new-session",
            "--",
            "/bin/sh",
            "-c",
            _INIT,
            _INIT_NAME,
            *argv,
        ]
        return wrapped

    def description(self) -> str:
        """One line for reports: mechanism, version, path and what the root holds."""
        shown = [f"/{name}" for name, target in self.system if target is None] + list(self.read_only) + ["/sys"]
        shown += [f"{host} (at {seen})" for host, seen in self.mounts]
        trees = "".join(f", the work tree {tree} read-only" for tree in self.trees)
        masked = f" (hiding {', '.join(self.masked)})" if self.masked else ""
        return (
            f"{self.version} ({self.bwrap}): a root holding only the run's folder {self.folder} (tree or checkout, "
            f"output root, home) read-write{trees}, {', '.join(shown)} read-only{masked}, a private /tmp and /dev, "
            "and its own pid namespace and /proc"
        )


def find_bwrap(environ: Mapping[str, str]) -> str:
    """The bwrap executable on `environ["PATH"]`, real path.

    Raises:
        GateError: (exit 1) when there is none.
    """
    path = shutil.which("bwrap", path=environ.get("PATH") or os.defpath)
    if path is None:
        raise GateError(
            "the clean run is sealed with bubblewrap, and `bwrap` is not on PATH; install bubblewrap "
            "(tools/setup.sh does)"
        )
    return os.path.realpath(path)


def system_entries(host_root: str = "/") -> tuple[tuple[str, str | None], ...]:
    """The `SYSTEM_ENTRIES` this host has: (name, symlink target) or (name, None) for a directory.

    Raises:
        GateError: (exit 1) when `/usr` is not a directory.
    """
    found: list[tuple[str, str | None]] = []
    for name in SYSTEM_ENTRIES:
        path = os.path.join(host_root, name)
        if os.path.islink(path):
            found.append((name, os.readlink(path)))
        elif os.path.isdir(path):
            found.append((name, None))
    if ("usr", None) not in found:
        raise GateError(f"{os.path.join(host_root, 'usr')} is not a directory; the sealed clean run needs it")
    return tuple(found)


def local_paths(values: Iterable[str]) -> list[str]:
    """The local paths among pip-style values: whitespace-separated absolute paths and `file:` URLs.
    Other URLs (http, https) name no local path. Returns real paths that exist, in order, once each."""
    found: list[str] = []
    for value in values:
        for token in value.split():
            if token.startswith("file:"):
                token = urllib.parse.unquote(urllib.parse.urlsplit(token).path)
            if token.startswith("/") and os.path.exists(token):
                found.append(os.path.realpath(token))
    return list(dict.fromkeys(found))


def named_paths(environ: Mapping[str, str]) -> list[str]:
    """The real paths of `$ORACLE_GATE_SEAL_READ_ONLY` (READ_ONLY_VARIABLE).

    Raises:
        GateError: (exit 1) for an entry that is not an absolute path to something that exists.
    """
    found = []
    for entry in environ.get(READ_ONLY_VARIABLE, "").split(":"):
        if not entry:
            continue
        if not entry.startswith("/") or not os.path.exists(entry):
            raise GateError(f"{READ_ONLY_VARIABLE}: {entry!r} is not an absolute path that exists")
        found.append(os.path.realpath(entry))
    return found


def pip_settings(environ: Mapping[str, str]) -> list[str]:
    """The values of pip's path settings the clean run's pip may read: `PIP_PATH_VARIABLES` from
    `environ`, and `PIP_PATH_KEYS` of the site-wide configuration files and of `$PIP_CONFIG_FILE`.
    An unreadable or malformed configuration file contributes nothing (pip reports it itself)."""
    values = [environ[name] for name in PIP_PATH_VARIABLES if environ.get(name)]
    parser = configparser.RawConfigParser(strict=False)
    for path in [*PIP_SITE_CONFIGS, environ.get("PIP_CONFIG_FILE", "")]:
        if not path:
            continue
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
    for section in ("global", "install", "download"):
        if parser.has_section(section):
            values += [parser.get(section, key) for key in PIP_PATH_KEYS if parser.has_option(section, key)]
    return values


def inside(path: str, folder: str) -> bool:
    """True when real path `path` is `folder` or lies in it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def refuse_inside(paths: Sequence[str], guarded: Sequence[str]) -> None:
    """Refuses to show a path that lies in one of `guarded` (real paths: the repository's work
    tree, git directories and oracle copies).

    Raises:
        GateError: (exit 1) naming the path: showing it would show what the seal hides.
    """
    for path in paths:
        for guard in guarded:
            if inside(path, guard):
                raise GateError(
                    f"pip, remote or {READ_ONLY_VARIABLE} settings, or a local repository of the workspace, "
                    f"name {path}, which lies in {guard}; the sealed clean run will not show it: point "
                    "them at a folder outside the repository"
                )


def masks(shown: Sequence[str], guarded: Sequence[str], folder: str) -> tuple[str, ...]:
    """The guarded paths that a shown path holds (so they would be visible inside the root) and the
    run's folder does not, and that still exist: each gets an empty tmpfs over it."""
    return tuple(
        dict.fromkeys(
            g for g in guarded if not inside(g, folder) and any(inside(g, s) for s in shown) and os.path.isdir(g)
        )
    )


@functools.cache
def bwrap_version(bwrap: str) -> str:
    """What `bwrap --version` prints (e.g. "bubblewrap 0.8.0").

    Raises:
        GateError: (exit 1) when it fails.
    """
    try:
        proc = subprocess.run(
            [bwrap, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GateError(f"`{bwrap} --version` failed: {exc}") from None
    if proc.returncode != 0 or not proc.stdout.strip():
        raise GateError(f"`{bwrap} --version` exited {proc.returncode}")
    return proc.stdout.strip().splitlines()[0]


def local_shown(local: Sequence[LocalPath], system_dirs: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """What the root must show of the workspace's local paths outside its tree (`local_paths.outside`):
    (read-only paths at their own place, (host, inside) mounts of relative ones). Paths in a system
    directory are shown already.

    Raises:
        GateError: (exit 1) naming the file, line and path, for a path that does not exist on the host.
    """
    same: list[str] = []
    moved: list[tuple[str, str]] = []
    for path in local:
        if not os.path.exists(path.host):
            raise GateError(
                f"{path.describe()}: {path.host} does not exist on this machine, so the clean run's sealed "
                f"root cannot show it; fix the path, or name the folder in {READ_ONLY_VARIABLE}"
            )
        if any(inside(path.host, d) for d in system_dirs) and path.host == path.seen_at:
            continue
        if path.host == os.path.realpath(path.seen_at):
            same.append(path.host)
        elif not any(_within(path.host, path.seen_at, host, seen) for host, seen in moved):
            moved.append((path.host, path.seen_at))
    return same, moved


def _within(host: str, seen: str, outer_host: str, outer_seen: str) -> bool:
    """True when (host, seen) is shown already by the mount (outer_host, outer_seen): the same
    relative place under both."""
    return inside(host, outer_host) and os.path.join(outer_seen, os.path.relpath(host, outer_host)) == seen


def sealed_root(
    folder: str,
    environ: Mapping[str, str],
    guarded: Sequence[str],
    local: Sequence[LocalPath] = (),
    trees: Sequence[str] = (),
) -> SealedRoot:
    """The seal of a clean run whose files all lie in `folder`, checked by running `true` in it.

    Args:
        folder: the run's folder (an existing directory).
        environ: the environment the run's Bazel gets (PATH, pip's and the remote settings), and
            `$ORACLE_GATE_SEAL_READ_ONLY` (READ_ONLY_VARIABLE).
        guarded: paths the root must not show (the repository's work tree, git directories and
            the other paths the workspace run blocked): a read-only path in one is refused, one
            that a system directory or read-only path holds is masked.
        local: the workspace's local paths outside its tree (`local_paths.outside`), shown
            read-only where the tree looks for them (`local_shown`).
        trees: workspace trees outside `folder` to show read-only at their own path (the
            workspace run's work tree); a guarded path inside one (its git directory) is masked.

    Raises:
        GateError: (exit 1) when bwrap is missing, a local path of pip's, the remote settings or
            `$ORACLE_GATE_SEAL_READ_ONLY` lies in a guarded path, an entry of the latter does not
            exist, or bwrap cannot make the root here (its first error line is in the message).
    """
    bwrap = find_bwrap(environ)
    tools = _tool_paths(environ)
    system = system_entries()
    system_dirs = [f"/{name}" for name, target in system if target is None]
    blockable = tuple(_outside_all(dict.fromkeys(tools), system_dirs))
    same, moved = local_shown(local, system_dirs)
    read_only = tuple(dict.fromkeys([*blockable, *_outside_all([*named_paths(environ), *same], system_dirs)]))
    guarded = [os.path.realpath(g) for g in guarded]
    refuse_inside([*read_only, *(host for host, _ in moved)], guarded)
    real_folder = os.path.realpath(folder)
    _refuse_moved_holding(moved, guarded, real_folder)
    real_trees = tuple(os.path.realpath(t) for t in trees)
    seal = SealedRoot(
        bwrap,
        bwrap_version(bwrap),
        real_folder,
        read_only,
        system,
        masks([*system_dirs, *read_only, *real_trees, *(host for host, _ in moved)], guarded, real_folder),
        blockable,
        tuple(moved),
        real_trees,
    )
    _probe(seal)
    return seal


def _tool_paths(environ: Mapping[str, str]) -> list[str]:
    """The local paths pip's settings and the remote settings name, and pip's site configuration files."""
    tools = local_paths(pip_settings(environ) + [environ[v] for v in REMOTE_PATH_VARIABLES if environ.get(v)])
    return tools + [p for p in PIP_SITE_CONFIGS if os.path.exists(p)]


def _outside_all(paths: Iterable[str], folders: Sequence[str]) -> list[str]:
    """The `paths` that none of `folders` holds, in order."""
    return [p for p in paths if not any(inside(p, d) for d in folders)]


def _refuse_moved_holding(moved: Sequence[tuple[str, str]], guarded: Sequence[str], real_folder: str) -> None:
    """Refuses a local repository shown at another path whose host folder holds a guarded path or
    the run's folder, or whose shown path holds the run's folder.

    Raises:
        GateError: (exit 1) naming the repository and what it holds.
    """
    for host, seen in moved:
        holds = [g for g in [*guarded, real_folder] if inside(g, host) or inside(real_folder, seen)]
        if holds:
            raise GateError(
                f"a local repository of the workspace names {host}, which holds {holds[0]}; the sealed "
                "clean run will not show it: point it at a folder of its own"
            )


def _probe(seal: SealedRoot) -> None:
    """Checks that bubblewrap can make the root `seal` by running `true` in it.

    Raises:
        GateError: (exit 1) with bwrap's first error line, or why it could not run.
    """
    probe = seal.wrap(["true"], seal.folder)
    try:
        proc = subprocess.run(
            probe,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GateError(f"bubblewrap cannot make the clean run's sealed root: {exc}") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
        raise GateError(f"bubblewrap cannot make the clean run's sealed root here: {first}")
