"""The loopback engine's one exception type, and the log tail its messages carry (standard library only)."""

from __future__ import annotations

import os
from pathlib import Path


class EngineError(RuntimeError):
    """A server, database, worker or BuildGrid's environment failed to install, start or stop; the
    message has the relevant log tail."""


def tail(path: Path, max_bytes: int = 4000) -> str:
    """The last `max_bytes` bytes of a log file, decoded leniently; a note if it does not exist."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - max_bytes))
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return f"(no log file {path})"
