"""One shell inside the clean run's sealed root that runs the run's Bazel commands one after another,
so that one Bazel server, started inside the root, serves them all (docs/design.md section 10).

Without a session, each command of a clean run is a `bazel --batch` process in a sealed root of its
own: a fresh server per command, the packages loaded and analysed again each time. A session starts the
root once (`SealedRoot.wrap` of a small POSIX shell loop), sends it one command per line on its
standard input (`. FILE`, the command shell-quoted in FILE), and reads the command's exit code back on its
standard output; the command's output goes to files in the run's folder, which the gate reads as it grows. At
the end the session closes the shell's input and waits: the root's pid namespace ends with the shell, so
nothing the commands started (the server included) outlives the run, and the run's folder, output base
included, is removed by the clean run as before.

The workspace run's session may instead run in a root kept between checks (kept_root.py): the same
shell and protocol over two named pipes outside the root, and `close` leaves that root running.
Each command's exit code comes back tagged with a random tag of the session and the command's
number, so a code left in a kept root's pipe by an earlier check is never taken for one of this
check's, and no process inside the root can forge one.
"""

from __future__ import annotations

import os
import secrets
import select
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from tools.oracle_gate.errors import GateError, TakenError
from tools.oracle_gate.runs import procfs
from tools.oracle_gate.runs.sealed_root import SealedRoot

# Reads a command line (`TAG . FILE`), runs it, prints the tag and its exit code; stops at the end
# of its input.
LOOP = 'while read -r tag line; do eval "$line"; printf "%s %s\\n" "$tag" "$?"; done'
# Seconds between two reads of a growing output file while its command runs.
_POLL_S = 0.1
# Seconds between two looks for a command's output file before it starts.
_START_POLL_S = 0.01
# Seconds `close` waits for the shell to end before killing the root.
_CLOSE_S = 60


@dataclass(frozen=True)
class Ends:
    """The two ends of a shell running `LOOP`: a descriptor the gate writes command lines to, one
    it reads tagged exit codes from, whether the shell still runs, and what `close` does."""

    commands: int
    codes: int
    alive: Callable[[], bool]
    close: Callable[[], None]


