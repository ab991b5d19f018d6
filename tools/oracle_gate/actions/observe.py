"""The supervisor of the `OracleCall` action: runs every row through one caller process.

Usage (from the action `oracle_test` declares):

    observe.py --inputs INPUTS.json --generated GENERATED.json --out OBSERVATIONS.json --log CALLER.log [--quiet]

INPUTS.json is the suite's inputs view (no bound, no expected value), GENERATED.json the samples
drawn for this run's salt. For each row, in id order, the supervisor sends the caller one request
(the row's blob samples, then its generated samples) and waits at most the row's `timeout_s` seconds
for one reply line. A reply is stored verbatim, as text, for the judge to parse strictly. A hang past
the limit, a caller that exits, or a reply longer than MAX_REPLY_BYTES becomes the row's error; the
caller's process group is killed and a fresh caller serves the next row.

Limits (docs/design.md section 8, "Limits"): the caller runs with kernel resource limits set before
it starts (`limits`): its address space (the row's `memory_mib`), open files (OPEN_FILES_LIMIT) and
the size of any file it writes (FILE_SIZE_LIMIT_BYTES). Its stdout and stderr reach this supervisor
through a pipe, which writes at most MAX_LOG_BYTES of it to CALLER.log and stops a row whose calls
write more than OUTPUT_LIMIT_BYTES, while they write it. While a row runs, the supervisor counts the
processes of the caller's session every WATCH_INTERVAL_S seconds and stops the row past
PROCESS_LIMIT (RLIMIT_NPROC cannot do it: the kernel exempts the host's root, which Bazel's sandbox
maps the action's user to when the gate runs as root). Each limit that ends a row is named in its
error.

No process production code starts outlives its row or reaches the observations: the supervisor is
the subreaper of its descendants, so a daemon that leaves the caller's session (a double fork,
`setsid`) is still its child, and it kills every descendant when a caller stops and again before it
writes OBSERVATIONS.json, which it creates afresh. It is not dumpable, so the caller, running as the
same user, can neither ptrace it nor write its memory (`seal_supervisor`).

The action exits 0 whatever production code does; it exits 1 only when its own inputs are unusable
or the supervisor cannot lock itself down (docs/design.md section 8). The judge copies CALLER.log into the
test log. With `--quiet` (the hidden caller, run on the hidden inputs view) this process's stdout
and stderr and the caller's output all go to /dev/null and CALLER.log stays empty: nothing of a
hidden sample reaches a log.

Standard library only; this file must not import the gate package (the action's runfiles hold the
production library, not the gate).
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  # fmt: skip

import argparse
import ctypes
import json
import resource
import select
import signal
import subprocess
import time
from collections.abc import Sequence

MAX_REPLY_BYTES = 64 << 20
STOP_GRACE_S = 5.0
OBSERVATIONS_SCHEMA = 1
# caller.py's LOAD_ERROR: the reply of a row whose callables could not be loaded begins with it.
LOAD_ERROR = "cannot load entry"
# Limits on the caller (docs/design.md section 8, "Limits"). Bytes one row's calls may write to
# stdout and stderr; bytes of that CALLER.log keeps in all.
OUTPUT_LIMIT_BYTES = 1 << 20
MAX_LOG_BYTES = 1 << 20
# Processes in the caller's session (the caller included), counted every WATCH_INTERVAL_S seconds.
PROCESS_LIMIT = 64
WATCH_INTERVAL_S = 0.1
# RLIMIT_NOFILE: open file descriptors.
OPEN_FILES_LIMIT = 256
# RLIMIT_FSIZE: the largest file the caller may write, in bytes.
FILE_SIZE_LIMIT_BYTES = 64 << 20
# RLIMIT_AS when a row names no `memory_mib` (schema.DEFAULT_MEMORY_MIB; this side imports nothing
# of the gate).
DEFAULT_MEMORY_MIB = 2048


def limits(memory_mib: int) -> list[tuple[int, int, str]]:
    """(resource, limit, name) for the caller serving rows of `memory_mib` MiB."""
    return [
        (resource.RLIMIT_AS, memory_mib << 20, f"the memory limit of {memory_mib} MiB (memory_mib)"),
        (resource.RLIMIT_NOFILE, OPEN_FILES_LIMIT, f"the open-file limit of {OPEN_FILES_LIMIT}"),
        (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT_BYTES, f"the file size limit of {FILE_SIZE_LIMIT_BYTES} bytes"),
    ]


def _apply_limits(memory_mib: int) -> None:
    """Runs in the child before the caller starts: soft and hard limits (never above the current
    hard limit, which only a privileged process could raise)."""
    for kind, value, _ in limits(memory_mib):
        _, hard = resource.getrlimit(kind)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (cap, cap))


class Log:
    """CALLER.log: what every caller of the action wrote, kept up to MAX_LOG_BYTES in all."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.kept = 0
        self.cut = False

    def write(self, data: bytes) -> None:
        """Appends `data`, or what of it fits; notes the cut once."""
        keep = data[: max(0, MAX_LOG_BYTES - self.kept)]
        if keep:
            os.write(self.fd, keep)
            self.kept += len(keep)
        if len(keep) < len(data) and not self.cut:
            os.write(self.fd, f"\n--- oracle-gate: caller log cut at {MAX_LOG_BYTES} bytes\n".encode())
            self.cut = True


