"""A small REAPI worker ("bot") for BuildGrid, run with BuildGrid's own Python.

This is test infrastructure for the engine in `engine.py`: it lets tests and a developer run
`bazel --remote_executor=...` against a real engine on one machine. It is not a production worker:
production users point `--config=remote` at their engine's real workers.

What it does, over the Remote Workers API (Bots service, v1test2) and the REAPI CAS:
1. Creates a bot session (capacity 1, `OSFamily=linux`), then long-polls UpdateBotSession for leases.
2. For each lease: reads the Action, its Command and input root from CAS, writes the input root into
   a fresh, empty temporary directory (files with their executable bit, directories, symlinks) and
   runs the Command there, locked down (see "Lockdown" below): exactly its arguments and environment
   variables, in its working directory, stdout and stderr captured. Parent directories of outputs
   are created first.
3. Uploads the outputs that exist (`output_files`, `output_directories`, or REAPI 2.1 `output_paths`;
   a missing output is left out) and stdout/stderr, and completes the lease with an ActionResult.
   While the action runs it heartbeats the session, so BuildGrid does not presume it dead.
4. Exits 0 on SIGTERM or SIGINT, killing a running action and everything it started.

Lockdown: every action runs under bubblewrap (`bwrap`) in an empty root file system that holds only
the system directories (read-only `/usr` and the host's `/bin`, `/lib`, ... entries beside it), a
private `/proc`, a minimal `/dev`, an empty `/tmp`, and the input root, read-write at `SANDBOX_ROOT`.
Nothing else of the host (`/etc`, `/root`, `/home`, `/work`, the host's `/tmp`, Bazel's output
base, other leases' directories) exists inside. All namespaces are unshared (no network, own pids),
all capabilities are dropped, and the environment is exactly the Command's. Outputs are read on the
host afterwards without following symlinks to anything the action could not see. Without a working
`bwrap` the worker refuses to start; there is no mode without it. `lockdown_description()` names the
mechanism and its version; the worker logs it once at start (its `sealing:` line).

Usage: python worker.py --target grpc://127.0.0.1:PORT --work-dir DIR [--ready-file FILE]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import functools
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

try:
    import grpc
    from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
    from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
    from buildgrid._protos.google.bytestream import bytestream_pb2, bytestream_pb2_grpc
    from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc, worker_pb2
    from buildgrid._protos.google.rpc import code_pb2, status_pb2
except ModuleNotFoundError as _missing:  # Any other Python may still import the lockdown helpers below.
    _BUILDGRID_MISSING: ModuleNotFoundError | None = _missing
else:
    _BUILDGRID_MISSING = None

LOG = logging.getLogger("reapi-worker")

BATCH_BYTES = 1 << 20  # Blobs up to this size go through Batch{Read,Update}Blobs, larger ones via ByteStream.
BATCH_COUNT = 500
HEARTBEAT_S = 3.0
# CAS calls refused because the server is at its concurrent-RPC limit, or briefly unreachable, were
# not handled and are sent again: up to CAS_ATTEMPTS times, CAS_BACKOFF_S seconds apart, doubling.
CAS_ATTEMPTS = 8
CAS_BACKOFF_S = 0.25

# Lockdown. Where the input root appears inside the sandbox: fixed, so that paths an action writes
# into its outputs do not depend on the lease.
SANDBOX_ROOT = "/b/r"
# Entries of the host's / that hold programs and libraries. A directory is bound read-only at the
# same path; a symlink (on a usr-merged system such as Debian 12, /bin -> usr/bin, /lib -> usr/lib,
# /lib64 -> usr/lib64, /sbin -> usr/sbin) is recreated as the same symlink. Nothing from /etc is
# needed: the dynamic loader finds libraries in its built-in directories without /etc/ld.so.cache,
# and /bin/sh and /usr/bin/python3 start without /etc/passwd or /etc/nsswitch.conf (no HOME is set,
# so the Python tilde expansion leaves "~" as it is).
SYSTEM_ENTRIES = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Runs the command inside the sandbox. bwrap always sets PWD to the --chdir directory after applying
# --clearenv and --setenv; `env` restores the Command's own PWD, or removes it, and then execs the
# command (exit 127 if it is not found, 126 if it cannot be executed, as a shell reports).
ENV_PROGRAM = "/usr/bin/env"
PROBE_TIMEOUT_S = 30.0
PR_SET_CHILD_SUBREAPER = 36  # prctl option, <linux/prctl.h>.


class LockdownUnavailable(RuntimeError):
    """bwrap is missing or cannot create a sandbox on this machine; the message is one line."""


class SandboxError(RuntimeError):
    """bwrap failed to set up the sandbox for one action; the command did not run."""


def find_bwrap(environ: Mapping[str, str] = os.environ) -> str:
    """The bwrap executable on `environ["PATH"]`, symlinks resolved (on a usr-merged system /bin/bwrap
    is /usr/bin/bwrap); raises LockdownUnavailable if there is none."""
    path = shutil.which("bwrap", path=environ.get("PATH", os.defpath))
    if path is None:
        raise LockdownUnavailable("bwrap not found on PATH; install bubblewrap (tools/setup.sh does)")
    return os.path.realpath(path)


def system_entries(host_root: Path = Path("/")) -> list[tuple[str, str | None]]:
    """The `SYSTEM_ENTRIES` that exist on this host, as (name, symlink target, or None for a
    directory); `usr` must be a directory."""
    entries: list[tuple[str, str | None]] = []
    for name in SYSTEM_ENTRIES:
        host = host_root / name
        if host.is_symlink():
            entries.append((name, os.readlink(host)))
        elif host.is_dir():
            entries.append((name, None))
    if ("usr", None) not in entries:
        raise LockdownUnavailable(f"{host_root / 'usr'} is not a directory")
    return entries


def system_directories() -> list[str]:
    """Host directories the sandbox shows read-only at the same path, e.g. ["/usr"]."""
    return [f"/{name}" for name, target in system_entries() if target is None]


def sandbox_argv(
    bwrap: str,
    input_root: Path,
    working_directory: str,
    environment: Mapping[str, str],
    arguments: Sequence[str],
    status_fd: int | None = None,
) -> list[str]:
    """The bwrap command line that runs `arguments` locked down, with `input_root` as its only data.

    Args:
        bwrap: The bwrap executable (`find_bwrap()`).
        input_root: Host directory bound read-write at `SANDBOX_ROOT`.
        working_directory: The Command's working directory, relative to the input root (already
            checked by `inside`).
        environment: Exactly the variables the command gets.
        arguments: The Command's arguments; the first is looked up on `environment["PATH"]`
            inside the sandbox.
        status_fd: If set, bwrap writes JSON status lines to this descriptor (`--json-status-fd`).

    Raises:
        ValueError: No arguments, a program name containing "=" (`env` would take it for a
            variable), or a variable name that is empty or contains "=".
    """
    if not arguments:
        raise ValueError("the Command has no arguments")
    if "=" in arguments[0]:
        raise ValueError(f"program names containing '=' are not supported: {arguments[0]!r}")
    for name in environment:
        if not name or "=" in name or "\0" in name:
            raise ValueError(f"invalid environment variable name: {name!r}")
    argv = [bwrap]
    for name, target in system_entries():
        argv += ["--symlink", target, f"/{name}"] if target is not None else ["--ro-bind", f"/{name}", f"/{name}"]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--bind",
        str(input_root),
        SANDBOX_ROOT,
        "--chdir",
        str(PurePosixPath(SANDBOX_ROOT, *PurePosixPath(working_directory).parts)),
        # Namespaces: user (where possible), mount, pid, network (loopback only), ipc, uts, cgroup.
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    if status_fd is not None:
        argv += ["--json-status-fd", str(status_fd)]
    argv.append("--clearenv")
    for name, value in environment.items():
        argv += ["--setenv", name, value]
    pwd = ["--", f"PWD={environment['PWD']}"] if "PWD" in environment else ["-u", "PWD", "--"]
    return [*argv, "--", ENV_PROGRAM, *pwd, *arguments]


@functools.cache
def _bwrap_version(bwrap: str) -> str:
    try:
        proc = subprocess.run(
            [bwrap, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LockdownUnavailable(f"{bwrap} --version failed: {e}") from e
    version = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
    if not version:
        raise LockdownUnavailable(f"{bwrap} --version exited with {proc.returncode}")
    return version


def lockdown_description() -> str:
    """How actions are locked down, for reports: mechanism, version (`bwrap --version`), path and layout.

    For example "bubblewrap 0.8.0 (/usr/bin/bwrap): empty root with read-only /usr, /bin -> usr/bin, ...;
    private /proc, minimal /dev, empty /tmp; input root read-write at /b/r; ...".

    Raises:
        LockdownUnavailable: bwrap is not on PATH or does not report a version.
    """
    bwrap = find_bwrap()
    entries = system_entries()
    layout = ", ".join(f"/{name}" if target is None else f"/{name} -> {target}" for name, target in entries)
    return (
        f"{_bwrap_version(bwrap)} ({bwrap}): empty root with read-only {layout}; private /proc, "
        f"minimal /dev, empty /tmp; input root read-write at {SANDBOX_ROOT}; all namespaces unshared "
        "(no network), all capabilities dropped, only the Command's environment variables"
    )


def check_lockdown(bwrap: str) -> None:
    """Runs one trivial command locked down (in a temporary input root) and checks that it ran there.
    Call `become_subreaper` first: the probe's sandbox is reaped like an action's.

    Raises:
        LockdownUnavailable: The sandbox could not be created (e.g. no user namespaces), with
            bwrap's first error line.
    """
    with tempfile.TemporaryDirectory(prefix="reapi-worker-probe-") as tmp:
        root = Path(tmp)
        status_read, status_write = os.pipe()
        try:
            argv = sandbox_argv(bwrap, root, "", {}, ["/bin/sh", "-c", ": > probe; test ! -e /etc"], status_write)
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                env={},
                pass_fds=(status_write,),
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
            reap_sandbox(read_status(status_read).get("child-pid"))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise LockdownUnavailable(f"bwrap sandbox probe failed: {e}") from e
        finally:
            os.close(status_read)
            os.close(status_write)
        if proc.returncode != 0 or not (root / "probe").is_file():
            first = (proc.stderr.strip().splitlines() or ["no error output"])[0]
            raise LockdownUnavailable(f"bwrap cannot create a sandbox here (exit {proc.returncode}): {first}")


def become_subreaper() -> None:
    """Makes this process adopt its orphaned descendants (PR_SET_CHILD_SUBREAPER), so that a
    sandbox's pid 1, which may outlive bwrap for a moment, becomes a child it can kill and reap."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise LockdownUnavailable(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")


