"""`oracles/MANIFEST.sha256` (docs/design.md section 4): generated from `oracles/` only.

Format: comment lines (ignored by `sha256sum --check`) and one `<sha256>  <path>` line per file under
`oracles/` except the manifest itself, in byte order of the path. Each invariant id (a full match of
schema.ID_PATTERN) is listed as a comment line `# invariant <id> <oracle file>`.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Iterator, Mapping

from tools.oracle_gate.approval.policy import in_labelled_change
from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.files import replace_file
from tools.oracle_gate.git.objects import Trust
from tools.oracle_gate.git.transform import explain
from tools.oracle_gate.git.tree import Entry, Tree, WorkTree
from tools.oracle_gate.spec.schema import ID_PATTERN
from tools.oracle_gate.suite.loader import Oracles, load_oracles, shape_key

MANIFEST_PATH = "oracles/MANIFEST.sha256"
COMMITTED_REWRITE_FIX = (
    "do not regenerate the manifest or re-pin: commit the recorded bytes, not a converted copy "
    "(restore them from the commit that recorded them, with the conversion turned off)"
)
REWRITE_FIX = (
    "do not regenerate the manifest or re-pin: restore each file with `git cat-file blob HEAD:PATH > PATH` "
    "and remove the setting that rewrites them (core.autocrlf, .git/info/attributes, core.attributesFile); "
    "the repository's .gitattributes keeps oracles/ byte-exact"
)
HEADER = (
    "# oracle-gate manifest, schema 1. Generated from oracles/ by\n"
    "# `bazel run //tools:oracle_gate -- manifest --write`; do not edit by hand.\n"
    "# Verify the file hashes from the repository root: sha256sum --check oracles/MANIFEST.sha256\n"
)
HASH_LINE = re.compile(r"([0-9a-f]{64})  (oracles/.+)")


def manifest_fix(label: str | None) -> str:
    """How to make the manifest current: regenerate it under the label (`policy.in_labelled_change`;
    None when the policy in force is not known)."""
    return (
        "run the gate's manifest command (`python3 -m tools.oracle_gate manifest --write` in its checkout; in a "
        "repository that depends on it, `bazel run @oracle_gate//tools:oracle_gate -- manifest --write`) "
        f"{in_labelled_change(label)}"
    )


def render(tree: Tree) -> str:
    """Returns the manifest text for a tree's `oracles/`.

    The ids are those the oracle files declare, valid rows or not: the manifest records what the
    files say, and `check` judges them separately.

    Raises:
        OracleError: (exit 5) when a path under `oracles/` is a symlink or a submodule, or holds a
            character `sha256sum` would escape (newline, backslash).
    """
    return _render(tree, load_oracles(tree))


def write_manifest(tree: WorkTree) -> int:
    """Writes `render(tree)` to the work tree's manifest (through a temporary file, replaced in one
    step); returns the number of lines written.

    Raises:
        OracleError: (exit 5) when the manifest cannot be generated (`render`).
        OSError: when the file cannot be written.
    """
    text = render(tree)
    target = os.path.join(tree.root, MANIFEST_PATH)
    replace_file(target, text.encode("utf-8"))
    return text.count("\n")


def _render(tree: Tree, oracles: Oracles) -> str:
    """`render` with the tree's oracles already loaded."""
    listing = tree.files("oracles")
    if not listing:
        raise OracleError("there is no oracles/ directory (or it is empty); nothing to list", path="oracles/")
    lines = [HEADER]
    declared = {(f.path, i) for f in oracles.files for i in f.declared_ids if ID_PATTERN.fullmatch(i)}
    for source, ident in sorted(declared):
        lines.append(f"# invariant {ident} {source}\n")
    for path in sorted(listing, key=lambda p: p.encode("utf-8", "surrogateescape")):
        if path == MANIFEST_PATH:
            continue
        entry = listing[path]
        if not entry.is_regular:
            raise OracleError("is a symlink or submodule; everything under oracles/ must be a regular file", path=path)
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise OracleError(
                "has a name that is not UTF-8; rename it",
                path=path.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
            ) from None
        if any(c in path for c in "\n\r\\") or len(path.splitlines()) != 1 or path != path.strip():
            raise OracleError(
                "has a name sha256sum cannot list (a line break of any kind, backslash or edge spaces)", path=repr(path)
            )
        lines.append(f"{tree.digest(entry)}  {path}\n")
    return "".join(lines)


def checkout_rewrites(tree: Tree) -> list[str]:
    """Files under `oracles/` whose bytes in `tree` are the manifest's recorded bytes rewritten by a
    transformation (transform.py), as `path (what happened)`; the manifest itself counts when its
    own line endings were converted. In a work tree that is a checkout rewrite; in a tree read from
    git objects (`tree.committed`), bytes that were converted before they were committed.
    """
    listing = tree.files("oracles")
    entry = listing.get(MANIFEST_PATH)
    if entry is None or not entry.is_regular:
        return []
    data = tree.read(entry)
    out = []
    what = explain(data, lambda original: b"\r" not in original and original.startswith(HEADER.encode()))
    if what:
        out.append(f"{MANIFEST_PATH} ({what})")
    for pinned, path, found in listed_files(data, listing):
        content = tree.read(found)
        if hashlib.sha256(content).hexdigest() != pinned:
            what = explain(content, lambda original: hashlib.sha256(original).hexdigest() == pinned)  # noqa: B023 - explain calls it here
            if what:
                out.append(f"{path} ({what})")
    return out


