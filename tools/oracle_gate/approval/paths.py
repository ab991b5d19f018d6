"""What a changed path really touches: spelling variants, symlink targets and submodules.

Git stores a path as bytes, but a checkout may map several spellings to one file (case-insensitive
or Unicode-normalizing file systems, Windows dropping trailing dots and spaces), and a symlink lets
one path stand for another. Protection is decided on every spelling and on every symlink target
(the protected paths: docs/design.md section 3).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from tools.oracle_gate.approval.globs import compile_glob, matches
from tools.oracle_gate.approval.policy import ATTRIBUTES_GLOB
from tools.oracle_gate.git.tree import GITLINK, SYMLINK, Entry

MAX_SYMLINK_HOPS = 40  # the limit Linux applies (ELOOP)
_WILDCARD = re.compile(r"[*?]")
# Globs of files only git reads, and only at a path of the tree itself: git tracks no path beyond a
# symlink and opens no `.gitattributes` that is one (gitattributes(5), git 2.32 and later), so a
# folder reached through a symlink never holds one git reads. The files themselves, and a link
# named or aimed like one, still count (`protected_by`).
_TREE_PATHS_ONLY = (ATTRIBUTES_GLOB,)


# Characters HFS+ ignores in names (zero-width joiners and marks, Unicode's default-ignorables).
_IGNORABLE = dict.fromkeys([*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2065), 0xFEFF, 0x00AD])
# An NTFS 8.3 short name (`THIRD_~1`): up to six characters of the long name, `~N`, an extension.
SHORT_NAME = re.compile(r"([^/~]{1,6})~[0-9]+(\.[^/.]{0,3})?")


def _short_name_glob(path: str, globs: Sequence[str]) -> str | None:
    """Returns a glob a component spelled as an 8.3 short name may stand for, or None."""
    parts = fold(path).split("/")
    for index, part in enumerate(parts):
        match = SHORT_NAME.fullmatch(part)
        if not match:
            continue
        stem = match.group(1).replace(" ", "")
        for glob in globs:
            glob_parts = fold(glob).split("/")
            if index < len(glob_parts) and (glob_parts[index].startswith(stem) or _WILDCARD.search(glob_parts[index])):
                return glob
    return None


def fold(path: str) -> str:
    """Returns the spelling a permissive checkout would use for `path`: NFC-normalized, case-folded,
    default-ignorable characters dropped (HFS+), backslashes as separators, and trailing dots and
    spaces of each component dropped (Windows)."""
    text = unicodedata.normalize("NFC", path.replace("\\", "/").translate(_IGNORABLE)).casefold()
    parts = [part.rstrip(" .") or part for part in text.split("/")]
    return "/".join(parts)


def protected_by(path: str, globs: Sequence[str]) -> str | None:
    """Returns the glob that protects `path` in any of its spellings, or None."""
    hit = matches(path, tuple(globs))
    if hit:
        return hit
    short = _short_name_glob(path, globs)
    if short:
        return short
    folded = fold(path)
    for glob in globs:
        if compile_glob(fold(glob)).fullmatch(folded):
            return glob
    return None


def reaches_protected(target: str, globs: Sequence[str]) -> str | None:
    """Returns a glob that `target` (a repository-relative file or directory) is or contains, or None.

    A directory counts when a protected path could lie below it: `oracles` reaches `oracles/**`,
    `tools` reaches `tools/**/BUILD.bazel`, and the repository root reaches everything; no
    directory but the root reaches `**/.gitattributes` (`_TREE_PATHS_ONLY`).
    """
    hit = protected_by(target, globs)
    if hit:
        return hit
    if target == "":
        return globs[0] if globs else None
    below = fold(target) + "/"
    for glob in globs:
        if glob in _TREE_PATHS_ONLY:
            continue
        literal = fold(_WILDCARD.split(glob, 1)[0])
        # The glob lies under the directory, or may match something under it (conservative).
        if literal.startswith(below) or (_WILDCARD.search(glob) and below.startswith(literal)):
            return glob
    return None


def resolve(path: str, links: Mapping[str, str]) -> str | None:
    """Resolves `path` through the symlinks of a tree, as a checkout would.

    Args:
        path: repository-relative path.
        links: symlink path -> its target, for every symlink in the tree.

    Returns:
        The repository-relative path reached ("" for the root), or None when a target is absolute,
        leaves the repository, or loops.
    """
    pending = [p for p in path.split("/")]
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        candidate = "/".join(done + [part])
        if candidate in links:
            hops += 1
            target = links[candidate]
            if hops > MAX_SYMLINK_HOPS or target.startswith("/"):
                return None
            pending = target.split("/") + pending
            continue
        done.append(part)
    return "/".join(done)


def symlink_problem(path: str, links: Mapping[str, str], globs: Sequence[str]) -> str | None:
    """Returns why the symlink at `path` touches protected content, or None when it does not."""
    target = links[path]
    reached = resolve(path, links)
    if reached is None:
        return f"is a symlink to {target!r}, which leaves the repository, is absolute or loops"
    glob = reaches_protected(reached, globs)
    if glob:
        return f"is a symlink to {target!r}, reaching {reached or '.'!r} which {glob!r} protects"
    return None


def special_entry_problem(
    path: str, head: Mapping[str, Entry], base: Mapping[str, Entry], links: Mapping[str, str], globs: Sequence[str]
) -> str | None:
    """Returns why a changed path is protected content in disguise (symlink or submodule), or None."""
    now, before = head.get(path), base.get(path)
    if GITLINK in (getattr(now, "mode", None), getattr(before, "mode", None)):
        return "is a submodule; its content is invisible to the gate"
    if now is not None and now.mode == SYMLINK:
        # The link's own name is a directory in a checkout: `.github -> billing/ci` puts files
        # under `.github/` that no diff line names.
        glob = reaches_protected(path, globs)
        if glob and protected_by(path, globs):
            return f"is a symlink standing where {glob!r} protects content"
        if glob:
            return (
                f"is a symlink standing where {glob!r} protects content: a checkout follows it as a "
                f"folder, which could hold files {glob!r} protects"
            )
        return symlink_problem(path, links, globs)
    return None