def read_status(fd: int) -> dict[str, int]:
    """What bwrap wrote to its `--json-status-fd`, merged: `child-pid` (host pid of the sandbox's
    pid 1) once the sandbox exists, and `exit-code` once the command, started, has exited (absent
    if setup or exec failed). Reads without blocking; call it after bwrap has exited."""
    os.set_blocking(fd, False)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    merged: dict[str, object] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            merged.update(json.loads(line))
        except (ValueError, TypeError):
            continue
    return {k: v for k, v in merged.items() if k in ("child-pid", "exit-code") and isinstance(v, int)}


def reap_sandbox(init_pid: int | None) -> None:
    """Leaves nothing of a sandbox running once bwrap has exited: kills its pid 1 (the kernel then
    kills every process in its pid namespace) and reaps it.

    bwrap exits as soon as the command has; the sandbox's pid 1 may still be waiting for processes
    the command left behind, and is then reparented to this process (`become_subreaper`). While it
    is an unreaped child of ours its pid cannot be reused, so the kill is safe. If it is not our
    child, bwrap reaped it, and the namespace is gone already.
    """
    if init_pid is None:
        return
    try:
        os.waitid(os.P_PID, init_pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return
    os.kill(init_pid, signal.SIGKILL)
    os.waitpid(init_pid, 0)


def resolves_within(path: Path, directories: Iterable[str]) -> bool:
    """Whether `path`, with every symlink resolved on the host, is one of `directories` (absolute,
    themselves resolved) or inside one."""
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in directories)


