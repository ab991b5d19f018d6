"""Checks that requirements_lock.txt is a complete, hash-pinned, host-neutral lock of requirements.in.

Usage: lock_check.py REQUIREMENTS_IN LOCK. Exits 0 when consistent; otherwise prints one line per
problem, then the command that refreshes the lock, and exits 1.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

UPDATE = "bazel run //:requirements.update"
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")
_HOST_PATH = re.compile(r"(file:|--index-url|--extra-index-url|--find-links|-f\s|/opt/|/home/|/root/)")


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


def parse_lock(text: str) -> tuple[dict[str, str], set[str], set[str]]:
    """Parses a pip-compile lock.

    Returns:
        (pins, hashed, direct): name -> pinned version, names with at least one sha256 hash, and
        names marked `via -r requirements.in`.
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
        elif current and re.search(r"(via|^#)\s*-r requirements\.in", stripped):
            direct.add(current)
    return pins, hashed, direct


def problems(req_text: str, lock_text: str) -> list[str]:
    """Returns one message per inconsistency between requirements.in and the lock (empty when fine)."""
    out: list[str] = []
    wanted = direct_requirements(req_text)
    pins, hashed, direct = parse_lock(lock_text)
    for name, line in sorted(wanted.items()):
        if name not in pins:
            out.append(f"requirements.in asks for `{line}` but the lock has no pin for {name}")
        elif name not in direct:
            out.append(f"{name} is pinned but not marked `via -r requirements.in`")
        elif "==" in line and line.split("==", 1)[1].strip() != pins[name]:
            out.append(f"requirements.in pins `{line}` but the lock has {name}=={pins[name]}")
    for name in sorted(direct - set(wanted)):
        out.append(f"the lock keeps {name} as a direct requirement that requirements.in no longer lists")
    for name in sorted(set(pins) - hashed):
        out.append(f"{name}=={pins[name]} has no --hash line; --require-hashes would refuse the lock")
    for number, line in enumerate(lock_text.splitlines(), 1):
        if not line.lstrip().startswith("#") and _HOST_PATH.search(line):
            out.append(f"line {number} names an index or a host path: {line.strip()}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the check; returns 0 when consistent, 1 otherwise, 2 on bad usage."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: lock_check.py REQUIREMENTS_IN LOCK", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        req_text = f.read()
    with open(args[1], encoding="utf-8") as f:
        lock_text = f.read()
    found = problems(req_text, lock_text)
    for line in found:
        print(f"requirements_lock.txt: {line}")
    if found:
        print(f"refresh the lock with `{UPDATE}` and commit it")
        return 1
    print(f"requirements_lock.txt is consistent with requirements.in ({len(lock_text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
