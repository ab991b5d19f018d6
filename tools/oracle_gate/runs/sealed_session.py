"""One shell inside the clean run's sealed root that runs the run's Bazel commands one after another,
so that one Bazel server, started inside the root, serves them all (docs/design.md section 10).

Without a session, each command of a clean run is a `bazel --batch` process in a sealed root of its
own: a fresh server per command, the packages loaded and analysed again each time. A session starts the
root once (`SealedRoot.wrap` of a small POSIX shell loop), sends it one command per line on its
standard input (`. FILE`, the command shell-quoted in FILE), and reads the command's exit code back on its standard output; the
command's output goes to files in the run's folder, which the gate reads as it grows. At the end
the session runs `bazel shutdown`, closes the shell's input and waits: the root's pid namespace
ends with the shell, so nothing the commands started (the server included) outlives the run, and
the run's folder, output base included, is removed by the clean run as before.
"""

from __future__ import annotations

import os
import select
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence

from tools.oracle_gate.errors import GateError, TakenError
from tools.oracle_gate.runs.sealed_root import SealedRoot

# Reads a command line (`. FILE`), runs it, prints its exit code; stops at the end of its input.
_LOOP = 'while IFS= read -r line; do eval "$line"; printf "%s\\n" "$?"; done'
# Seconds between two reads of a growing output file while its command runs.
_POLL_S = 0.1
# Seconds `close` waits for `bazel shutdown` and the shell to end before killing the root.
_CLOSE_S = 60


class SealedSession:
    """A shell in `root`, started in `cwd` with `env` as its whole environment, that runs commands
    in order (`run`, `stream`). Use it as a context manager, or call `close`.

    Raises:
        GateError: (exit 1) when bwrap cannot start.
    """

    def __init__(self, root: SealedRoot, cwd: str, env: Mapping[str, str], outputs: str) -> None:
        # A folder of the session's own: a fresh name each time, removed by `close`.
        self.cwd, self.outputs, self._count = cwd, tempfile.mkdtemp(prefix="session-", dir=outputs), 0
        try:
            self._proc = subprocess.Popen(root.wrap(["/bin/sh", "-c", _LOOP], cwd), cwd=cwd, env=dict(env),
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise GateError(f"cannot start the sealed root: {exc.strerror}") from None

    def __enter__(self) -> "SealedSession":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _send(self, argv: Sequence[str], env: Mapping[str, str], stdout: str, stderr: str) -> None:
        assigned = [f"{k}={v}" for k, v in sorted(env.items())]
        line = (f"(cd {shlex.quote(self.cwd)} && exec env {shlex.join([*assigned, *argv])}) </dev/null "
                f">{shlex.quote(stdout)} 2>{shlex.quote(stderr) if stderr != stdout else '&1'}")
        # The command goes into a file the shell sources, so an argument may hold a line feed.
        script = stdout.rsplit(".", 1)[0] + ".sh"
        fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(line.encode("utf-8", "surrogateescape") + b"\n")
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(b". " + shlex.quote(script).encode("utf-8", "surrogateescape") + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise GateError("the sealed root stopped before the clean run ended") from None

    def _code(self, timeout: float | None) -> int | None:
        """The exit code the shell printed, or None when none came within `timeout` seconds."""
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self._proc.stdout.readline()
        if not line.strip().isdigit():
            raise GateError("the sealed root stopped before the clean run ended")
        return int(line)

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
            with _opened(_wait_for(out, self._proc)) as f:
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

    def close(self) -> None:
        """Ends the shell (its input closed) and waits for the root, whose pid namespace ends with
        it; kills it after _CLOSE_S seconds. The caller runs `bazel shutdown` first."""
        proc = self._proc
        if proc.poll() is None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            proc.wait(timeout=_CLOSE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(self.outputs, ignore_errors=True)


def _taken(path: str) -> TakenError:
    """The error for a session file that is gone or is no longer a regular file of its own."""
    return TakenError(f"the gate's session file {path} went missing or was replaced while the change's code ran: "
                      "Bazel's server moved it out as an action's output (an output folder replaced by a symlink, "
                      "docs/threat-model.md)")


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


def _wait_for(path: str, proc: "subprocess.Popen[bytes]") -> str:
    """`path`, once the shell has created it (the redirection happens as the command starts)."""
    deadline = time.monotonic() + _CLOSE_S
    while not os.path.exists(path):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise GateError("the sealed root did not start the command")
        time.sleep(0.01)
    return path
