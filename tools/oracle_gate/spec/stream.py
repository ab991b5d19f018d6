"""Checks a blob read in pieces: what `check_shape(invariant, load_samples(data))` checks, with the
same refusal, holding about one piece and one sample in memory instead of the whole blob
(docs/design.md section 4, "Which blobs are hashed").

The bytes pass through `encoding.TextStream` (the text checks, with whole-file positions); the
top-level array is read element by element with json's own C scanner and the strict hooks of
`samples.STRICT`, each element shape-checked as it is parsed (`samples.check_samples`). Runs of
whole samples are parsed in one call where a sample boundary is easy to guess (a `}` `,` `{` with
only whitespace between); where that guess is wrong the samples are read one by one, so the guess
only decides speed. Refusals keep `load_samples`' order: a text problem anywhere before any JSON
error, a JSON error anywhere before a shape error, the first bad sample first; so reading goes on
to the end after a JSON error (text checks only) or a shape error (JSON only).
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from tools.oracle_gate.spec.encoding import TextStream
from tools.oracle_gate.spec.samples import (
    EMPTY,
    STRICT,
    SampleError,
    check_samples,
    check_shape,
    load_samples,
    not_json,
    not_usable,
)
from tools.oracle_gate.spec.schema import Invariant

# Characters past a parsed value (or a syntax error) that must already be read for the outcome to be
# the whole blob's: json decides a number, a literal or an escape from at most a few characters more.
MARGIN = 32
# Characters read past a sample's start before a run of samples is parsed in one call.
_RUN = 1 << 16
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _Refused(Exception):
    """A JSON refusal (`error`), reported once the rest of the bytes showed no text problem."""

    def __init__(self, error: SampleError) -> None:
        super().__init__(str(error))
        self.error = error


def _ignore(_value: Any) -> None:
    return None


# Reads only the structure: no hook refuses anything, no number is converted.
_STRUCTURE = json.JSONDecoder(parse_constant=_ignore, parse_float=_ignore, parse_int=_ignore, object_pairs_hook=_ignore)


class _Text:
    """The blob's text read so far: `buf[pos:]` is not parsed yet, `buf[keep:]` is kept when more
    is read (`keep` None: from `pos`); `eof` once the bytes are all read."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks: Iterator[bytes] = iter(chunks)
        self.stream = TextStream("JSON")
        self.buf = ""
        self.pos = 0
        self.keep: int | None = None
        self.eof = False
        self.base = 0  # characters before buf[0]
        self._lines = 0  # line feeds before buf[0]
        self._feed = -1  # index in the file of the last line feed before buf[0]

    def pull(self) -> bool:
        """Reads text on to the next piece; False at the end.

        Raises:
            SampleError: the text problem `encoding.text_problem` names, as soon as it is read.
        """
        while not self.eof:
            piece = next(self.chunks, None)
            self.eof = piece is None
            text = self.stream.feed(piece or b"", final=self.eof)
            if self.stream.problem is not None:
                raise SampleError(self.stream.problem)
            if text:
                self._append(text)
                return True
        return False

    def _append(self, text: str) -> None:
        drop = self.pos if self.keep is None else min(self.pos, self.keep)
        if drop:
            self._lines += self.buf.count("\n", 0, drop)
            feed = self.buf.rfind("\n", 0, drop)
            if feed >= 0:
                self._feed = self.base + feed
            self.base += drop
            self.buf = self.buf[drop:] + text
            self.pos -= drop
            if self.keep is not None:
                self.keep -= drop
        else:
            self.buf += text

    def grow(self, at_least: int) -> None:
        """Reads until `at_least` characters from `pos` are here, or to the end."""
        while len(self.buf) - self.pos < at_least and self.pull():
            pass

    def skip_whitespace(self) -> str:
        """Moves `pos` past JSON whitespace, reading on as needed; returns the next character, or
        "" at the end."""
        while True:
            self.pos = _WHITESPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]  # `\s*` always matches
            if self.pos < len(self.buf) or not self.pull():
                return self.buf[self.pos : self.pos + 1]

    def where(self, index: int) -> tuple[int, int]:
        """1-based (line, column) in the whole blob of `buf[index]`, as json counts them."""
        line = self._lines + self.buf.count("\n", 0, index) + 1
        feed = self.buf.rfind("\n", 0, index)
        return line, (index - feed if feed >= 0 else self.base + index - self._feed)

    def drain(self) -> None:
        """Reads the rest for the text checks only.

        Raises:
            SampleError: a text problem in the rest.
        """
        for piece in self.chunks:
            self.stream.feed(piece)
        self.stream.feed(b"", final=True)
        self.eof = True
        if self.stream.problem is not None:
            raise SampleError(self.stream.problem)