def listed_files(data: bytes, listing: Mapping[str, Entry]) -> Iterator[tuple[str, str, Entry]]:
    """(sha256, path, entry) for each `<sha256>  <path>` line of manifest bytes `data` whose path is a
    regular file of `listing`. Lines end at "\n" (a "\r" before it is dropped) and nowhere else:
    str.splitlines would also split at U+0085, U+2028 and other characters a file name may hold,
    and so read a forged line out of a name."""
    for line in data.decode("utf-8", "replace").split("\n"):
        match = HASH_LINE.fullmatch(line.removesuffix("\r"))
        found = listing.get(match.group(2)) if match else None
        if match is not None and found is not None and found.is_regular:
            yield match.group(1), match.group(2), found


def manifest_problems(tree: Tree, *, label: str | None = None) -> list[OracleError]:
    """Returns why the tree's committed manifest is not current (empty when it is).

    The first differing line is quoted so the reader sees what changed. When the difference is a
    checkout transformation of committed bytes (`checkout_rewrites`), the problem says so and how
    to restore them, instead of advising to regenerate the manifest.

    Args:
        tree: the tree whose `oracles/` and manifest are compared.
        label: the label the fix names (`manifest_fix`); None: the tree's own policy's label, or
            the policy's-label phrase when the tree has no valid policy.

    Raises:
        GateError: (exit 1) only when the tree cannot be read.
    """
    listing = tree.files("oracles")
    try:
        # The rows and the policy only: the blobs are `check`'s own check (2), not the manifest's.
        oracles = load_oracles(tree, verify_blobs=False)
        expected = _render(tree, oracles)
    except OracleError as exc:
        return [OracleError(f"cannot be generated: {exc}", path=MANIFEST_PATH)]
    fix = manifest_fix(label if label is not None else oracles.policy.label if oracles.policy else None)
    entry = listing.get(MANIFEST_PATH)
    if entry is None:
        return [OracleError("is missing", path=MANIFEST_PATH, fix=fix)]
    if not entry.is_regular:
        return [OracleError("must be a regular file", path=MANIFEST_PATH, fix=fix)]
    actual = tree.read(entry).decode("utf-8", "replace")
    if actual == expected:
        return []
    diff = [
        line
        for line in difflib.unified_diff(actual.splitlines(), expected.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    first = diff[0] if diff else "(whitespace)"
    rewrites = checkout_rewrites(tree)
    if rewrites:
        where = (
            "the commit holds {n} file(s) whose recorded bytes were rewritten before they were committed"
            if tree.committed
            else "git rewrote {n} committed file(s) at checkout"
        )
        return [
            OracleError(
                f"does not match the files because {where.format(n=len(rewrites))}: "
                f"{'; '.join(rewrites[:3])}" + ("; ..." if len(rewrites) > 3 else ""),
                path=MANIFEST_PATH,
                fix=COMMITTED_REWRITE_FIX if tree.committed else REWRITE_FIX,
            )
        ]
    return [OracleError(f"is stale ({len(diff)} differing lines, first: {first!r})", path=MANIFEST_PATH, fix=fix)]


def vouch_for_base(tree: Tree, oracles: Oracles, trust: Trust) -> int:
    """Vouches in `trust` for the files of a merge base's `oracles/` (`Trust.vouch_digest`,
    `Trust.vouch`), so that `check` does not read them again where HEAD has the same objects.

    The base passed the gate when it was merged: its manifest lists the sha256 of every file under
    `oracles/`, and each row's blob has the kind's shape. So each manifest line vouches for the
    digest of the object at that path, and a row whose pin equals that digest vouches for the
    shape of its blob. A HEAD file with the same object id has the same bytes (git object ids are
    content-addressed), so its digest and shape need no reading; a row that pins another digest, or
    a file the base's manifest does not list, is read and checked as usual (docs/design.md section 4).

    Args:
        tree: the merge base (`tree.committed` must be True; a work tree vouches for nothing).
        oracles: its rows (`load_oracles(tree, verify_blobs=False)`).
        trust: the run's trust, written to.

    Returns:
        How many objects were vouched for.
    """
    if not tree.committed:
        return 0
    listing = tree.files("oracles")
    entry = listing.get(MANIFEST_PATH)
    if entry is None or not entry.is_regular:
        return 0
    count = 0
    for digest, _path, found in listed_files(tree.read(entry), listing):
        trust.vouch_digest(found.ref, digest)
        count += 1
    for invariant in oracles.invariants:
        blob = listing.get(invariant.blob)
        if blob is not None and blob.is_regular and trust.digest(blob.ref) == invariant.blob_sha256:
            trust.vouch(blob.ref, shape_key(invariant))
    return count
