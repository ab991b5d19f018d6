"""A small REAPI worker ("bot") for BuildGrid, run with BuildGrid's own Python.

This is test infrastructure for the engine in `engine.py`: it lets tests and a developer run
`bazel --remote_executor=...` against a real engine on one machine. It is not a production worker
and no sandbox: production users point `--config=remote` at their engine's real workers.

What it does, over the Remote Workers API (Bots service, v1test2) and the REAPI CAS:
1. Creates a bot session (capacity 1, `OSFamily=linux`), then long-polls UpdateBotSession for leases.
2. For each lease: reads the Action, its Command and input root from CAS, writes the input root into
   a fresh, empty temporary directory (files with their executable bit, directories, symlinks) and
   runs the Command there: exactly its arguments and environment variables, in its working
   directory, stdout and stderr captured. Parent directories of outputs are created first.
3. Uploads the outputs that exist (`output_files`, `output_directories`, or REAPI 2.1 `output_paths`;
   a missing output is left out) and stdout/stderr, and completes the lease with an ActionResult.
   While the action runs it heartbeats the session, so BuildGrid does not presume it dead.
4. Exits 0 on SIGTERM or SIGINT, killing a running action's process group.

Usage: python worker.py --target grpc://127.0.0.1:PORT --work-dir DIR [--ready-file FILE]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.bytestream import bytestream_pb2, bytestream_pb2_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc, worker_pb2
from buildgrid._protos.google.rpc import code_pb2, status_pb2

LOG = logging.getLogger("reapi-worker")

BATCH_BYTES = 1 << 20  # Blobs up to this size go through Batch{Read,Update}Blobs, larger ones via ByteStream.
BATCH_COUNT = 500
HEARTBEAT_S = 3.0


def digest_of(data: bytes) -> re_pb2.Digest:
    """The REAPI SHA-256 digest of `data` (hash hex, size in bytes)."""
    return re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


class Cas:
    """Reads and writes blobs of one CAS instance."""

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
                out[d.hash] = b"".join(r.data for r in self.bytestream.Read(bytestream_pb2.ReadRequest(resource_name=name)))
        for batch in _batches(small):
            reply = self.cas.BatchReadBlobs(re_pb2.BatchReadBlobsRequest(instance_name=self.instance, digests=batch))
            for r in reply.responses:
                if r.status.code != code_pb2.OK:
                    raise KeyError(f"blob {r.digest.hash}/{r.digest.size_bytes}: {r.status.message}")
                out[r.digest.hash] = r.data
        return out

    def write(self, blobs: dict[str, bytes]) -> None:
        """Uploads blobs (keyed by hash) that the CAS does not have yet."""
        digests = [re_pb2.Digest(hash=h, size_bytes=len(b)) for h, b in blobs.items()]
        missing = self.cas.FindMissingBlobs(
            re_pb2.FindMissingBlobsRequest(instance_name=self.instance, blob_digests=digests)).missing_blob_digests
        small = [d for d in missing if d.size_bytes <= BATCH_BYTES]
        for batch in _batches(small):
            reply = self.cas.BatchUpdateBlobs(re_pb2.BatchUpdateBlobsRequest(
                instance_name=self.instance,
                requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=d, data=blobs[d.hash]) for d in batch]))
            for r in reply.responses:
                if r.status.code != code_pb2.OK:
                    raise RuntimeError(f"upload of {r.digest.hash}: {r.status.message}")
        for d in missing:
            if d.size_bytes > BATCH_BYTES:
                data = blobs[d.hash]
                name = self._resource("uploads", str(uuid.uuid4()), "blobs", d.hash, str(d.size_bytes))
                chunks = (bytestream_pb2.WriteRequest(resource_name=name if off == 0 else "", write_offset=off,
                                                      data=data[off:off + BATCH_BYTES],
                                                      finish_write=off + BATCH_BYTES >= len(data))
                          for off in range(0, len(data), BATCH_BYTES))
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


def tree_of(path: Path, blobs: dict[str, bytes]) -> re_pb2.Tree:
    """A REAPI Tree of directory `path`, adding every file and Directory blob to `blobs`.

    Symlinks to files are stored as files; other symlinks are stored as symlinks.
    """
    children: dict[str, re_pb2.Directory] = {}  # By hash.

    def directory(p: Path) -> re_pb2.Directory:
        node = re_pb2.Directory()
        for entry in sorted(os.scandir(p), key=lambda e: e.name):
            if entry.is_file():  # Follows symlinks.
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


def collect_outputs(command: re_pb2.Command, cwd: Path, result: re_pb2.ActionResult, blobs: dict[str, bytes]) -> None:
    """Adds the outputs that exist under `cwd` to `result` and their contents to `blobs`."""
    paths: list[tuple[str, bool | None]]  # (path, True: directory, False: file, None: either)
    if command.output_paths:  # REAPI 2.1: one list, files or directories.
        paths = [(p, None) for p in command.output_paths]
    else:
        paths = [(p, False) for p in command.output_files] + [(p, True) for p in command.output_directories]
    for relative, want_dir in paths:
        path = inside(cwd, relative)
        if path.is_file() and want_dir is not True:
            data = path.read_bytes()
            d = digest_of(data)
            blobs[d.hash] = data
            result.output_files.add(path=relative, digest=d, is_executable=_executable(path))
        elif path.is_dir() and want_dir is not False:
            data = tree_of(path, blobs).SerializeToString(deterministic=True)
            d = digest_of(data)
            blobs[d.hash] = data
            result.output_directories.add(path=relative, tree_digest=d)
        else:
            LOG.info("output %s not produced; left out", relative)


def execute(cas: Cas, action: re_pb2.Action, scratch: Path, cancel: threading.Event) -> re_pb2.ActionResult:
    """Runs one Action in a fresh input root under `scratch` and returns its ActionResult.

    Args:
        cas: Where inputs come from and outputs go.
        action: The Action (command digest, input root digest, timeout).
        scratch: An empty directory owned by this call; it holds `root/`, `stdout`, `stderr`.
        cancel: Set to kill the command's process group.

    Raises:
        TimeoutError: The command ran past `action.timeout`.
        ValueError, grpc.RpcError, KeyError: Bad or missing inputs.
    """
    command = re_pb2.Command.FromString(cas.read([action.command_digest])[action.command_digest.hash])
    root = scratch / "root"
    root.mkdir()
    materialise(cas, action.input_root_digest, root)
    cwd = inside(root, command.working_directory)
    cwd.mkdir(parents=True, exist_ok=True)
    outputs = list(command.output_paths) or [*command.output_files, *command.output_directories]
    for relative in outputs:
        inside(cwd, relative).parent.mkdir(parents=True, exist_ok=True)
    env = {v.name: v.value for v in command.environment_variables}
    timeout = action.timeout.ToTimedelta().total_seconds() if action.HasField("timeout") else None
    result = re_pb2.ActionResult()
    result.execution_metadata.worker = socket.gethostname()
    result.execution_metadata.execution_start_timestamp.GetCurrentTime()
    with open(scratch / "stdout", "wb") as out, open(scratch / "stderr", "wb") as err:
        try:
            proc = subprocess.Popen(list(command.arguments), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
        except OSError as e:  # No such executable, not executable: what a shell reports as 127.
            err.write(f"worker: cannot execute {list(command.arguments)!r}: {e}\n".encode())
            result.exit_code = 127
        else:
            started = time.monotonic()
            while proc.poll() is None:
                if cancel.is_set() or (timeout and time.monotonic() - started > timeout):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    if not cancel.is_set():
                        raise TimeoutError(f"action timed out after {timeout:.0f} s")
                    break
                time.sleep(0.05)
            # Killed by a signal: report it as a shell would (128 + signal number).
            result.exit_code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    result.execution_metadata.execution_completed_timestamp.GetCurrentTime()
    blobs: dict[str, bytes] = {}
    collect_outputs(command, cwd, result, blobs)
    for name in ("stdout", "stderr"):
        data = (scratch / name).read_bytes()
        d = digest_of(data)
        blobs[d.hash] = data
        getattr(result, f"{name}_digest").CopyFrom(d)
    cas.write(blobs)
    return result


def run_lease(cas: Cas, lease: bots_pb2.Lease, work_dir: Path, cancel: threading.Event) -> None:
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
        result = execute(cas, action, scratch, cancel)
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
    """A unary gRPC call that gives up (returns None) once `stop` is set, and retries while the
    server is unreachable or the call times out (a long poll that found no work)."""
    while not stop.is_set():
        future = method.future(request, timeout=timeout)
        while not future.done():
            if stop.wait(0.1):
                future.cancel()
                return None
        try:
            return future.result()
        except grpc.RpcError as e:
            if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
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
            worker=worker_pb2.Worker(devices=[worker_pb2.Device(
                handle=socket.gethostname(), properties=[worker_pb2.Device.Property(key="OSFamily", value="linux")])]))

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
            LOG.warning("bot session %s rejected (%s: %s); starting a new one", self.session.name, e.code().name,
                        e.details())
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


def serve(target: str, instance: str, work_dir: Path, ready_file: Path | None, keepalive_s: float,
          stop: threading.Event) -> None:
    """Takes and runs leases, one at a time, until `stop` is set.

    Args:
        target: `grpc://HOST:PORT` (or `HOST:PORT`) of the Bots, CAS and ByteStream services.
        instance: REAPI instance name.
        work_dir: Existing directory for per-lease scratch directories.
        ready_file: Written with the bot id once the server has answered GetCapabilities.
        keepalive_s: The server's bot keepalive timeout, seconds; heartbeats and polls stay within it.
        stop: Set by the signal handler.
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
                done = pool.submit(run_lease, cas, lease, work_dir, cancel)
                while True:  # Heartbeat; stopping, or the server withdrawing the lease, kills the action.
                    try:
                        done.result(timeout=HEARTBEAT_S)
                        break
                    except concurrent.futures.TimeoutError:
                        if not cancel.is_set() and (stop.is_set() or not bot.update() or lease.id not in bot.lease_ids()):
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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    serve(args.target, args.instance, args.work_dir, args.ready_file, args.keepalive, stop)
    LOG.info("stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
