"""Checks that a pip-compile lock is a complete, hash-pinned, host-neutral lock of its requirements file.

The repository has two: requirements_lock.txt of requirements.in (what Bazel installs), and the same
pair in tools/engine/ (the loopback engine's virtual environment).

Usage: lock_check.py REQUIREMENTS_IN LOCK. Exits 0 when consistent; otherwise prints one line per
problem, then the command that refreshes the lock, and exits 1.

The lock is read as an allow-list, so that what this check lists is all that pip installs. A lock
may hold only what `pip-compile --generate-hashes --strip-extras` writes for plain requirements:

- blank lines and comment lines (`# via ...`);
- pins `name==version` starting in column 1, ending in ` \\` when hash lines follow;
- indented `--hash=sha256:<64 lowercase hex digits>` lines continuing a pin, each but the last
  ending in ` \\`.

Everything else is refused with its line number: pip options (`-r`, `-c`, `-e`, `-i`, `-f`,
`--no-binary`, ...; another file, index or build mode this check never sees), URL and path
requirements, pins that are not `==` (or are `===`), extras, environment markers, other hashes,
a `\\` continuing a line onto anything but a hash, any character but printable ASCII and tab
(pip decodes the lock with the locale's encoding and also breaks lines at form feeds, U+2028 and
other characters), and an encoding declaration (`# -*- coding: ... -*-`) in the first two lines,
with which pip would decode the whole lock. This is the rule
tools/bazel/private/pip_lock_repository.bzl (`lock_line_problem`) applies before pip runs, plus
the continuation order, characters and encoding pip would read differently; a lock this check
passes is one that rule installs.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

UPDATE = "bazel run //:requirements.update"
LOCK_NAME = "requirements_lock.txt"
REQUIREMENTS_NAME = "requirements.in"
ONLY_PINS = "a lock holds only pins and hashes"

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")
# PEP 508 names; versions in the characters pip_lock_repository allows (letters, digits, . _ - + !).
_PIN_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_PIN_VERSION = re.compile(r"[A-Za-z0-9._+!-]+")
# pip (utils/encoding.py auto_decode) decodes the lock with an encoding a `#` line among the
# first two declares, e.g. `# -*- coding: utf-7 -*-`, under which `+AAo-` is a line feed.
_CODING = re.compile(r"coding[:=]\s*([-\w.]+)")
_HASH = re.compile(r"--hash=([^:\s]*):(\S*)")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_URL = re.compile(r"://|^(?:git|hg|svn|bzr)\+|(?:^|[\s=@])file:")
# pip's ARCHIVE_EXTENSIONS (a line ending in one is a local file to install) and `.egg`; the same
# list as pip_lock_repository.bzl `_FILE_EXTENSIONS`.
_ARCHIVE = re.compile(r"\.(?:zip|whl|tar\.gz|tgz|tar|tar\.bz2|tbz|tar\.xz|txz|tlz|tar\.lz|tar\.lzma|egg)$", re.I)
_OPTIONS = {
    ("-r", "--requirement"): "includes another file, which this check never reads",
    ("-c", "--constraint"): "adds a constraints file, which this check never reads",
    ("-e", "--editable"): "installs a project from a path or repository, which pip builds and runs",
    ("-i", "--index-url", "--extra-index-url", "--no-index"): "changes the index pip downloads from",
    ("-f", "--find-links"): "adds a place pip looks for packages",
    ("--trusted-host",): "lets pip download from a host without checking its certificate",
    ("--pre",): "lets pip choose pre-releases",
    (
        "--no-binary",
        "--only-binary",
        "--prefer-binary",
    ): "changes when pip builds from source, overriding the fetch's --only-binary=:all:",
    ("--use-feature",): "turns on an experimental pip feature",
}

# Line kinds.
_BLANK, _COMMENT, _PIN_LINE, _HASH_LINE, _REFUSED = "blank", "comment", "pin", "hash", "refused"


def normalize(name: str) -> str:
    """Returns the PEP 503 normalized form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def direct_requirements(text: str) -> dict[str, str]:
    """Maps each normalized name in a requirements.in text to its full requirement line."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _NAME.match(line)
        if match:
            out[normalize(match.group(1))] = line
    return out


def parse_lock(text: str, source: str = REQUIREMENTS_NAME) -> tuple[dict[str, str], set[str], set[str]]:
    """Parses a pip-compile lock.

    Args:
        text: the lock's text.
        source: the name of the requirements file it was compiled from, as pip-compile writes it in
            `# via -r NAME` comments (e.g. "requirements.in").

    Returns:
        (pins, hashed, direct): name -> pinned version, names with at least one sha256 hash, and
        names marked `via -r SOURCE`.
    """
    pins: dict[str, str] = {}
    hashed: set[str] = set()
    direct: set[str] = set()
    current = ""
    for line in text.splitlines():
        pin = _PIN.match(line)
        if pin:
            current = normalize(pin.group(1))
            pins[current] = pin.group(2)
            continue
        stripped = line.strip()
        if current and stripped.startswith("--hash=sha256:"):
            hashed.add(current)
        elif current and re.search(r"(via|^#)\s*-r " + re.escape(source) + r"\Z", stripped):
            direct.add(current)
    return pins, hashed, direct


def _shown(text: str, limit: int = 100) -> str:
    """`text` in backticks, with characters that are not printable escaped, cut to `limit`."""
    visible = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return "`" + (visible if len(visible) <= limit else visible[:limit] + "...") + "`"


def _character_problem(line: str) -> str | None:
    """Why a line holding anything but printable ASCII and tabs is refused, or None.

    pip decodes the lock with the locale's encoding and splits it with `str.splitlines`, which
    also breaks lines at form feeds, U+2028 and more; in plain ASCII every reader sees the same
    lines as this check.
    """
    char = next((c for c in line if not (" " <= c <= "~" or c == "\t")), None)
    if char is None:
        return None
    code = f"U+{ord(char):04X}"
    if char == "\ufeff":
        return "holds a byte order mark (U+FEFF); save the lock as UTF-8 without BOM"
    if "\udc80" <= char <= "\udcff":
        return f"holds the byte 0x{ord(char) - 0xDC00:02X}, which is not UTF-8; a lock is plain ASCII"
    if len(("x" + char + "x").splitlines()) > 1:
        return (
            f"holds {code}, which pip reads as a line break, so what follows it would be a line of its "
            "own; a lock is plain ASCII"
        )
    if char.isprintable():
        return f"holds the non-ASCII character {char!r} ({code}); a lock is plain ASCII"
    return f"holds the invisible character {code}; a lock is plain ASCII"


def _option_problem(body: str) -> str:
    name = re.match(r"--[^=\s]*", body)
    option = name.group(0) if name else body[:2]
    for names, why in _OPTIONS.items():
        if option in names:
            return f"{why}; {ONLY_PINS}"
    return f"is a pip option; {ONLY_PINS}"


def _pin_problem(body: str) -> str | None:
    """Why an unindented, non-comment line is not `name==version`, or None when it is."""
    if body.startswith("-"):
        return _option_problem(body)
    if _URL.search(body) or "@" in body:
        return f"names a URL, so pip would install whatever is there; {ONLY_PINS}"
    if body.startswith((".", "/", "~")) or "/" in body or "\\" in body or _ARCHIVE.search(body):
        return f"names a local path, so pip would install whatever is there; {ONLY_PINS}"
    if "${" in body:
        return f"refers to an environment variable, which pip fills in when it installs; {ONLY_PINS}"
    if ";" in body:
        return "has an environment marker, which pip_lock_repository refuses; keep markers out of requirements.in"
    if "[" in body:
        return "names extras, which `pip-compile --strip-extras` never writes; pin the packages they add by name"
    if "#" in body:
        return "has a comment after the pin; pip-compile writes comments on lines of their own"
    if "===" in body:
        return "pins with `===`, which compares the version as a string; a pin is `name==version`"
    if "==" not in body:
        if re.search(r"[<>=!~]", body):
            return "is not pinned with `==`, so pip may choose another version; a pin is `name==version`"
        return "names no version, so pip may choose any; a pin is `name==version`"
    if "--hash" in body:
        return "has a hash on the pin's line; pip-compile writes each `--hash` indented on a line of its own"
    if re.search(r"\s", body):
        return "has spaces; a pin is exactly `name==version`"
    name, _, version = body.partition("==")
    if not _PIN_NAME.fullmatch(name):
        return f"pins {_shown(name)}, which is not a distribution name; a pin is `name==version`"
    if not _PIN_VERSION.fullmatch(version):
        return f"pins the version {_shown(version)}, which is not one exact version; a pin is `name==version`"
    return None


def _hash_problem(body: str) -> str | None:
    """Why a line starting with `--hash` is not `--hash=sha256:<64 lowercase hex digits>`, or None."""
    match = _HASH.fullmatch(body)
    if match is None:
        return "is not one `--hash=sha256:<64 hex digits>`"
    if match.group(1) != "sha256":
        return f"uses the hash `{match.group(1)}`; the lock uses only `--hash=sha256:<64 hex digits>`"
    if not _SHA256_HEX.fullmatch(match.group(2)):
        return "is not 64 lowercase hex digits after `--hash=sha256:`"
    return None


def _classify(line: str) -> tuple[str, bool, str | None]:
    """Returns (kind, continued, problem) for one lock line.

    `continued` is True when the line ends with `\\`, so pip joins the next line onto it; `problem`
    says why the line is refused (kind `refused`), else None.
    """
    stripped = line.strip()
    unreadable = _character_problem(line)
    if unreadable:
        return _REFUSED, False, unreadable
    if not stripped:
        return _BLANK, False, None
    if stripped.startswith("#"):
        return _COMMENT, False, None
    continued = stripped.endswith("\\")
    if continued and not line.endswith("\\"):
        return _REFUSED, False, "has blanks after its final `\\`, so pip does not continue it onto the next line"
    body = stripped[:-1].rstrip() if continued else stripped
    indented = line[0] in " \t"
    if body.startswith("--hash"):
        problem = _hash_problem(body)
        if problem is None and not indented:
            problem = "is not indented under a pin, as pip-compile writes hash lines"
        return (_HASH_LINE if problem is None else _REFUSED), continued, problem
    problem = _pin_problem(body) if body else "is a `\\` alone"
    if problem is None and indented:
        problem = "is indented; a pin starts in column 1 and only `--hash=sha256:` lines are indented"
    return (_PIN_LINE if problem is None else _REFUSED), continued, problem


def lock_line_problem(line: str) -> str | None:
    """Says why one lock line, on its own, is not allowed; the Python twin of the rule of the same
    name in tools/bazel/private/pip_lock_repository.bzl.

    Args:
        line: one line of the lock, without its line ending.

    Returns:
        `` `line` why `` (the line stripped, non-printable characters escaped), or None for a
        blank line, a comment, a pin or a hash line. Whether a hash line continues a pin is
        checked by `line_problems`.
    """
    _, _, problem = _classify(line)
    return None if problem is None else f"{_shown(line.strip())} {problem}"


def _lines(text: str) -> list[str]:
    """The lock's lines: split at line feeds, a CRLF's carriage return dropped. Any other line
    break pip would split at is left in its line, where `_character_problem` refuses it."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def line_problems(lock_text: str) -> list[tuple[int, str]]:
    """Checks every line of a lock against the allow-list, and the order of continuations.

    Args:
        lock_text: the whole lock, decoded (undecodable bytes as surrogate escapes, which are
            refused).

    Returns:
        (1-based line number, message) for each refused line, in line order; empty when every
        line is allowed. Beyond `lock_line_problem`: a line ending with `\\` must be followed by a
        `--hash=sha256:` line (pip joins the next line onto it), a hash line must follow such a
        line, and neither of the first two lines may declare an encoding (pip would decode the
        whole lock with it).
    """
    out: list[tuple[int, str]] = []
    lines = _lines(lock_text)
    previous_kind, previous_continued = _BLANK, False
    for number, line in enumerate(lines, 1):
        kind, continued, problem = _classify(line)
        shown = _shown(line.strip())
        cookie = _CODING.search(line) if number <= 2 and line.startswith("#") else None
        if problem is not None:
            out.append((number, f"{shown} {problem}"))
        elif cookie:
            out.append(
                (
                    number,
                    f"{shown} declares the encoding `{cookie.group(1)}`, which pip then decodes the "
                    "whole lock with; pip-compile never writes it, so remove it",
                )
            )
        elif previous_continued and previous_kind != _REFUSED and kind != _HASH_LINE:
            out.append(
                (
                    number - 1,
                    f"{_shown(lines[number - 2].strip())} ends with `\\`, so pip joins line "
                    f"{number} onto it, but line {number} is not a `--hash=sha256:` line",
                )
            )
        elif kind == _HASH_LINE and not previous_continued:
            out.append(
                (
                    number,
                    f"{shown} continues no pin: it does not follow a line ending with `\\`, so pip "
                    "would read this hash on its own",
                )
            )
        previous_kind, previous_continued = kind, continued
    if previous_continued and previous_kind != _REFUSED:
        out.append((len(lines), f"{_shown(lines[-1].strip())} ends with `\\` but is the last line"))
    return sorted(out)


