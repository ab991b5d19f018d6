"""The files of a tree that Bazel reads or runs before any sandbox exists, found from the tree itself.

`policy.ALWAYS_PROTECTED` names the fixed ones (the launcher's `tools/bazel`, `.bazelversion`,
`.bazeliskrc`, the rc files, `WORKSPACE*`, `MODULE.bazel`, `REPO.bazel`, `.bazelignore`). Those
files can name further files of the tree that Bazel then reads or runs at the same stage, outside
any sandbox, as the user who runs the gate:

- an rc file's `import` and `try-import` lines (Bazel's "bazelrc" documentation), read as rc files
  in turn, and every `%workspace%/PATH` among its options: `--workspace_status_command`,
  `--credential_helper` and `--override_repository` name programs and folders Bazel runs or reads.
  Bazel also takes a relative path there, from the workspace root (`try-import sub/extra.rc`,
  `--workspace_status_command=tools/status.sh`): every word of an rc file, and every part of it
  between `=` signs, that names a file of the tree counts too;
- the `.bzl` files WORKSPACE, MODULE.bazel and REPO.bazel load, and those they load in turn: their
  repository rules and module extensions run commands unsandboxed (`repository_ctx.execute`);
- the folders of `local_repository`, `new_local_repository` and `local_path_override` (a local
  module's own MODULE.bazel and extensions are evaluated too).

Other files such a file names by label stay the policy's business: a pip lock is read by a
repository rule that refuses anything but pins and hashes (docs/dependencies.md), a `build_file`
is Starlark that can only declare targets, and both may be the change's to edit.

`control_globs` returns them as protected globs, so a change to any of them is a protected change
(exit 2) like a change to WORKSPACE itself. The parse is deliberately loose (regular expressions
over the text, not a Starlark or rc parser): anything that looks like such a reference counts, so
a reference the parse misreads protects too much, never too little of what it finds.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping

from tools.oracle_gate.git.tree import Entry, Tree

# Where Bazel starts reading (the workspace's rc files, then the repository and module files).
RC_FILES = (".bazelrc", "user.bazelrc")
STARLARK_ROOTS = ("WORKSPACE", "WORKSPACE.bazel", "WORKSPACE.bzlmod", "MODULE.bazel", "REPO.bazel")
_IMPORT = re.compile(r"^\s*(?:try-)?import\s+(\S+)", re.MULTILINE)
_WORKSPACE_PATH = re.compile(r"%workspace%/([^\s\"',=]+)")
# A main-repository label in a string: "//pkg:name", "@//pkg:name", "@@//pkg:name", or ":name"
# (relative to the file's package).
_LABEL = re.compile(r"""["'](?:@@?)?//([A-Za-z0-9_./+-]*):([^"'\s]+)["']|["']:([^"'\s:/][^"'\s:]*)["']""")
_LOCAL_PATH = re.compile(r"""\bpath\s*=\s*["']([^"']+)["']""")
_MAX_FILES = 1000  # a bound on the walk; a tree with more control files than this is read in part


def _normal(path: str) -> str | None:
    """A repository-relative path, or None when it leaves the repository or is absolute."""
    if not path or path.startswith("/"):
        return None
    normal = posixpath.normpath(path)
    if normal == "." or normal.startswith("../") or normal == "..":
        return None
    return normal


def _text(listing: Mapping[str, Entry], tree: Tree, path: str) -> str | None:
    entry = listing.get(path)
    if entry is None or not entry.is_regular:
        return None
    return tree.read(entry).decode("utf-8", "replace")


def _rc_references(path: str, text: str, files: Mapping[str, Entry]) -> tuple[set[str], list[str]]:
    """(protected globs, rc files to read next) of one rc file's text; `files` is the tree's listing."""
    found: set[str] = set()
    follow: list[str] = []
    for match in _IMPORT.finditer(text):
        target = _normal(match.group(1).removeprefix("%workspace%/"))
        if target:
            found.add(target)
            follow.append(target)
    for match in _WORKSPACE_PATH.finditer(_IMPORT.sub("", text)):
        target = _normal(match.group(1))
        if target:
            found.update((target, f"{target}/**"))
    # A relative path Bazel resolves from the workspace root: any word, or part between `=` signs,
    # that names a file of the tree.
    options = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for word in options.split():
        for part in word.split("="):
            target = _normal(part.strip("\"'").removeprefix("%workspace%/"))
            if target and target in files:
                found.add(target)
    return found, follow


def _starlark_references(path: str, text: str, files: Mapping[str, Entry]) -> tuple[set[str], list[str]]:
    """(protected globs, .bzl files to read next) of one WORKSPACE, MODULE.bazel or .bzl text."""
    found: set[str] = set()
    follow: list[str] = []
    package = posixpath.dirname(path)
    for match in _LABEL.finditer(text):
        pkg, name, relative = match.groups()
        target = _normal(posixpath.join(pkg, name) if relative is None else posixpath.join(package, relative))
        if target and target.endswith(".bzl"):
            found.add(target)
            follow.append(target)
    if path in STARLARK_ROOTS:
        for match in _LOCAL_PATH.finditer(text):
            folder = _normal(match.group(1))
            if folder:
                found.update((folder, f"{folder}/**"))
    return found, follow


def _walk(
    tree: Tree,
    listing: Mapping[str, Entry],
    start: tuple[str, ...],
    references: Callable[[str, str, Mapping[str, Entry]], tuple[set[str], list[str]]],
) -> set[str]:
    """Every glob `references` finds in the files from `start` on, following what it says to read."""
    found: set[str] = set()
    queue = [p for p in start if p in listing]
    seen: set[str] = set()
    while queue and len(seen) < _MAX_FILES:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        more, follow = references(path, _text(listing, tree, path) or "", listing)
        found |= more
        queue.extend(follow)
    return found


def control_globs(tree: Tree, listing: Mapping[str, Entry]) -> tuple[str, ...]:
    """The protected globs for the files `tree`'s control files make Bazel read or run early.

    Args:
        tree: the tree (a commit's, via `tree.GitTree`).
        listing: `tree.files("")`: every path of the tree and its entry.

    Returns:
        Repository-relative paths (and `FOLDER/**` for local repositories), sorted; none of the
        fixed control files themselves (those are in `policy.ALWAYS_PROTECTED`).
    """
    found = _walk(tree, listing, RC_FILES, _rc_references) | _walk(tree, listing, STARLARK_ROOTS, _starlark_references)
    return tuple(sorted(found))