def digest_of(data: bytes) -> re_pb2.Digest:
    """The REAPI SHA-256 digest of `data` (hash hex, size in bytes)."""
    return re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


def _transient(error: grpc.RpcError) -> bool:
    """True for the status codes of a call the server did not handle (safe to send again)."""
    return error.code() in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)


def with_retries(
    attempt: Callable[[], object],
    what: str,
    attempts: int = CAS_ATTEMPTS,
    backoff_s: float = CAS_BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
):  # type: ignore[no-untyped-def]
    """Returns `attempt()`, calling it again while it raises a transient grpc.RpcError (see
    `_transient`), at most `attempts` times, waiting `backoff_s` seconds, doubled each time.

    Raises:
        grpc.RpcError: A non-transient error at once, or the last transient one.
    """
    for n in range(attempts):
        try:
            return attempt()
        except grpc.RpcError as e:
            if not _transient(e) or n == attempts - 1:
                raise
            LOG.info("%s: %s (%s); attempt %d of %d", what, e.code().name, e.details(), n + 2, attempts)
            sleep(backoff_s * (2**n))
    raise AssertionError("unreachable")


class Cas:
    """Reads and writes blobs of one CAS instance. Every call is retried while the server refuses
    it as busy or unreachable (`with_retries`)."""

    def __init__(self, channel: grpc.Channel, instance: str) -> None:
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.bytestream = bytestream_pb2_grpc.ByteStreamStub(channel)
        self.instance = instance

    def _resource(self, *parts: str) -> str:
        return "/".join(p for p in (self.instance, *parts) if p)

    def read(self, digests: Iterable[re_pb2.Digest]) -> dict[str, bytes]:
        """Fetches blobs, keyed by hash; raises grpc.RpcError or KeyError if one is missing."""
        unique = {d.hash: d for d in digests}
        out = {h: b"" for h, d in unique.items() if d.size_bytes == 0}
        small = [d for d in unique.values() if 0 < d.size_bytes <= BATCH_BYTES]
        for d in unique.values():
            if d.size_bytes > BATCH_BYTES:
                name = self._resource("blobs", d.hash, str(d.size_bytes))
                request = bytestream_pb2.ReadRequest(resource_name=name)
                out[d.hash] = with_retries(
                    lambda request=request: b"".join(r.data for r in self.bytestream.Read(request)), f"read {d.hash}"
                )
        for batch in _batches(small):
            batch_request = re_pb2.BatchReadBlobsRequest(instance_name=self.instance, digests=batch)
            reply = with_retries(
                lambda batch_request=batch_request: self.cas.BatchReadBlobs(batch_request), "BatchReadBlobs"
            )
            for r in reply.responses:
                if r.status.code != code_pb2.OK:
                    raise KeyError(f"blob {r.digest.hash}/{r.digest.size_bytes}: {r.status.message}")
                out[r.digest.hash] = r.data
        return out

    def write(self, blobs: dict[str, bytes]) -> None:
        """Uploads blobs (keyed by hash) that the CAS does not have yet."""
        digests = [re_pb2.Digest(hash=h, size_bytes=len(b)) for h, b in blobs.items()]
        find = re_pb2.FindMissingBlobsRequest(instance_name=self.instance, blob_digests=digests)
        missing = with_retries(lambda: self.cas.FindMissingBlobs(find), "FindMissingBlobs").missing_blob_digests
        small = [d for d in missing if d.size_bytes <= BATCH_BYTES]
        for batch in _batches(small):
            update = re_pb2.BatchUpdateBlobsRequest(
                instance_name=self.instance,
                requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=d, data=blobs[d.hash]) for d in batch],
            )
            reply = with_retries(lambda update=update: self.cas.BatchUpdateBlobs(update), "BatchUpdateBlobs")
            for r in reply.responses:
                if r.status.code != code_pb2.OK:
                    raise RuntimeError(f"upload of {r.digest.hash}: {r.status.message}")
        for d in missing:
            if d.size_bytes > BATCH_BYTES:
                with_retries(functools.partial(self._upload, d, blobs[d.hash]), f"write {d.hash}")

    def _upload(self, d: re_pb2.Digest, data: bytes) -> None:
        """One ByteStream upload of `data`, under a fresh upload id (so a retry starts over)."""
        name = self._resource("uploads", str(uuid.uuid4()), "blobs", d.hash, str(d.size_bytes))
        chunks = (
            bytestream_pb2.WriteRequest(
                resource_name=name if off == 0 else "",
                write_offset=off,
                data=data[off : off + BATCH_BYTES],
                finish_write=off + BATCH_BYTES >= len(data),
            )
            for off in range(0, len(data), BATCH_BYTES)
        )
        self.bytestream.Write(chunks)