def problems(req_text: str, lock_text: str, lock_name: str = LOCK_NAME, req_name: str = REQUIREMENTS_NAME) -> list[str]:
    """Returns one message per problem with the lock (empty when it is consistent).

    Args:
        req_text: the text of the requirements file (requirements.in).
        lock_text: the text of the lock.
        lock_name: how to name the lock in messages (the path given on the command line).
        req_name: the requirements file's base name, as the lock's `# via -r` comments name it.

    Returns:
        First `lock_name:N: ...` for every refused line (see `line_problems`), then `lock_name: ...`
        for every requirement of requirements.in that is not pinned (or pinned to another version),
        every direct pin requirements.in no longer asks for, and every pin without a sha256 hash.
    """
    out = [f"{lock_name}:{number}: {message}" for number, message in line_problems(lock_text)]
    wanted = direct_requirements(req_text)
    pins, hashed, direct = parse_lock(lock_text, req_name)
    found: list[str] = []
    for name, line in sorted(wanted.items()):
        if name not in pins:
            found.append(f"{req_name} asks for `{line}` but the lock has no pin for {name}")
        elif name not in direct:
            found.append(f"{name} is pinned but not marked `via -r {req_name}`")
        elif "==" in line and line.split("==", 1)[1].strip() != pins[name]:
            found.append(f"{req_name} pins `{line}` but the lock has {name}=={pins[name]}")
    for name in sorted(direct - set(wanted)):
        found.append(f"the lock keeps {name} as a direct requirement that {req_name} no longer lists")
    for name in sorted(set(pins) - hashed):
        found.append(f"{name}=={pins[name]} has no --hash line; --require-hashes would refuse the lock")
    return out + [f"{lock_name}: {message}" for message in found]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the check.

    Args:
        argv: REQUIREMENTS_IN and LOCK paths; sys.argv[1:] when None.

    Returns:
        0 when consistent, 1 otherwise, 2 on bad usage. Undecodable bytes in the lock are refused
        per line, not raised.

    Raises:
        OSError: when either file cannot be read.
        UnicodeDecodeError: when requirements.in is not UTF-8.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: lock_check.py REQUIREMENTS_IN LOCK", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        req_text = f.read()
    with open(args[1], encoding="utf-8", errors="surrogateescape", newline="") as f:
        lock_text = f.read()
    req_name = os.path.basename(args[0])
    found = problems(req_text, lock_text, args[1], req_name)
    for line in found:
        print(line)
    if found:
        print(f"refresh the lock with `{UPDATE}` and commit it")
        return 1
    print(f"{args[1]} is consistent with {req_name} ({len(_lines(lock_text))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
