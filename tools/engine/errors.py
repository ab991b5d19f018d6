"""The loopback engine's one exception type (standard library only)."""

from __future__ import annotations


class EngineError(RuntimeError):
    """A server, database, worker or BuildGrid's environment failed to install, start or stop; the
    message has the relevant log tail."""