def _batches(digests: Sequence[re_pb2.Digest]) -> Iterable[list[re_pb2.Digest]]:
    batch: list[re_pb2.Digest] = []
    size = 0
    for d in digests:
        if batch and (size + d.size_bytes > BATCH_BYTES or len(batch) >= BATCH_COUNT):
            yield batch
            batch, size = [], 0
        batch.append(d)
        size += d.size_bytes
    if batch:
        yield batch


def materialise(cas: Cas, root_digest: re_pb2.Digest, dest: Path) -> None:
    """Writes the Directory tree `root_digest` into the existing empty directory `dest`."""
    directories: dict[str, re_pb2.Directory] = {}
    level = [root_digest]
    while level:  # Fetch the tree breadth first, one batch per level.
        for h, data in cas.read(d for d in level if d.hash not in directories).items():
            directories[h] = re_pb2.Directory.FromString(data)
        level = [n.digest for d in level for n in directories[d.hash].directories]
    files = cas.read(f.digest for d in directories.values() for f in d.files)

    def write(digest: re_pb2.Digest, path: Path) -> None:
        node = directories[digest.hash]
        for f in node.files:
            _safe_name(f.name)
            (path / f.name).write_bytes(files[f.digest.hash])
            os.chmod(path / f.name, 0o755 if f.is_executable else 0o644)
        for s in node.symlinks:
            _safe_name(s.name)
            os.symlink(s.target, path / s.name)
        for d in node.directories:
            _safe_name(d.name)
            (path / d.name).mkdir()
            write(d.digest, path / d.name)

    write(root_digest, dest)


