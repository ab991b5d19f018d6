"""A sealed root kept between checks: its shell and its Bazel server go on after a check ends, so
that the next check of the same tree finds the server warm, its packages loaded and its workers
started (docs/design.md section 10, "The kept root"). The workspace run keeps one per tree, and the
behaviour phase one per repository for its probe of the base tip (sealed_session.py `kept_session`).

A kept root is the root workspace_seal.py makes, started without bwrap's `--die-with-parent`. Its
shell reads command lines from a named pipe and writes tagged exit codes to another; both pipes
and the root's state file lie in the channel folder `<run folder>.kept`, beside the run folder and
outside the root, so nothing inside the root (an action, or Bazel's server collecting an action's
outputs through a symlinked folder) can reach them. Each check:

- attaches to the kept root when its key (the sha256 of bwrap's whole command line, the shell's
  environment and working folder, and the device and inode of every folder the root shows or
  masks) is the one this check would start, its first process is the one the state file names,
  every folder it shows or masks is still mounted in it, and the last check that used it ended
  normally; else it ends that root and starts a new one;
- before its first command and after its last, kills every process in the root but its first
  process, the shell (with what it runs while it waits) and Bazel's server (with its workers): a
  daemon an action forked does not see the next check (the root's private `/tmp` and `/dev/shm`
  are kept: docs/threat-model.md says what that leaves);
- ends the root when the run raised an error, and when the caller asks (`end`: a trace of an
  output collected through a symlinked folder, collection.py); the caller then removes the output
  user root, as it does after a check that did not end normally (`unclean`).

The shell ends after `IDLE_S` seconds without a command, and the root with it. `oracle-gate stop`
ends every kept root of the runs folder at once (`stop_all`).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.runs import procfs
from tools.oracle_gate.runs.root_session import Ends, RootSession
from tools.oracle_gate.runs.sealed_root import SealedRoot

# Seconds a kept root waits for a command before its shell, and the root, end: Bazel's own default
# idle time of a server (`--max_idle_secs`, 3 hours).
IDLE_S = 10800
# The kept root's shell: like root_session.LOOP, each line read by a shell of its own under
# `timeout` (coreutils), which reads byte by byte and so never takes a second line.
KEPT_LOOP = (
    f'while l=$(timeout {IDLE_S} sh -c \'read -r l && printf "%s" "$l"\'); do '
    'tag=${l%% *}; line=${l#* }; eval "$line"; printf "%s %s\\n" "$tag" "$?"; done'
)
SUFFIX = ".kept"
_STATE, _COMMANDS, _CODES, _IN_USE = "state.json", "commands", "codes", "in-use"


class KeptRoot:
    """The kept root of one run folder (`folder`), its channel folder `folder + SUFFIX`.

    Use `session` once per check, while holding the run folder's lock (workspace_seal.py).
    """

    def __init__(self, folder: str) -> None:
        self.channel = os.path.realpath(folder) + SUFFIX

    def _path(self, name: str) -> str:
        return os.path.join(self.channel, name)

    @contextmanager
    def session(self, root: SealedRoot, cwd: str, env: Mapping[str, str]) -> Iterator[RootSession]:
        """A session in the kept root for `root` (attached, or started anew), with `env` as its
        shell's whole environment, in `cwd`. A normal end kills every process but the shell and
        Bazel's server and leaves the root running; an exception ends the root.

        Raises:
            GateError: (exit 1) when the channel folder cannot be made or bwrap cannot start.
        """
        key = root_key(root, cwd, env)
        ends = self._attached(key, root) or self._started(root, cwd, env, key)
        session = RootSession(root, cwd, env, root.folder, ends)
        ended = True
        try:
            yield session
            ended = False
        finally:
            session.close()
            if ended:
                self.end()
            else:
                self.sweep()
                _unlink(self._path(_IN_USE))

    def unclean(self) -> bool:
        """True when the last check that used the root did not end normally (the gate was killed
        while it ran): its invocation may have gone on unwatched, so the caller ends the root and
        discards the output base before this check (workspace run: check/runs.py)."""
        return os.path.lexists(self._path(_IN_USE))

    def _state(self) -> dict[str, object] | None:
        """The state file's record, or None when there is none or it cannot be read."""
        try:
            with open(self._path(_STATE), encoding="utf-8") as f:
                state = json.load(f)
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) and isinstance(state.get("pid"), int) else None

    def _first(self) -> int | None:
        """The host pid of the root's bwrap when it still runs as the state file recorded (same
        start time: not a reused pid), else None."""
        state = self._state()
        if state is None:
            return None
        pid = int(state["pid"])  # type: ignore[call-overload]
        stat = procfs.stat(pid)
        return pid if stat is not None and stat[2] == state.get("start") and stat[1] != "Z" else None

    def _attached(self, key: str, root: SealedRoot) -> Ends | None:
        """The ends of the kept root when it is the one for `key`, runs, and was left by a check
        that ended normally; else None, after ending whatever root was there."""
        state = self._state()
        fresh = state is not None and state.get("key") == key and self._first() is not None
        if not fresh or os.path.lexists(self._path(_IN_USE)) or not self._mounted(root):
            self.end()
            return None
        try:
            ends = self._ends()
        except OSError:
            self.end()
            return None
        self._mark_in_use()
        self.sweep()
        return ends

    def _started(self, root: SealedRoot, cwd: str, env: Mapping[str, str], key: str) -> Ends:
        """Starts the kept root (its pipes made anew) and returns its ends.

        Raises:
            GateError: (exit 1) when the channel folder cannot be made or bwrap cannot start.
        """
        try:
            os.makedirs(self.channel, mode=0o700, exist_ok=True)
            if os.path.islink(self.channel) or not os.path.isdir(self.channel):
                raise OSError(errno.ENOTDIR, "not a folder")
            for name in (_COMMANDS, _CODES):
                _unlink(self._path(name))
                os.mkfifo(self._path(name), 0o600)
            # The shell's own ends are opened read-write: a pipe with no other writer never
            # gives it an end of input, and its codes never block for want of a reader.
            commands = os.open(self._path(_COMMANDS), os.O_RDWR | os.O_CLOEXEC)
            codes = os.open(self._path(_CODES), os.O_RDWR | os.O_CLOEXEC)
        except OSError as exc:
            raise GateError(
                f"cannot make the kept root's channel folder {self.channel}: {exc.strerror or exc}"
            ) from None
        try:
            proc = subprocess.Popen(
                root.wrap(["/bin/sh", "-c", KEPT_LOOP], cwd, die_with_parent=False),
                cwd=cwd,
                env=dict(env),
                stdin=commands,
                stdout=codes,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise GateError(f"cannot start the sealed root: {exc.strerror}") from None
        finally:
            os.close(commands)
            os.close(codes)
        stat = procfs.stat(proc.pid)
        record = {"key": key, "pid": proc.pid, "start": stat[2] if stat else None}
        with open(self._path(_STATE), "w", encoding="utf-8") as f:
            json.dump(record, f)
        self._mark_in_use()
        try:
            return self._ends()
        except OSError as exc:
            self.end()
            raise GateError(f"the sealed root stopped as it started: {exc.strerror or exc}") from None

    def _mark_in_use(self) -> None:
        """Marks the root as used by a check that has not ended (removed when it ends normally)."""
        with open(self._path(_IN_USE), "w", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")

    def _ends(self) -> Ends:
        """This process's ends of the kept root's pipes.

        Raises:
            OSError: when the shell no longer reads its pipe (ENXIO) or the pipes are gone.
        """
        commands = os.open(self._path(_COMMANDS), os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        fcntl.fcntl(commands, fcntl.F_SETFL, fcntl.fcntl(commands, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        codes = os.open(self._path(_CODES), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)

        def close() -> None:
            os.close(commands)
            os.close(codes)

        return Ends(commands, codes, lambda: self._first() is not None, close)

    def _mounted(self, root: SealedRoot) -> bool:
        """True when every folder the root shows or masks is still a mount point inside it: the
        kernel drops a mount whose place on the host was removed (a `.git` made anew), and an inode
        number can come back for a new folder, so the key alone cannot tell."""
        inner = [pid for pid, (ppid, _) in procfs.processes().items() if ppid == self._first()]
        try:
            with open(f"/proc/{inner[0]}/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
                points = {_unescape(line.split()[4]) for line in f if len(line.split()) > 4}
        except (IndexError, OSError):
            return False
        return {root.folder, *root.trees, *root.read_only, *root.masked} <= points

    def members(self) -> dict[int, tuple[int, list[int]]]:
        """The root's processes: host pid -> (host pid of its parent, its pids from the host's pid
        namespace inward: /proc's `NSpid`); empty when the root does not run."""
        first = self._first()
        if first is None:
            return {}
        inner = [pid for pid, (ppid, _) in procfs.processes().items() if ppid == first]
        namespace = procfs.namespace(inner[0]) if inner else None
        if namespace is None:
            return {}
        return {
            pid: (ppid, nspid)
            for pid, (ppid, nspid) in procfs.processes().items()
            if procfs.namespace(pid) == namespace
        }

    def sweep(self) -> list[int]:
        """Kills (SIGKILL) every process of the root but its first (pid 1 inside), the shell (pid 2
        inside, the command pid 1 started) with its descendants (the command reader it waits on) and each
        Bazel server of the root's output bases with its descendants (the persistent workers). Run between
        checks, when no command runs.

        Returns:
            the host pids killed.
        """
        members = self.members()
        inside = {nspid[-1]: pid for pid, (_, nspid) in members.items()}
        kept = {pid for pid, (_, nspid) in members.items() if nspid[-1] == 1}
        # The shell is the one command bwrap's pid 1 started: pid 2 inside (its `sh -c` execs the
        # loop), whatever another process's command line says.
        shell = [pid for pid, (ppid, nspid) in members.items() if ppid in kept and nspid[-1] == 2]
        servers = [inside[n] for n in self._server_pids() if n in inside]
        roots = set(shell) | set(servers)
        for pid in members:
            if _descends(pid, roots, members):
                kept.add(pid)
        killed = [pid for pid in members if pid not in kept]
        for pid in killed:
            _kill(pid)
        return killed

    def _server_pids(self) -> list[int]:
        """The pids (inside the root) of the Bazel servers its output bases name: the run folder's
        `bazel/*/server/server.pid.txt`."""
        top = os.path.join(self.channel[: -len(SUFFIX)], "bazel")
        found = []
        try:
            bases = os.listdir(top)
        except OSError:
            return []
        for base in bases:
            try:
                with open(os.path.join(top, base, "server", "server.pid.txt"), encoding="ascii") as f:
                    found.append(int(f.read().strip()))
            except (OSError, ValueError):
                continue
        return found

    def end(self) -> None:
        """Ends the kept root, if one runs (its first process and every process inside, SIGKILL),
        and removes its state and marks; the pipes are made anew by the next start."""
        first = self._first()
        if first is not None:
            members = self.members()
            for pid in [p for p, (_, nspid) in members.items() if nspid[-1] == 1] + [first]:
                _kill(pid)
            for pid in members:
                _kill(pid)
            try:
                os.waitpid(first, os.WNOHANG)  # a root this process started: not left a zombie
            except ChildProcessError:
                pass
        for name in (_STATE, _IN_USE):
            _unlink(self._path(name))


def root_key(root: SealedRoot, cwd: str, env: Mapping[str, str]) -> str:
    """The sha256 (hex) of what a kept root is: bwrap's command line, the environment, the working
    folder, and (device, inode) of every folder the root shows or masks (a folder made anew at the
    same path is not the one a running root shows; a masked one made anew is no longer masked
    there: the kernel drops a mount whose place was removed)."""
    shown = [root.folder, *root.trees, *root.read_only, *root.masked]
    stats = []
    for path in shown:
        try:
            st = os.stat(path)
            stats.append([path, st.st_dev, st.st_ino])
        except OSError:
            stats.append([path, None, None])
    text = json.dumps(
        [root.wrap(["/bin/sh", "-c", KEPT_LOOP], cwd, die_with_parent=False), sorted(env.items()), cwd, stats]
    )
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def stop_all(runs: str) -> int:
    """Ends every kept root whose channel folder lies in `runs` (the runs folder,
    `blocks.runs_dir`); returns how many ran."""
    try:
        names = sorted(os.listdir(runs))
    except OSError:
        return 0
    stopped = 0
    for name in names:
        if name.endswith(SUFFIX) and os.path.isdir(os.path.join(runs, name)):
            kept = KeptRoot(os.path.join(runs, name[: -len(SUFFIX)]))
            stopped += kept._first() is not None
            kept.end()
    return stopped


def _unescape(field: str) -> str:
    """A path field of /proc/PID/mountinfo with its octal escapes (`\\040` for a space, proc(5))
    undone."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _descends(pid: int, roots: set[int], members: Mapping[int, tuple[int, list[int]]]) -> bool:
    """True when `pid` is one of `roots` or a descendant of one, through parents in `members`."""
    seen = set()
    while pid in members and pid not in seen:
        if pid in roots:
            return True
        seen.add(pid)
        pid = members[pid][0]
    return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