class Caller:
    """One caller process, its two pipes (requests in, replies out) and its output pipe."""

    def __init__(self, log: Log, memory_mib: int = DEFAULT_MEMORY_MIB) -> None:
        here = os.path.dirname(os.path.abspath(__file__))
        req_read, self.req_write = os.pipe()
        self.rep_read, rep_write = os.pipe()
        self.out_read, out_write = os.pipe()
        self.memory_mib = memory_mib
        self.log = log
        self.row_output = 0
        env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            ORACLE_GATE_MEMORY_MIB=str(memory_mib),
            ORACLE_GATE_OPEN_FILES_LIMIT=str(OPEN_FILES_LIMIT),
            ORACLE_GATE_FILE_SIZE_LIMIT=str(FILE_SIZE_LIMIT_BYTES),
        )
        # -S: no `site` module, so no `sitecustomize`, `usercustomize` or `.pth` file on the path
        # (the change's BUILD files choose that path) runs before the caller imports anything.
        self.proc = subprocess.Popen(
            [sys.executable, "-B", "-S", os.path.join(here, "caller.py"), str(req_read), str(rep_write)],
            stdin=subprocess.DEVNULL,
            stdout=out_write,
            stderr=out_write,
            pass_fds=(req_read, rep_write),
            env=env,
            start_new_session=True,
            preexec_fn=lambda: _apply_limits(memory_mib),
        )
        os.close(req_read)
        os.close(rep_write)
        os.close(out_write)
        self.buffer = b""

    def processes(self) -> int:
        """How many processes are in the caller's session (its pid: `start_new_session`)."""
        session = str(self.proc.pid).encode()
        return sum(1 for _, fields in proc_stats() if len(fields) > 3 and fields[3] == session)

    def start_row(self) -> None:
        """Resets the row's output count."""
        self.row_output = 0

    def _drain(self) -> bool:
        """Reads what the caller wrote to stdout and stderr, keeps it within MAX_LOG_BYTES of the log;
        False when the row's output passed OUTPUT_LIMIT_BYTES."""
        try:
            chunk = os.read(self.out_read, 1 << 16)
        except OSError:
            return True
        self.row_output += len(chunk)
        self.log.write(chunk)
        return self.row_output <= OUTPUT_LIMIT_BYTES

    def send(self, line: bytes) -> bool:
        """Writes one request line; False when the caller has gone away."""
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self.req_write, view) :]
            return True
        except OSError:
            return False

    def receive(self, timeout_s: float) -> tuple[str | None, str]:
        """Waits for one reply line.

        Returns:
            (reply text, "") on success, or (None, reason) on timeout, exit or an oversized reply.
        """
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_REPLY_BYTES:
                return None, f"the reply exceeds {MAX_REPLY_BYTES} bytes"
            left = deadline - time.monotonic()
            if left <= 0:
                return None, f"timed out after {timeout_s:g} s (the row's timeout_s)"
            ready, _, _ = select.select([self.rep_read, self.out_read], [], [], min(left, WATCH_INTERVAL_S))
            if not ready and self.processes() > PROCESS_LIMIT:
                return None, f"started more than {PROCESS_LIMIT} processes (the process limit)"
            if self.out_read in ready and not self._drain():
                return None, f"wrote more than {OUTPUT_LIMIT_BYTES} bytes to stdout and stderr (the output limit)"
            if self.rep_read not in ready:
                continue
            chunk = os.read(self.rep_read, 1 << 16)
            if not chunk:
                code = self.proc.wait()
                if code == -signal.SIGXFSZ:
                    return None, f"wrote a file past the file size limit of {FILE_SIZE_LIMIT_BYTES} bytes"
                return None, f"the caller exited with code {code} before replying"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        if len(line) > MAX_REPLY_BYTES:
            return None, f"the reply exceeds {MAX_REPLY_BYTES} bytes"
        return line.decode("utf-8", "replace"), ""

    def stop(self) -> None:
        """Closes the request channel, gives the caller STOP_GRACE_S seconds, then kills its group
        and every other process it left (`end_descendants`)."""
        for fd in (self.req_write, self.rep_read, self.out_read):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        # What left the group (`setsid`, a double fork) is this process's too: none outlives its row.
        end_descendants()