def _safe_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"invalid path component in input root: {name!r}")


def inside(root: Path, relative: str) -> Path:
    """`root/relative`, refusing absolute paths and `..` components (outputs and working directory)."""
    parts = Path(relative).parts
    if Path(relative).is_absolute() or ".." in parts:
        raise ValueError(f"path escapes the input root: {relative!r}")
    return root.joinpath(*parts)


def _executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR)


def tree_of(path: Path, blobs: dict[str, bytes], follow: Callable[[Path], bool] | None = None) -> re_pb2.Tree:
    """A REAPI Tree of directory `path`, adding every file and Directory blob to `blobs`.

    Symlinks to files are stored as files, unless `follow` is given and returns False for the
    symlink; other symlinks are stored as symlinks.
    """
    children: dict[str, re_pb2.Directory] = {}  # By hash.

    def directory(p: Path) -> re_pb2.Directory:
        node = re_pb2.Directory()
        for entry in sorted(os.scandir(p), key=lambda e: e.name):
            if follow is not None and entry.is_symlink() and not follow(Path(entry.path)):
                node.symlinks.add(name=entry.name, target=os.readlink(entry.path))
            elif entry.is_file():  # Follows symlinks.
                data = Path(entry.path).read_bytes()
                d = digest_of(data)
                blobs[d.hash] = data
                node.files.add(name=entry.name, digest=d, is_executable=_executable(Path(entry.path)))
            elif entry.is_dir(follow_symlinks=False):
                child = directory(Path(entry.path))
                data = child.SerializeToString(deterministic=True)
                d = digest_of(data)
                children[d.hash] = child
                blobs[d.hash] = data
                node.directories.add(name=entry.name, digest=d)
            elif entry.is_symlink():
                node.symlinks.add(name=entry.name, target=os.readlink(entry.path))
        return node

    root = directory(path)
    return re_pb2.Tree(root=root, children=list(children.values()))


def collect_outputs(
    command: re_pb2.Command,
    cwd: Path,
    result: re_pb2.ActionResult,
    blobs: dict[str, bytes],
    visible: Sequence[str] | None = None,
) -> None:
    """Adds the outputs that exist under `cwd` to `result` and their contents to `blobs`.

    Args:
        command: Names the outputs, relative to `cwd`.
        cwd: The Command's working directory on the host.
        result: Gets output files, directories and symlinks.
        blobs: Gets their contents, keyed by hash.
        visible: If given, the host directories (resolved) whose contents the action could read:
            the input root and the read-only system directories. A symlink that resolves anywhere
            else is reported as a symlink, never read; an output under a directory that resolves
            elsewhere is left out.
    """
    paths: list[tuple[str, bool | None]]  # (path, True: directory, False: file, None: either)
    if command.output_paths:  # REAPI 2.1: one list, files or directories.
        paths = [(p, None) for p in command.output_paths]
    else:
        paths = [(p, False) for p in command.output_files] + [(p, True) for p in command.output_directories]
    follow = None if visible is None else (lambda p: resolves_within(p, visible))
    for relative, want_dir in paths:
        path = inside(cwd, relative)
        if follow is not None and not follow(path):
            if not follow(path.parent):
                LOG.warning("output %s is under a directory outside the input root; left out", relative)
            elif path.is_symlink():
                symlinks = {
                    True: result.output_directory_symlinks,
                    False: result.output_file_symlinks,
                    None: result.output_symlinks,
                }[want_dir]
                symlinks.add(path=relative, target=os.readlink(path))
            else:
                LOG.info("output %s not produced; left out", relative)
        elif path.is_file() and want_dir is not True:
            data = path.read_bytes()
            d = digest_of(data)
            blobs[d.hash] = data
            result.output_files.add(path=relative, digest=d, is_executable=_executable(path))
        elif path.is_dir() and want_dir is not False:
            data = tree_of(path, blobs, follow).SerializeToString(deterministic=True)
            d = digest_of(data)
            blobs[d.hash] = data
            result.output_directories.add(path=relative, tree_digest=d)
        else:
            LOG.info("output %s not produced; left out", relative)


