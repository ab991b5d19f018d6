"""What /proc says about processes (proc(5)): a process's parent, state and start time, every
process with its pid in each namespace, and a process's pid namespace. The kept roots sweep and end
their processes with it (kept_root.py), and a fresh root's end waits with it until its pid
namespace is empty (root_session.py)."""

from __future__ import annotations

import os
import time


def stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state letter, start time in clock ticks) of `pid` from /proc/PID/stat, or None
    when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[1]), fields[0], int(fields[19])


def processes() -> dict[int, tuple[int, list[int]]]:
    """Every process: host pid -> (parent pid, NSpid list from /proc/PID/status)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            found[int(name)] = (int(fields["PPid"]), [int(n) for n in fields.get("NSpid", name).split()])
        except (OSError, KeyError, ValueError):
            continue
    return found


def namespace(pid: int) -> str | None:
    """The pid namespace of `pid` (/proc/PID/ns/pid's link, e.g. `pid:[4026532301]`), or None when
    it is gone (or a zombie, which can no longer do anything)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def child_namespace(pid: int) -> str | None:
    """The pid namespace of the first child of `pid` found (bubblewrap's init in the root's own
    namespace, for the bwrap process `pid`), or None when it has no child."""
    for child, (parent, _) in processes().items():
        if parent == pid:
            return namespace(child)
    return None


def wait_empty(ns: str, timeout_s: float) -> bool:
    """Waits until no process is left in the pid namespace `ns` (polled every 5 ms, at most
    `timeout_s` seconds). When a namespace's init ends, the kernel kills the rest of it, but not
    before the parent of that init hears of its end. Returns whether it emptied in time."""
    deadline = time.monotonic() + timeout_s
    while any(namespace(pid) == ns for pid in processes()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True
