"""The supervisor of the `OracleCall` action: runs every row through one caller process.

Usage (from the action `oracle_test` declares):

    observe.py --inputs INPUTS.json --generated GENERATED.json --out OBSERVATIONS.json --log CALLER.log

INPUTS.json is the suite's inputs view (no bound, no expected value), GENERATED.json the samples
drawn for this run's salt. For each row, in id order, the supervisor sends the caller one request
(the row's blob samples, then its generated samples) and waits at most the row's `timeout_s` seconds
for one reply line. A reply is stored verbatim, as text, for the judge to parse strictly. A hang past
the limit, a caller that exits, or a reply longer than MAX_REPLY_BYTES becomes the row's error; the
caller's process group is killed and a fresh caller serves the next row.

The caller's stdout and stderr go to CALLER.log, which the judge copies into the test log. The
action exits 0 whatever production code does; it exits 1 only when its own inputs are unusable
(docs/design.md section 8).

Standard library only; this file must not import the gate package (the action's runfiles hold the
production library, not the gate).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

MAX_REPLY_BYTES = 64 << 20
MAX_LOG_BYTES = 1 << 20
STOP_GRACE_S = 5.0
OBSERVATIONS_SCHEMA = 1


class Caller:
    """One caller process and its two pipes (requests in, replies out)."""

    def __init__(self, log_fd: int) -> None:
        here = os.path.dirname(os.path.abspath(__file__))
        req_read, self.req_write = os.pipe()
        self.rep_read, rep_write = os.pipe()
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-B", os.path.join(here, "caller.py"), str(req_read), str(rep_write)],
            stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, pass_fds=(req_read, rep_write),
            env=env, start_new_session=True,
        )
        os.close(req_read)
        os.close(rep_write)
        self.buffer = b""

    def send(self, line: bytes) -> bool:
        """Writes one request line; False when the caller has gone away."""
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self.req_write, view):]
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
            ready, _, _ = select.select([self.rep_read], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.rep_read, 1 << 16)
            if not chunk:
                code = self.proc.wait()
                return None, f"the caller exited with code {code} before replying"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        if len(line) > MAX_REPLY_BYTES:
            return None, f"the reply exceeds {MAX_REPLY_BYTES} bytes"
        return line.decode("utf-8", "replace"), ""

    def stop(self) -> None:
        """Closes the request channel, gives the caller STOP_GRACE_S seconds, then kills its group."""
        for fd in (self.req_write, self.rep_read):
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


def requests(inputs: dict[str, object], generated: dict[str, object]) -> list[tuple[str, float, bytes]]:
    """Builds (id, timeout in seconds, request line) per row, blob samples before generated ones."""
    drawn = generated.get("rows", {})
    out = []
    for row in inputs["rows"]:  # type: ignore[attr-defined]
        request = {key: row[key] for key in ("id", "entry", "kind", "seed", "args", "repeat") if key in row}
        request["samples"] = list(row["samples"]) + list(drawn.get(row["id"], []))  # type: ignore[attr-defined]
        line = json.dumps(request, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode() + b"\n"
        out.append((row["id"], float(row["timeout_s"]), line))
    return out


def observe(inputs: dict[str, object], generated: dict[str, object], log_fd: int) -> list[dict[str, str]]:
    """Runs every row; returns one `{"id", "reply"}` or `{"id", "error"}` entry per row, in order."""
    rows: list[dict[str, str]] = []
    caller: Caller | None = None
    try:
        for ident, timeout_s, line in requests(inputs, generated):
            if caller is None:
                caller = Caller(log_fd)
            os.write(log_fd, f"--- oracle-gate: row {ident}\n".encode())
            reply, why = (None, "the caller closed its request channel")
            if caller.send(line):
                reply, why = caller.receive(timeout_s)
            if reply is None:
                rows.append({"id": ident, "error": why})
                caller.stop()
                caller = None
            else:
                rows.append({"id": ident, "reply": reply})
    finally:
        if caller is not None:
            caller.stop()
    return rows


def _truncate_log(path: str) -> None:
    size = os.path.getsize(path)
    if size > MAX_LOG_BYTES:
        with open(path, "r+b") as f:
            f.truncate(MAX_LOG_BYTES)
            f.seek(MAX_LOG_BYTES)
            f.write(f"\n--- oracle-gate: caller log cut at {MAX_LOG_BYTES} of {size} bytes\n".encode())


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the action; returns 0, or 1 when the inputs cannot be read."""
    parser = argparse.ArgumentParser(prog="observe")
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--generated", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args(argv)
    try:
        with open(args.inputs, encoding="utf-8") as f:
            inputs = json.load(f)
        with open(args.generated, encoding="utf-8") as f:
            generated = json.load(f)
    except (OSError, ValueError) as exc:
        # The gate's error-line form (errors.error_line), written out: this side imports nothing of the gate.
        print(f"oracle-gate: [1] cannot read the inputs view: {exc}", file=sys.stderr)
        return 1
    log_fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        rows = observe(inputs, generated, log_fd)
    finally:
        os.close(log_fd)
    _truncate_log(args.log)
    document = {"schema": OBSERVATIONS_SCHEMA, "salt": generated.get("salt", ""), "rows": rows}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(document, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
