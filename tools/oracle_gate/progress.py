"""What the gate says while it works, beside the report: one stderr line per phase with its time,
and where Bazel's own output goes (docs/ci.md, "Output").

Two loggers of the standard library's `logging`:
- `PROGRESS` (`oracle_gate.progress`): `oracle-gate: <phase> ...` lines on stderr; `--quiet`
  turns them off;
- `BAZEL_OUTPUT` (`oracle_gate.bazel`): every line Bazel prints, relayed escaped with the
  `bazel| ` prefix (runs/launch.py). By default on stderr (`configure_default`); `check` sends
  it to a log file it names in the report instead, and to stderr as well with `--verbose`
  (`configure_check`).

`Phases` times the phases of one command; the report ends with them.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

from tools.oracle_gate.errors import PREFIX, GateError
from tools.oracle_gate.text import visible

PROGRESS = logging.getLogger("oracle_gate.progress")
BAZEL_OUTPUT = logging.getLogger("oracle_gate.bazel")
# How many of check's Bazel logs are kept in the log folder (the oldest are removed).
KEPT_LOGS = 20


class _Stderr(logging.Handler):
    """Writes each line to whatever `sys.stderr` is when the line comes (a test may replace it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            self.handleError(record)


def _handler(path: str | None = None) -> logging.Handler:
    """A handler of bare messages: to the file `path`, else to stderr."""
    handler: logging.Handler = logging.FileHandler(path, encoding="utf-8") if path else _Stderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    return handler


def _reset(logger: logging.Logger, *handlers: logging.Handler) -> None:
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    for handler in handlers:
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def configure_default() -> None:
    """Every command's start: progress and Bazel's output on stderr."""
    _reset(PROGRESS, _handler())
    _reset(BAZEL_OUTPUT, _handler())


class BazelLog(logging.Handler):
    """`check`'s log of Bazel's output: a file made in the folder `folder()` returns when the
    first line comes (a `check` that runs no Bazel writes none, and needs no writable cache
    folder), keeping the newest KEPT_LOGS logs there.

    Attributes:
        path: the log file's path once it is open, else None.
    """

    def __init__(self, folder: Callable[[], str]) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))
        self.folder = folder
        self.path: str | None = None
        self.stream: TextIO | None = None

    def _open(self) -> TextIO:
        log_dir = self.folder()
        try:
            os.makedirs(log_dir, mode=0o700, exist_ok=True)
            logs = sorted(n for n in os.listdir(log_dir) if n.startswith("check-") and n.endswith(".log"))
            for old in logs[: max(0, len(logs) - KEPT_LOGS + 1)]:
                os.unlink(os.path.join(log_dir, old))
            path = os.path.join(log_dir, time.strftime("check-%Y%m%d-%H%M%S") + f"-{os.getpid()}.log")
            stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise GateError(f"cannot write Bazel's log in {log_dir}: {exc.strerror or exc}") from None
        self.path, self.stream = path, stream
        return stream

    def emit(self, record: logging.LogRecord) -> None:
        stream = self.stream or self._open()
        stream.write(self.format(record) + "\n")
        stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None
        super().close()


def configure_check(folder: Callable[[], str], *, quiet: bool, verbose: bool) -> BazelLog:
    """`check`'s output: Bazel's to a `BazelLog` in `folder()` (and to stderr with `verbose`),
    progress on stderr unless `quiet`. Returns the log, whose `path` the report names.

    Raises nothing; the log raises GateError (exit 1) when its first line cannot be written.
    """
    log = BazelLog(folder)
    _reset(BAZEL_OUTPUT, log, *([_handler()] if verbose else []))
    _reset(PROGRESS, *([] if quiet else [_handler()]))
    return log


def say(message: str) -> None:
    """One progress line: `oracle-gate: MESSAGE`, escaped."""
    PROGRESS.info(visible(f"{PREFIX} {message}"))


@dataclass
class Phases:
    """The phases of one command, in order, each (name, seconds)."""

    times: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def phase(self, name: str, announce: bool = False) -> Iterator[None]:
        """Times the block as phase `name` and records the time; says how long it took when it
        ends without raising (an error line says the rest), and with `announce` also when it starts
        (a phase that runs Bazel takes a while)."""
        if announce:
            say(f"{name} started")
        started = time.monotonic()
        yield
        seconds = time.monotonic() - started
        self.times.append((name, seconds))
        say(f"{name}: {seconds:.1f} s")

    def line(self) -> str:
        """`time: NAME S s, ...; total S s`, or "" when nothing was timed."""
        if not self.times:
            return ""
        parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.times)
        return f"time: {parts}; total {sum(s for _, s in self.times):.1f} s"


configure_default()
