"""The distribution metadata `init` gives a production package's `py_library` (`py_dist_info` in
tools/bazel/python.bzl): read from `pyproject.toml` (PEP 621's `[project]`, else Poetry's
`[tool.poetry]`), or named by `--dist-name`/`--dist-version` (docs/adopting.md, "Package metadata").
"""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

from tools.lock.lock_check import normalize
from tools.oracle_gate.authoring.init_text import DistMetadata
from tools.oracle_gate.errors import UsageError

# A version `py_dist_info` gets when pyproject.toml computes it at build time (`dynamic`).
DYNAMIC_VERSION = "0.0.0"
# PEP 508 names; PEP 440-ish versions (what a dist-info folder's name may hold).
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION = re.compile(r"[A-Za-z0-9.+!_-]+")


def _table(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        value = doc.get(key)
        if type(value) is not dict:
            return {}
        doc = value
    return doc


def _entry_points(project: dict[str, Any], poetry: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for group, table in (
        ("console_scripts", project.get("scripts")),
        ("gui_scripts", project.get("gui-scripts")),
        ("console_scripts", poetry.get("scripts")),
    ):
        if type(table) is dict:
            out.setdefault(group, []).extend(f"{k} = {v}" for k, v in table.items() if type(v) is str)
    for group, table in (project.get("entry-points") or {}).items():
        if type(table) is dict:
            out.setdefault(group, []).extend(f"{k} = {v}" for k, v in table.items() if type(v) is str)
    return {group: lines for group, lines in out.items() if lines}


# An entry point group (`console_scripts`, `pint.plugins`) and one `name = module:attr [extras]` line.
_GROUP = re.compile(r"[A-Za-z0-9_.-]+")
_ENTRY = re.compile(r"[A-Za-z0-9_.-]+ = [A-Za-z_][A-Za-z0-9_.]*(:[A-Za-z_][A-Za-z0-9_.]*)?( \[[A-Za-z0-9_, -]*\])?")


def _check_entry_points(points: dict[str, list[str]]) -> None:
    """Refuses an entry point group or line that a `.dist-info`'s `entry_points.txt` cannot hold as it
    is (PyPA's entry points specification: a group name, `name = module:attr`).

    Raises:
        UsageError: (exit 1) naming pyproject.toml and the group or line."""
    for group, lines in points.items():
        if not _GROUP.fullmatch(group):
            raise UsageError(f"pyproject.toml: entry point group {group!r} is not a group name")
        for line in lines:
            if not _ENTRY.fullmatch(line):
                raise UsageError(f"pyproject.toml: entry point {line!r} of {group!r} is not `name = module:attr`")


def dist_metadata(
    repo: str, dist_name: str | None = None, dist_version: str | None = None
) -> tuple[DistMetadata | None, list[str]]:
    """(metadata, notes) of the repository's distribution: from `pyproject.toml` at `repo`'s root,
    with `dist_name`/`dist_version` (the flags) overriding; (None, []) with neither.

    Raises:
        UsageError: (exit 1) for a pyproject.toml that is not TOML, a `dist_name` that is not the
            name pyproject.toml gives (PEP 503 normalized), or a name or version a dist-info folder
            cannot hold; one line naming the file and field.
    """
    path = os.path.join(repo, "pyproject.toml")
    doc: dict[str, Any] = {}
    if os.path.isfile(path):
        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"pyproject.toml: cannot read it for the package's metadata: {exc}") from None
    project, poetry = _table(doc, "project"), _table(doc, "tool", "poetry")
    given = project.get("name") or poetry.get("name")
    given = given if type(given) is str else None
    if dist_name and given and normalize(dist_name) != normalize(given):
        raise UsageError(f"--dist-name {dist_name!r} does not match pyproject.toml's name {given!r}")
    name = dist_name or given
    if not name:
        return None, []
    notes = []
    version = dist_version or project.get("version") or poetry.get("version")
    if type(version) is not str or not version:
        version = DYNAMIC_VERSION
        notes.append(
            f"{name}'s version is computed at build time (pyproject.toml's dynamic); its py_dist_info says "
            f"{DYNAMIC_VERSION} (pass --dist-version to name one)"
        )
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"{'--dist-name' if dist_name else 'pyproject.toml: field project.name'}: {name!r} is not a "
            "distribution name (PEP 508: letters, digits, '.', '_', '-')"
        )
    if not _VERSION.fullmatch(version):
        raise UsageError(
            f"{'--dist-version' if dist_version else 'pyproject.toml: field project.version'}: "
            f"{version!r} is not a version a dist-info folder can name"
        )
    source = "pyproject.toml" if given and not (dist_name and dist_version) else "init's --dist-name"
    points = _entry_points(project, poetry)
    _check_entry_points(points)
    return DistMetadata(name, version, points, source), notes
