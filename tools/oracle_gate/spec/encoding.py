"""Names, in plain words, the invisible reasons a TOML or JSON file cannot be parsed.

A file saved with a byte order mark, as UTF-16, as Latin-1, or with a stray control character looks
fine in an editor, yet tomllib says only `Invalid statement (at line 1, column 1)`. `text_problem`
inspects the raw bytes before they are decoded and says what the culprit is, where it is, and how to
fix it. It only explains: every file it names a problem for is one the parser refuses anyway, and a
file it passes (None) is valid UTF-8, so what the gate accepts does not change.

Messages are one line, start with a verb so they read after a path (`oracles/shop.toml: starts with
...`), and show a control character by its code point (`U+0000`), never raw. Such a file is invalid,
exit 5 (docs/design.md section 6).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Literal

Language = Literal["TOML", "JSON"]

# Longest first: the UTF-32LE mark begins with the UTF-16LE one.
_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32BE"),
    (b"\xff\xfe\x00\x00", "UTF-32LE"),
    (b"\xef\xbb\xbf", "UTF-8"),
    (b"\xfe\xff", "UTF-16BE"),
    (b"\xff\xfe", "UTF-16LE"),
)
# UTF-16/32 text without a mark: (name, code unit width, offsets in a unit that are 00 for ASCII,
# offset that holds the character). UTF-32 first: UTF-32 text also has UTF-16's zero pattern.
_WIDE = (
    ("UTF-32LE", 4, (1, 2, 3), 0),
    ("UTF-32BE", 4, (0, 1, 2), 3),
    ("UTF-16LE", 2, (1,), 0),
    ("UTF-16BE", 2, (0,), 1),
)
_SNIFF_BYTES = 512
# C0 controls other than tab, line feed and carriage return; TOML also forbids DEL and a carriage
# return that does not start a CRLF line ending. JSON allows a lone CR (as whitespace) and DEL.
_FORBIDDEN: dict[str, re.Pattern[str]] = {
    "TOML": re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)"),
    "JSON": re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]"),
}
# Bytes that may start a culprit `_FORBIDDEN` names: a piece without any is skipped without a search.
_SUSPECT: dict[str, bytes] = {
    "TOML": bytes([*range(0x00, 0x09), 0x0B, 0x0C, 0x0D, *range(0x0E, 0x20), 0x7F]),
    "JSON": bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)]),
}
_CONTROL_NAMES = {
    0x07: "bell",
    0x08: "backspace",
    0x0B: "vertical tab",
    0x0C: "form feed",
    0x1A: "substitute, Ctrl-Z",
    0x1B: "escape",
    0x7F: "delete",
}


@dataclass(frozen=True)
class Place:
    """Where a piece of text starts in its file: `lines` line feeds and `offset` bytes before it,
    and `column` characters after the last of those line feeds (all 0 at the start of the file)."""

    lines: int = 0
    column: int = 0
    offset: int = 0

    def after(self, text: str, size: int) -> Place:
        """The place just after `text`, a piece of `size` bytes that starts here."""
        feed = text.rfind("\n")
        column = len(text) - feed - 1 if feed >= 0 else self.column + len(text)
        return Place(self.lines + text.count("\n"), column, self.offset + size)


START = Place()


def text_problem(data: bytes, language: Language) -> str | None:
    """Says what makes `data` unreadable as `language` text before any parser sees it.

    Args:
        data: the raw bytes of the file (or reply), as read.
        language: "TOML" (oracle files, policy.toml) or "JSON" (blobs); decides which control
            characters are forbidden and names the language in the message.

    Returns:
        One line naming the first culprit found, checked in this order: a byte order mark (UTF-8,
        UTF-16LE/BE, UTF-32LE/BE); UTF-16 or UTF-32 text without a mark (both judged from the
        first 512 bytes, `head_problem`); then, whichever comes first in the file, a byte that is
        not UTF-8 (with a Latin-1/Windows-1252 hint) or a character the language forbids (NUL, a
        lone carriage return in TOML, other C0 controls, DEL in TOML). Positions are 1-based line
        and column (in characters) and 0-based byte offsets. None when the bytes are UTF-8 with
        none of these; the parser then has the last word. Never raises. `TextStream` says the same
        of bytes read in pieces.
    """
    head = head_problem(data[:_SNIFF_BYTES])
    if head is not None:
        return head
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _decode_problem(data, exc.start, language, START)
    return _control_problem(text, language, START)


def head_problem(head: bytes) -> str | None:
    """The problems `text_problem` finds from a file's first 512 bytes alone (`head`: those bytes,
    or all of a shorter file): a byte order mark, or UTF-16/UTF-32 text without one; else None."""
    for mark, name in _BOMS:
        if head.startswith(mark):
            return _bom_message(mark, name)
    return _wide_encoding(head)


class TextStream:
    """`text_problem` for bytes read in pieces: `feed` each piece in file order, then `feed(b"",
    final=True)`; each call returns the text decoded so far that is not yet returned (empty while
    the first 512 bytes are gathered, or once a problem is found). `problem` is then the line
    `text_problem` would give for all the bytes, with whole-file positions, or None. A character
    split between pieces (a multi-byte UTF-8 sequence, TOML's CR LF) is held until the next piece;
    memory is one piece and 512 bytes.
    """

    def __init__(self, language: Language) -> None:
        self.language: Language = language
        self.problem: str | None = None
        self._place = START
        self._head: bytes | None = b""  # None once the first 512 bytes were judged
        self._pending = b""

    @property
    def unread(self) -> bytes:
        """The bytes fed whose text is not returned yet (the gathered head, or a split character)."""
        return self._head if self._head is not None else self._pending

    def feed(self, piece: bytes, final: bool = False) -> str:
        """Takes the next `piece` of bytes (`final`: the file ends after it) and returns the text
        it completes, checked. Never raises."""
        if self.problem is not None:
            return ""
        if self._head is not None:
            self._head += piece
            if len(self._head) < _SNIFF_BYTES and not final:
                return ""
            piece, self._head = self._head, None
            self.problem = head_problem(piece[:_SNIFF_BYTES])
            if self.problem is not None:
                return ""
        data = self._pending + piece if self._pending else piece
        try:
            text, used = codecs.utf_8_decode(data, "strict", final)
        except UnicodeDecodeError as exc:
            if final or len(data) - exc.start >= 3:  # the bytes `_not_utf8` shows are all here
                self.problem = _decode_problem(data, exc.start, self.language, self._place)
                return ""
            text, used = data[: exc.start].decode("utf-8"), exc.start
        if self.language == "TOML" and not final and text.endswith("\r"):  # a CR whose LF may come next
            text, used = text[:-1], used - 1
        self._pending = data[used:]
        if len(data[:used].translate(None, _SUSPECT[self.language])) != used:
            self.problem = _control_problem(text, self.language, self._place)
            if self.problem is not None:
                return ""
        self._place = self._place.after(text, used)
        return text


def _decode_problem(data: bytes, start: int, language: Language, place: Place) -> str:
    """For `data` (starting at `place`) that is not UTF-8 from byte `start` on: a forbidden
    character before that byte, else the byte itself (`_not_utf8`)."""
    head = data[:start].decode("utf-8")
    line, column = _position(head, len(head), place)
    return _control_problem(head, language, place) or _not_utf8(
        data[start : start + 3], place.offset + start, line, column
    )


# Characters an editor shows as a space or nothing, which TOML takes for neither whitespace nor a
# line break outside strings: named when the parser has refused the file.
_INVISIBLE = {
    0x00A0: "no-break space",
    0x00AD: "soft hyphen",
    0x200B: "zero-width space",
    0x200C: "zero-width non-joiner",
    0x200D: "zero-width joiner",
    0x2028: "line separator",
    0x2029: "paragraph separator",
    0x202F: "narrow no-break space",
    0x2060: "word joiner",
    0x3000: "ideographic space",
    0xFEFF: "zero-width no-break space (a byte order mark inside the file)",
}


def invisible_hint(text: str) -> str | None:
    """For a file the parser refused: names the first character that looks like a space or like
    nothing in an editor (`_INVISIBLE`), with its line and column, or None when there is none.
    Such a character inside a string is legal, so this is a hint beside the parser's own error."""
    for index, char in enumerate(text):
        name = _INVISIBLE.get(ord(char))
        if name:
            line, column = _position(text, index)
            return (
                f"line {line}, column {column} holds U+{ord(char):04X} ({name}), which looks like a space or "
                "nothing but is not whitespace to TOML; retype it"
            )
    return None


def _bom_message(mark: bytes, name: str) -> str:
    shown = mark.hex(" ").upper()
    if name == "UTF-8":
        return f"starts with a UTF-8 byte order mark ({shown}); save the file as UTF-8 without BOM"
    return (
        f"starts with a {name} byte order mark ({shown}): the file is saved as {name}, not UTF-8; "
        "save it as UTF-8 without BOM"
    )


def _mostly_zero(units: bytes) -> bool:
    return bool(units) and units.count(0) * 4 >= len(units) * 3


def _wide_encoding(head: bytes) -> str | None:
    """Names UTF-16/UTF-32 without a byte order mark: ASCII text with 00 bytes in a fixed pattern
    in `head`, the first 512 bytes (a head without 00 bytes has no such pattern)."""
    if b"\x00" not in head:
        return None
    for name, width, zero_offsets, char_offset in _WIDE:
        head_units = head[: len(head) - len(head) % width]
        if (
            head_units
            and all(_mostly_zero(head_units[i::width]) for i in zero_offsets)
            and not _mostly_zero(head_units[char_offset::width])
        ):
            pattern = "every other byte is" if width == 2 else "three of every four bytes are"
            return f"looks like {name} without a byte order mark ({pattern} 00), not UTF-8; save the file as UTF-8"
    return None


def _position(text: str, index: int, place: Place = START) -> tuple[int, int]:
    """1-based (line, column) in the file of character `index` of `text`, a piece that starts at
    `place`; lines end at line feeds."""
    line = place.lines + text.count("\n", 0, index) + 1
    feed = text.rfind("\n", 0, index)
    column = index - feed if feed >= 0 else place.column + index + 1
    return line, column


def _control_problem(text: str, language: Language, place: Place) -> str | None:
    match = _FORBIDDEN[language].search(text)
    if match is None:
        return None
    index = match.start()
    char = text[index]
    line, column = _position(text, index, place)
    where = f"at line {line}, column {column}"
    if char == "\x00":
        offset = place.offset + len(text[:index].encode("utf-8"))
        return (
            f"has a NUL byte (U+0000) {where} (byte offset {offset}), which {language} does not allow; "
            "delete it (a file with many NULs was saved as UTF-16 or is not text)"
        )
    if char == "\r":
        return (
            f"has a carriage return (U+000D) not followed by a line feed {where}, which TOML does "
            "not allow; save the file with LF (or CRLF) line endings"
        )
    code = ord(char)
    name = _CONTROL_NAMES.get(code)
    shown = f"U+{code:04X}" + (f" ({name})" if name else "")
    return (
        f"has the control character {shown} {where}, which {language} does not allow; delete it, "
        f"or write it as \\u{code:04x} inside a string"
    )


def _not_utf8(tail: bytes, start: int, line: int, column: int) -> str:
    """The message for bytes `tail` (the first up to 3 bytes from the one that is not UTF-8) at byte
    offset `start`, line `line` and column `column` of the file."""
    where = f"at line {line}, column {column} (byte offset {start})"
    byte = tail[0]
    if len(tail) == 3 and tail[0] == 0xED and 0xA0 <= tail[1] <= 0xBF and 0x80 <= tail[2] <= 0xBF:
        surrogate = 0xD000 | (tail[1] & 0x3F) << 6 | (tail[2] & 0x3F)
        return (
            f"is not UTF-8: bytes {tail.hex(' ').upper()} {where} encode the lone surrogate "
            f"U+{surrogate:04X}, which UTF-8 does not allow; save the file as UTF-8"
        )
    try:
        latin = bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:
        latin = ""
    if latin:
        shown = repr(latin) if latin.isprintable() else f"U+{ord(latin):04X}"
        return (
            f"is not UTF-8: byte 0x{byte:02X} {where} is {shown} in Latin-1/Windows-1252, so the "
            "file was probably saved in that encoding; save it as UTF-8"
        )
    return f"is not UTF-8: byte 0x{byte:02X} {where} cannot occur there in UTF-8; save the file as UTF-8"