def execute(cas: Cas, action: re_pb2.Action, scratch: Path, cancel: threading.Event, bwrap: str) -> re_pb2.ActionResult:
    """Runs one Action locked down, in a fresh input root under `scratch`, and returns its ActionResult.

    When it returns or raises, every process of the action is gone (`reap_sandbox`; this process
    must be a child subreaper, see `become_subreaper`).

    Args:
        cas: Where inputs come from and outputs go.
        action: The Action (command digest, input root digest, timeout).
        scratch: An empty directory owned by this call; it holds `root/`, `stdout`, `stderr`.
        cancel: Set to kill the action.
        bwrap: The bwrap executable (`find_bwrap()`).

    Raises:
        TimeoutError: The command ran past `action.timeout`.
        SandboxError: bwrap could not set up the sandbox.
        ValueError, grpc.RpcError, KeyError: Bad or missing inputs.
    """
    command = re_pb2.Command.FromString(cas.read([action.command_digest])[action.command_digest.hash])
    root = scratch / "root"
    cwd, real_root = _input_root(cas, action, command, root)
    env = {v.name: v.value for v in command.environment_variables}
    timeout = action.timeout.ToTimedelta().total_seconds() if action.HasField("timeout") else None
    result = re_pb2.ActionResult()
    result.execution_metadata.worker = socket.gethostname()
    result.execution_metadata.execution_start_timestamp.GetCurrentTime()
    status, returncode, timed_out = _run_sandboxed(bwrap, root, command, env, scratch, cancel, timeout)
    if timed_out:
        raise TimeoutError(f"action timed out after {timeout:.0f} s")
    if "exit-code" in status:  # The command's status; 128 + N if signal N killed it, as a shell reports.
        result.exit_code = status["exit-code"]
    elif cancel.is_set():
        result.exit_code = 128 + signal.SIGKILL
    else:
        raise SandboxError(
            f"bwrap exited with {returncode} before running the command: {_last_line(scratch / 'stderr')}"
        )
    result.execution_metadata.execution_completed_timestamp.GetCurrentTime()
    blobs: dict[str, bytes] = {}
    collect_outputs(command, cwd, result, blobs, visible=[real_root, *map(os.path.realpath, system_directories())])
    for name in ("stdout", "stderr"):
        data = (scratch / name).read_bytes()
        d = digest_of(data)
        blobs[d.hash] = data
        getattr(result, f"{name}_digest").CopyFrom(d)
    cas.write(blobs)
    return result


def _input_root(cas: Cas, action: re_pb2.Action, command: re_pb2.Command, root: Path) -> tuple[Path, str]:
    """Writes the action's input root into `root` (created here) with the working directory and
    the outputs' parent directories; returns the working directory and `root` resolved.

    Raises:
        ValueError: The working directory or an output's directory leaves the input root.
    """
    root.mkdir()
    materialise(cas, action.input_root_digest, root)
    real_root = os.path.realpath(root)
    # Input symlinks must not send these host-side mkdirs (or the working directory) out of the root.
    cwd = inside(root, command.working_directory)
    if not resolves_within(cwd, [real_root]):
        raise ValueError(f"working directory leaves the input root: {command.working_directory!r}")
    cwd.mkdir(parents=True, exist_ok=True)
    outputs = list(command.output_paths) or [*command.output_files, *command.output_directories]
    for relative in outputs:
        parent = inside(cwd, relative).parent
        if not resolves_within(parent, [real_root]):
            raise ValueError(f"output directory leaves the input root: {relative!r}")
        parent.mkdir(parents=True, exist_ok=True)
    return cwd, real_root


def _run_sandboxed(
    bwrap: str,
    root: Path,
    command: re_pb2.Command,
    env: dict[str, str],
    scratch: Path,
    cancel: threading.Event,
    timeout: float | None,
) -> tuple[dict[str, int], int, bool]:
    """Runs `command` under bwrap on the input root `root`, its output in `scratch`'s `stdout` and
    `stderr`, until it ends, `cancel` is set or `timeout` seconds pass; returns what bwrap reported
    (`read_status`), bwrap's exit code and whether the timeout ended it. Every process of the
    sandbox is gone when it returns (`reap_sandbox`)."""
    status_read, status_write = os.pipe()
    try:
        argv = sandbox_argv(bwrap, root, command.working_directory, env, list(command.arguments), status_write)
        with open(scratch / "stdout", "wb") as out, open(scratch / "stderr", "wb") as err:
            # The command's own session is set up by bwrap (--new-session); this one holds bwrap, so a
            # kill of its process group reaches the monitoring bwrap process. bwrap gets no
            # environment: the sandbox's is built from --setenv alone.
            proc = subprocess.Popen(
                argv,
                cwd=scratch,
                env={},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=(status_write,),
            )
        os.close(status_write)
        status_write = -1
        timed_out = _wait(proc, cancel, timeout)
        status = read_status(status_read)
        reap_sandbox(status.get("child-pid"))
    finally:
        os.close(status_read)
        if status_write != -1:
            os.close(status_write)
    return status, proc.returncode, timed_out