# prctl(2) options, from linux/prctl.h.
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def seal_supervisor() -> str:
    """Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER), so a
    daemon production code starts (a double fork, `setsid`) is reparented to it and not to the
    sandbox's init, where `end_descendants` could not find it; and not dumpable (PR_SET_DUMPABLE
    0), so no process of the same user, the caller included, can ptrace it or write its memory
    through /proc/PID/mem. Returns "" when both hold, else why not (prctl(2) is Linux's)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for option, value in ((PR_SET_CHILD_SUBREAPER, 1), (PR_SET_DUMPABLE, 0)):
            if libc.prctl(option, value, 0, 0, 0) != 0:
                return f"prctl option {option} failed: {os.strerror(ctypes.get_errno())}"
    except (OSError, AttributeError) as exc:
        return f"prctl(2) is not available: {exc}"
    return ""


def proc_stats() -> list[tuple[int, list[bytes]]]:
    """(pid, the fields of /proc/PID/stat after the command name: state, ppid, pgrp, session, ...)
    of every process this one can see, per proc(5); a process that ends while it is read is left
    out, and an unreadable /proc gives none."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                found.append((int(name), f.read().rsplit(b")", 1)[1].split()))
        except (OSError, IndexError):
            continue
    return found


def children() -> list[int]:
    """The pids of this process's living children, read from /proc (a zombie's included)."""
    mine = str(os.getpid()).encode()
    return [pid for pid, fields in proc_stats() if len(fields) > 1 and fields[1] == mine]