class RootSession:
    """A shell in `root`, started in `cwd` with `env` as its whole environment, that runs commands
    in order (`run`, `stream`). Use it as a context manager, or call `close`. With `ends`, the
    shell runs already (a kept root: kept_root.py) and `root`, `env` are not used.

    Raises:
        GateError: (exit 1) when bwrap cannot start.
    """

    def __init__(
        self, root: SealedRoot, cwd: str, env: Mapping[str, str], outputs: str, ends: Ends | None = None
    ) -> None:
        # A folder of the session's own: a fresh name each time, removed by `close`.
        self.cwd, self.outputs, self._count, self._pending = (
            cwd,
            tempfile.mkdtemp(prefix="session-", dir=outputs),
            0,
            b"",
        )
        self._ends = ends or _started(root, cwd, env)
        # No process inside the root can guess it, so none can forge a command's exit code on the
        # shell's output (a kept root's pipe, say).
        self._tag = secrets.token_hex(8)

    def __enter__(self) -> RootSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _send(self, argv: Sequence[str], env: Mapping[str, str], stdout: str, stderr: str) -> None:
        assigned = [f"{k}={v}" for k, v in sorted(env.items())]
        line = (
            f"(cd {shlex.quote(self.cwd)} && exec env {shlex.join([*assigned, *argv])}) </dev/null "
            f">{shlex.quote(stdout)} 2>{shlex.quote(stderr) if stderr != stdout else '&1'}"
        )
        # The command goes into a file the shell sources, so an argument may hold a line feed.
        script = stdout.rsplit(".", 1)[0] + ".sh"
        fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(line.encode("utf-8", "surrogateescape") + b"\n")
        command = f"{self._tag}-{self._count} . {shlex.quote(script)}\n".encode("utf-8", "surrogateescape")
        try:
            if os.write(self._ends.commands, command) != len(command):
                raise BrokenPipeError
        except OSError:
            raise GateError("the sealed root stopped before the run ended") from None

    def _code(self, timeout: float | None) -> int | None:
        """The exit code the shell printed for the last command sent, or None when none came within
        `timeout` seconds. Codes of other tags (a kept root's earlier check) are skipped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            while b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                tag, _, code = line.decode("ascii", "replace").partition(" ")
                if not code.strip().isdigit():
                    raise GateError("the sealed root stopped before the run ended")
                if tag == f"{self._tag}-{self._count}":
                    return int(code)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._ends.codes], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._ends.codes, 4096)
            if not chunk:
                raise GateError("the sealed root stopped before the run ended")
            self._pending += chunk

    def _paths(self) -> tuple[str, str]:
        self._count += 1
        base = os.path.join(self.outputs, f"command-{self._count}")
        return base + ".out", base + ".err"

    def run(self, argv: Sequence[str], env: Mapping[str, str] = {}) -> subprocess.CompletedProcess[str]:
        """Runs `argv` (with `env` set on top of the session's environment) and returns its exit code,
        standard output and standard error, as text.

        Raises:
            GateError: (exit 1) when the root stopped.
        """
        out, err = self._paths()
        self._send(argv, env, out, err)
        code = self._code(None)
        assert code is not None
        texts = []
        for path in (out, err):
            with _opened(path) as f:
                texts.append(f.read().decode("utf-8", "replace"))
            _remove(path)
        _remove(out.rsplit(".", 1)[0] + ".sh")
        return subprocess.CompletedProcess(list(argv), code, texts[0], texts[1])

    def stream(self, argv: Sequence[str], env: Mapping[str, str] = {}) -> tuple[Iterator[bytes], list[int]]:
        """Starts `argv` (standard output and error together) and returns (its output lines as they
        come, a list that holds its exit code once the lines are exhausted).

        Raises:
            GateError: (exit 1) when the root stopped.
        """
        out, _ = self._paths()
        self._send(argv, env, out, out)
        code: list[int] = []

        def lines() -> Iterator[bytes]:
            ended = self._wait_for(out)
            if ended is not None:
                code[:] = [ended]
            with _opened(out) as f:
                pending = b""
                while True:
                    done = self._code(_POLL_S) if not code else code[0]
                    pending += f.read()
                    *whole, pending = pending.split(b"\n")
                    yield from (piece + b"\n" for piece in whole)
                    if done is not None:
                        code[:] = [done]
                        pending += f.read()
                        yield from (piece + b"\n" for piece in pending.split(b"\n") if piece)
                        break
            _remove(out)
            _remove(out.rsplit(".", 1)[0] + ".sh")

        return lines(), code

    def _wait_for(self, path: str) -> int | None:
        """None once the shell has made `path` (the redirection happens as the command starts), or
        the command's exit code when it ended first and the file is there.

        Raises:
            TakenError: (exit 4) when the command ended and its output file is gone.
            GateError: (exit 1) when the shell neither made the file nor ended within _CLOSE_S s.
        """
        deadline = time.monotonic() + _CLOSE_S
        while not os.path.lexists(path):
            ended = self._code(_START_POLL_S)
            if ended is not None:
                if not os.path.lexists(path):
                    raise _taken(path)
                return ended
            if time.monotonic() > deadline:
                raise GateError("the sealed root did not start the command")
        return None

    def close(self) -> None:
        """Ends the session: a fresh root's shell ends with its input, and the root's pid namespace
        with it (killed after _CLOSE_S seconds), and every process left there with that, which
        `close` waits for (`procfs.wait_empty`); a kept root's ends are closed and the root goes
        on (kept_root.py). Removes the session's folder.

        Raises:
            GateError: (exit 1) when a fresh root's processes are not all gone _CLOSE_S seconds
                after its shell.
        """
        self._ends.close()
        shutil.rmtree(self.outputs, ignore_errors=True)


def _started(root: SealedRoot, cwd: str, env: Mapping[str, str]) -> Ends:
    """A fresh root running `LOOP`, its ends the pipes of its standard input and output.

    Raises:
        GateError: (exit 1) when bwrap cannot start.
    """
    try:
        proc = subprocess.Popen(
            root.wrap(["/bin/sh", "-c", LOOP], cwd),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:
        raise GateError(f"cannot start the sealed root: {exc.strerror}") from None
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def close() -> None:
        # The root's pid namespace, known while its init runs: bwrap reports the shell's end
        # before the kernel has killed what is left in the namespace, so the end waits for that.
        ns = procfs.child_namespace(proc.pid) if proc.poll() is None else None
        if ns == procfs.namespace(os.getpid()):  # a root that shares this namespace: nothing ends with it
            ns = None
        if proc.poll() is None:
            try:
                stdin.close()
            except BrokenPipeError:
                pass
        try:
            proc.wait(timeout=_CLOSE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stdout.close()
        if ns is not None and not procfs.wait_empty(ns, _CLOSE_S):
            raise GateError(f"the sealed root's processes did not end within {_CLOSE_S} s of its shell")

    return Ends(stdin.fileno(), stdout.fileno(), lambda: proc.poll() is None, close)


def _taken(path: str) -> TakenError:
    """The error for a session file that is gone or is no longer a regular file of its own."""
    return TakenError(
        f"the gate's session file {path} went missing or was replaced while the change's code ran: "
        "Bazel's server moved it out as an action's output (an output folder replaced by a symlink, "
        "docs/threat-model.md)"
    )


def _opened(path: str):  # type: ignore[no-untyped-def]
    """`path` opened for reading in binary, never through a link.

    Raises:
        TakenError: (exit 4) when it is gone or not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        raise _taken(path) from None
    return os.fdopen(fd, "rb")


def _remove(path: str) -> None:
    """Removes a session file.

    Raises:
        TakenError: (exit 4) when it is gone already.
    """
    try:
        os.unlink(path)
    except FileNotFoundError:
        raise _taken(path) from None