def check_stream(invariant: Invariant, chunks: Iterable[bytes]) -> None:
    """Checks a blob given as pieces of its bytes (e.g. `CatFile.chunks`, 1 MiB each) like
    `check_shape(invariant, load_samples(data))` does for all of them at once.

    Args:
        invariant: the row whose kind decides the sample shape.
        chunks: the blob's bytes in file order, pieces of any size (empty ones allowed); read
            to the end unless a text problem stops it earlier.

    Raises:
        SampleError: with exactly the message `load_samples` or `check_shape` raises for the same
            bytes. Memory is about one piece plus the largest sample, except for a top-level value
            that is not an array (never a valid blob): that one is read whole and judged by
            `load_samples` and `check_shape` themselves. Nesting that only just reaches Python's
            recursion limit may be judged differently, as it may by `load_samples` called from a
            deeper stack.
    """
    text = _Text(chunks)
    text.keep = 0  # the whole text, should the top level not be an array
    first = text.skip_whitespace()
    if first not in ("[", ""):
        rest = text.buf.encode("utf-8") + text.stream.unread + b"".join(text.chunks)
        check_shape(invariant, load_samples(rest))
        return
    text.keep = None
    samples = _Samples(invariant)
    try:
        if first == "":
            _refuse_at(text, [("", text.pos)])
        text.pos += 1
        _array(text, samples)
        if text.skip_whitespace():
            _refuse_at(text, [("[] ", None), (text.buf[text.pos], text.pos)])
    except _Refused as refused:
        text.drain()
        raise refused.error from None
    if samples.problem is not None:
        raise SampleError(samples.problem)
    if not samples.count:
        raise SampleError(EMPTY)


class _Samples:
    """The samples parsed so far: how many, and the first shape problem (then no more are checked)."""

    def __init__(self, invariant: Invariant) -> None:
        self.invariant = invariant
        self.count = 0
        self.problem: str | None = None

    def take(self, values: list[Any]) -> None:
        if self.problem is None:
            try:
                check_samples(self.invariant, values, self.count)
            except SampleError as exc:
                self.problem = str(exc)
        self.count += len(values)


def _array(text: _Text, samples: _Samples) -> None:
    """Reads the top-level array's elements and its `]`, from just after its `[`."""
    slow_until = -1  # where the last failed run ended (file index): samples one by one until there
    if text.skip_whitespace() == "]":
        text.pos += 1
        return
    while True:
        if text.pos >= len(text.buf):
            _refuse_at(text, [("[", None), ("", text.pos)])
        if text.base + text.pos < slow_until or not _run(text, samples):
            if text.base + text.pos >= slow_until:
                slow_until = text.base + len(text.buf)
            samples.take([_element(text)])
        separator = text.skip_whitespace()
        if separator == "]":
            text.pos += 1
            return
        if separator != ",":
            _refuse_at(text, [("[0 ", None), (separator, text.pos)])
        text.keep = text.pos
        text.pos += 1
        following = text.skip_whitespace()
        if following in ("]", ""):
            _refuse_at(text, [("[0 ", None), (",", text.keep), (" ", None), (following, text.pos)])
        text.keep = None