def _wait(proc: subprocess.Popen[bytes], cancel: threading.Event, timeout: float | None) -> bool:
    """Waits for bwrap (`proc`) to exit, killing it when `cancel` is set or `timeout` seconds
    pass; returns whether the timeout killed it."""
    started = time.monotonic()
    timed_out = False
    while proc.poll() is None:
        if cancel.is_set() or (timeout and time.monotonic() - started > timeout):
            timed_out = not cancel.is_set()
            # bwrap dies; --die-with-parent then kills the sandbox's pid 1, which takes the
            # whole pid namespace with it. reap_sandbox (in _run_sandboxed) waits for that.
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait()
    return timed_out


def _last_line(path: Path) -> str:
    lines = path.read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no error output"


def run_lease(cas: Cas, lease: bots_pb2.Lease, work_dir: Path, cancel: threading.Event, bwrap: str) -> None:
    """Executes a lease and fills in its state, status and result (an ActionResult) in place."""
    scratch = Path(tempfile.mkdtemp(prefix="lease-", dir=work_dir))
    try:
        if lease.payload.Is(re_pb2.Action.DESCRIPTOR):
            action = re_pb2.Action()
            lease.payload.Unpack(action)
        else:
            digest = re_pb2.Digest()
            lease.payload.Unpack(digest)
            action = re_pb2.Action.FromString(cas.read([digest])[digest.hash])
        result = execute(cas, action, scratch, cancel, bwrap)
        lease.result.Pack(result)
        lease.status.CopyFrom(status_pb2.Status(code=code_pb2.OK))
        LOG.info("lease %s: exit code %d", lease.id, result.exit_code)
    except TimeoutError as e:
        lease.status.CopyFrom(status_pb2.Status(code=code_pb2.DEADLINE_EXCEEDED, message=str(e)))
    except (grpc.RpcError, KeyError, ValueError, OSError, RuntimeError) as e:
        LOG.exception("lease %s failed", lease.id)
        lease.status.CopyFrom(status_pb2.Status(code=code_pb2.FAILED_PRECONDITION, message=f"worker: {e!r}"))
    finally:
        shutil.rmtree(scratch, onerror=_make_writable_and_retry)
    lease.state = bots_pb2.LeaseState.COMPLETED