def end_descendants() -> None:
    """Kills and reaps every process descended from this one, until none is left: each child is
    sent SIGKILL, and, this process being their subreaper (`seal_supervisor`), the children of each
    one that ends become its own, to be killed in the next round. Called before the observations
    are written, so that nothing production code started can rewrite them (docs/threat-model.md)."""
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def write_observations(path: str, document: dict[str, object]) -> None:
    """Writes `document` to `path` as a new file: whatever stands at `path` (a file production code
    wrote there, a link it left) is removed first, and the file is created exclusively, not
    following a link."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(document, ensure_ascii=True, separators=(",", ":")) + "\n")  # the C encoder


def record_packages(inputs: dict[str, object]) -> list[str]:
    """The packages whose functions the caller records as run (docs/design.md section 12): the
    inputs view's `production_packages` (the policy's), else the top-level package of each row's
    entry; sorted, without duplicates. `inputs` is the parsed inputs view.

    Raises:
        KeyError: when the view has no `rows` (`main` gets a view the pin check wrote).
    """
    given = inputs.get("production_packages")
    if isinstance(given, list) and all(isinstance(name, str) for name in given):
        return sorted(set(given))
    entries = {str(row.get("entry", "")) for row in inputs["rows"]}  # type: ignore[attr-defined]
    return sorted({entry.partition(":")[0].partition(".")[0] for entry in entries} - {""})


# The fields of an inputs-view row the caller gets (spec/views.py `input_row`, `reference_row`).
REQUEST_KEYS = (
    "id",
    "entry",
    "kind",
    "seed",
    "args",
    "repeat",
    "receiver",
    "build",
    "args_names",
    "project",
    "inverse",
    "over",
    "entries",
    "element",
    "style",
)


def requests(inputs: dict[str, object], generated: dict[str, object]) -> list[tuple[str, float, int, bytes]]:
    """Builds (id, timeout in seconds, memory limit in MiB, request line) per row, blob samples
    before generated ones; each request names the packages the caller records (`record_packages`)."""
    drawn = generated.get("rows", {})
    packages = record_packages(inputs)
    out = []
    for row in inputs["rows"]:  # type: ignore[attr-defined]
        request = {key: row[key] for key in REQUEST_KEYS if key in row}
        request["packages"] = packages
        request["samples"] = list(row["samples"]) + list(drawn.get(row["id"], []))  # type: ignore[attr-defined]
        line = json.dumps(request, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode() + b"\n"
        out.append((row["id"], float(row["timeout_s"]), int(row.get("memory_mib", DEFAULT_MEMORY_MIB)), line))
    return out


def _load_failed(reply: str) -> bool:
    """Whether a caller's reply (one JSON line) says the row's callables could not be loaded
    (`caller.call_row`'s `cannot load entry` error)."""
    try:
        error = json.loads(reply).get("error")
    except (ValueError, AttributeError, RecursionError):
        return False
    return isinstance(error, str) and error.startswith(LOAD_ERROR)


def observe(inputs: dict[str, object], generated: dict[str, object], log_fd: int) -> list[dict[str, str]]:
    """Runs every row; returns one `{"id", "reply"}` or `{"id", "error"}` entry per row, in order."""
    rows: list[dict[str, str]] = []
    caller: Caller | None = None
    log = Log(log_fd)
    try:
        for ident, timeout_s, memory_mib, line in requests(inputs, generated):
            if caller is not None and caller.memory_mib != memory_mib:
                caller.stop()  # another memory limit: a caller of its own
                caller = None
            if caller is None:
                caller = Caller(log, memory_mib)
            log.write(f"--- oracle-gate: row {ident}\n".encode())
            caller.start_row()
            reply, why = (None, "the caller closed its request channel")
            if caller.send(line):
                reply, why = caller.receive(timeout_s)
            if reply is None:
                rows.append({"id": ident, "error": why})
                caller.stop()
                caller = None
            else:
                rows.append({"id": ident, "reply": reply})
                if _load_failed(reply):
                    # A failed import can leave part of a package in sys.modules, which the next
                    # row would import as if whole: a fresh caller imports it anew (and fails alike).
                    caller.stop()
                    caller = None
    finally:
        if caller is not None:
            caller.stop()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the action; returns 0, or 1 when the inputs cannot be read."""
    parser = argparse.ArgumentParser(prog="observe")
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--generated", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="the hidden caller: production code's stdout and stderr, and this process's, go to /dev/null",
    )
    args = parser.parse_args(argv)
    if args.quiet:
        # Nothing of the hidden samples may reach Bazel's output or a log: the caller's own error
        # lines included. The log file stays empty.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
    try:
        with open(args.inputs, encoding="utf-8") as f:
            inputs = json.load(f)
        with open(args.generated, encoding="utf-8") as f:
            generated = json.load(f)
    except (OSError, ValueError) as exc:
        # The gate's error-line form (errors.error_line), written out: this side imports nothing of the gate.
        print(f"oracle-gate: [1] cannot read the inputs view: {exc}", file=sys.stderr)
        return 1
    why = seal_supervisor()
    if why:
        print(
            f"oracle-gate: [1] the supervisor cannot keep production code's processes in reach: {why}", file=sys.stderr
        )
        return 1
    os.close(os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    log_fd = os.open(os.devnull if args.quiet else args.log, os.O_WRONLY)
    try:
        rows = observe(inputs, generated, log_fd)
    finally:
        os.close(log_fd)
        end_descendants()
    write_observations(args.out, {"schema": OBSERVATIONS_SCHEMA, "salt": generated.get("salt", ""), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