def _run(text: _Text, samples: _Samples) -> bool:
    """Parses, in one call, the whole samples from `pos` up to a guessed sample boundary (or to
    the array's end once all is read), leaving `pos` at the `,` (or `]`) after them; False, with
    nothing read, when the guess is wrong or the run holds anything but valid JSON."""
    text.grow(_RUN)
    buf, start = text.buf, text.pos
    stop = buf.rfind("]") if text.eof else _boundary(buf, start)
    if stop <= start:
        return False
    doc = "[" + buf[start:stop] + "]"
    try:
        with _no_collection():
            values, end = STRICT.scan_once(doc, 0)  # type: ignore[attr-defined]  # set by JSONDecoder.__init__, not in typeshed
    except (StopIteration, ValueError, RecursionError):
        return False
    if end != len(doc):
        return False
    samples.take(values)
    text.pos = stop
    return True


def _boundary(buf: str, start: int) -> int:
    """The index of the last `,` after `start` between a `}` and a `{` (whitespace aside), which
    most likely separates two samples; -1 when the last few `{` are not so placed."""
    brace = len(buf)
    for _ in range(8):
        brace = buf.rfind("{", start + 1, brace)
        if brace < 0:
            return -1
        comma = brace - 1
        while comma > start and buf[comma] in " \t\n\r":
            comma -= 1
        if buf[comma] == ",":
            close = comma - 1
            while close > start and buf[close] in " \t\n\r":
                close -= 1
            if buf[close] == "}":
                return comma
    return -1


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Pauses the cyclic garbage collector: parsed JSON holds no reference cycles, so collecting
    while a run of samples is built only costs time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _element(text: _Text) -> Any:
    """Parses the one value at `pos` (reading on until the outcome cannot depend on what follows)
    and moves `pos` past it.

    Raises:
        _Refused: the strict parser's refusal of the value, as `load_samples` words it.
    """
    while True:
        buf, start = text.buf, text.pos
        try:
            value, end = STRICT.raw_decode(buf, start)
        except json.JSONDecodeError as exc:
            if text.eof or _settled(exc, len(buf)):
                raise _Refused(not_json(exc.msg, *text.where(exc.pos))) from None
        except RecursionError as exc:
            raise _Refused(not_usable(exc)) from None
        except ValueError as exc:  # a hook's SampleError, or an integer too long
            if text.eof or _complete(buf, start):
                raise _Refused(not_usable(exc)) from None
        else:
            if text.eof or end + MARGIN <= len(buf):
                text.pos = end
                return value
        text.grow(2 * max(len(buf) - start, MARGIN))


def _settled(exc: json.JSONDecodeError, length: int) -> bool:
    """True when a syntax error in a text of `length` characters cannot be caused by the text
    ending there: it is well before the end, and not a string left open."""
    return exc.pos + MARGIN <= length and not exc.msg.startswith("Unterminated string")


def _complete(buf: str, start: int) -> bool:
    """True when what the strict parser refused in the value at `start` was all read: the value's
    structure ends (or breaks) well before the end of `buf`."""
    try:
        _value, end = _STRUCTURE.raw_decode(buf, start)
    except json.JSONDecodeError as exc:
        return _settled(exc, len(buf))
    except RecursionError:
        return True
    return end + MARGIN <= len(buf)


def _refuse_at(text: _Text, parts: list[tuple[str, int | None]]) -> None:
    """Raises json's own refusal of a syntax error between values, placed in the whole blob.

    `parts` spell a tiny document with the same error (each part with the `buf` index it stands
    for, None for a filler): json words the message, as every Python version does.

    Raises:
        _Refused: always.
    """
    doc = "".join(part for part, _ in parts)
    try:
        STRICT.decode(doc)
    except json.JSONDecodeError as exc:
        raise _Refused(not_json(exc.msg, *text.where(_mapped(parts, exc.pos)))) from None
    raise AssertionError(f"{doc!r} parsed")  # pragma: no cover - the parts always hold the error


def _mapped(parts: list[tuple[str, int | None]], pos: int) -> int:
    """The `buf` index of position `pos` of the parts' document; in a filler, the next part's start."""
    offset, passed = 0, False
    for part, where in parts:
        inside = offset <= pos < offset + len(part)
        if where is not None and (passed or inside):
            return where + max(0, pos - offset)
        passed = passed or inside
        offset += len(part)
    last, where = parts[-1]
    assert where is not None
    return where + len(last)