def _make_writable_and_retry(func, path, _exc_info) -> None:  # type: ignore[no-untyped-def]
    os.chmod(os.path.dirname(path), stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
    func(path)


def call(method, request, timeout: float, stop: threading.Event):  # type: ignore[no-untyped-def]
    """A unary gRPC call that gives up (returns None) once `stop` is set, and retries (every 0.5 s)
    while the server is unreachable, the call times out (a long poll that found no work), or the
    server is at its concurrent-RPC limit (RESOURCE_EXHAUSTED: the request was not handled, so
    sending it again is safe; taking it for a rejected session would drop a completed lease)."""
    while not stop.is_set():
        future = method.future(request, timeout=timeout)
        while not future.done():
            if stop.wait(0.1):
                future.cancel()
                return None
        try:
            return future.result()
        except grpc.RpcError as e:
            if e.code() not in (
                grpc.StatusCode.UNAVAILABLE,
                grpc.StatusCode.DEADLINE_EXCEEDED,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
            ):
                raise
            LOG.debug("%s: %s; retrying", e.code().name, e.details())
            stop.wait(0.5)
    return None


class Bot:
    """One bot session. Only the main thread makes Bots calls and touches `session`."""

    def __init__(self, channel: grpc.Channel, instance: str, poll_s: float, stop: threading.Event) -> None:
        self.stub = bots_pb2_grpc.BotsStub(channel)
        self.instance = instance
        self.poll_s = poll_s  # Long-poll deadline, seconds; the server waits 80 % of it for work.
        self.stop = stop
        self.session = bots_pb2.BotSession(
            bot_id=f"{socket.gethostname()}-{os.getpid()}",
            status=bots_pb2.BotStatus.OK,
            worker=worker_pb2.Worker(
                devices=[
                    worker_pb2.Device(
                        handle=socket.gethostname(),
                        properties=[worker_pb2.Device.Property(key="OSFamily", value="linux")],
                    )
                ]
            ),
        )

    def create(self) -> bool:
        """CreateBotSession; False if stopped first."""
        request = bots_pb2.CreateBotSessionRequest(parent=self.instance, bot_session=self.session)
        session = call(self.stub.CreateBotSession, request, self.poll_s, self.stop)
        if session is not None:
            self.session = session
            LOG.info("bot session %s", session.name)
        return session is not None

    def update(self) -> bool:
        """UpdateBotSession with the current leases; the reply may add leases. False if stopped first.

        If the server rejects the session (e.g. it expired while this process was stalled), starts
        a new one; the leases held are dropped and BuildGrid requeues their jobs.
        """
        request = bots_pb2.UpdateBotSessionRequest(name=self.session.name, bot_session=self.session)
        try:
            session = call(self.stub.UpdateBotSession, request, self.poll_s, self.stop)
        except grpc.RpcError as e:
            LOG.warning(
                "bot session %s rejected (%s: %s); starting a new one", self.session.name, e.code().name, e.details()
            )
            del self.session.leases[:]
            self.session.ClearField("name")
            return self.create()
        if session is not None:
            self.session = session
        return session is not None

    def lease_ids(self) -> set[str]:
        return {lease.id for lease in self.session.leases}

    def complete(self, lease: bots_pb2.Lease) -> None:
        """Puts a completed lease into the session in place of the held one, for the next update."""
        held = [x for x in self.session.leases if x.id != lease.id]
        del self.session.leases[:]
        self.session.leases.extend([*held, lease])


def serve(
    target: str,
    instance: str,
    work_dir: Path,
    ready_file: Path | None,
    keepalive_s: float,
    stop: threading.Event,
    bwrap: str,
) -> None:
    """Takes and runs leases, one at a time, until `stop` is set.

    Args:
        target: `grpc://HOST:PORT` (or `HOST:PORT`) of the Bots, CAS and ByteStream services.
        instance: REAPI instance name.
        work_dir: Existing directory for per-lease scratch directories.
        ready_file: Written with the bot id once the server has answered GetCapabilities.
        keepalive_s: The server's bot keepalive timeout, seconds; heartbeats and polls stay within it.
        stop: Set by the signal handler.
        bwrap: The bwrap executable that locks each action down (`find_bwrap()`, checked by `check_lockdown`).
    """
    channel = grpc.insecure_channel(target.removeprefix("grpc://"))
    cas = Cas(channel, instance)
    bot = Bot(channel, instance, poll_s=min(10.0, keepalive_s * 0.7), stop=stop)
    capabilities = re_grpc.CapabilitiesStub(channel).GetCapabilities
    if call(capabilities, re_pb2.GetCapabilitiesRequest(instance_name=instance), 5.0, stop) is None:
        return
    if ready_file:
        ready_file.write_text(bot.session.bot_id)
    if not bot.create():
        return
    # bwrap's --die-with-parent is tied to the thread that started it: this pool's one thread
    # lives until the pool shuts down, after the last action has been reaped.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        while not stop.is_set():
            for held in bot.session.leases:
                if held.state not in (bots_pb2.LeaseState.PENDING, bots_pb2.LeaseState.ACTIVE):
                    continue
                held.state = bots_pb2.LeaseState.ACTIVE
                lease = bots_pb2.Lease()  # The executing thread's own copy.
                lease.CopyFrom(held)
                LOG.info("lease %s started", lease.id)
                cancel = threading.Event()
                done = pool.submit(run_lease, cas, lease, work_dir, cancel, bwrap)
                while True:  # Heartbeat; stopping, or the server withdrawing the lease, kills the action.
                    try:
                        done.result(timeout=HEARTBEAT_S)
                        break
                    except concurrent.futures.TimeoutError:
                        if not cancel.is_set() and (
                            stop.is_set() or not bot.update() or lease.id not in bot.lease_ids()
                        ):
                            cancel.set()
                if cancel.is_set():
                    LOG.info("lease %s abandoned", lease.id)
                else:
                    bot.complete(lease)
                break  # Capacity 1: report it before looking at the session again.
            if not bot.update():
                break
    channel.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="grpc://HOST:PORT of the Bots and CAS services")
    parser.add_argument("--instance", default="", help="REAPI instance name (default: empty)")
    parser.add_argument("--work-dir", type=Path, required=True, help="where per-lease input roots are created")
    parser.add_argument("--ready-file", type=Path, help="written once the server has answered")
    parser.add_argument("--keepalive", type=float, default=15.0, help="server's bot keepalive timeout, seconds")
    args = parser.parse_args(argv)
    if _BUILDGRID_MISSING is not None:
        print(f"reapi worker: run it with BuildGrid's Python ({_BUILDGRID_MISSING})", file=sys.stderr)
        return 2
    try:  # Never run an action without the lockdown: no bwrap, or no working sandbox, no worker.
        bwrap = find_bwrap()
        become_subreaper()
        check_lockdown(bwrap)
        lockdown = lockdown_description()
    except LockdownUnavailable as e:
        print(f"reapi worker: cannot lock actions down, not starting: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    LOG.info("sealing: %s", lockdown)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    serve(args.target, args.instance, args.work_dir, args.ready_file, args.keepalive, stop, bwrap)
    LOG.info("stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
