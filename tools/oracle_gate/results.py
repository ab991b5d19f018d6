"""Harness results: JUnit XML as pytest and Bazel write it, reduced to an id -> outcome map.

An invariant's outcome is the `testcase` whose name ends in `[<id>]` (DESIGN.md section 5).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from xml.parsers import expat
from collections.abc import Iterable

from tools.oracle_gate.errors import GateError

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
EXECUTED = (PASSED, FAILED)
# When one id appears more than once, the worst outcome wins.
_RANK = {SKIPPED: 0, PASSED: 1, FAILED: 2, ERROR: 3}
_ID_SUFFIX = re.compile(r"\[([a-z][a-z0-9_]{0,63})\]\Z")
# `status` attribute values (Bazel, Ant, Maven Surefire) that mean the case ran and passed.
_RAN = {"", "run", "passed", "pass", "success", "ok"}


def _local(tag: str) -> str:
    """An element's name without its XML namespace."""
    return tag.rsplit("}", 1)[-1]


def outcome_of(case: ET.Element) -> str:
    """Returns passed, failed, error or skipped for one `testcase` element.

    Child elements `error`, `failure`/`rerunFailure`/`flakyFailure` and `skipped` decide, in that
    order; a `status` or `result` attribute other than a passing one (e.g. `notrun`, `failed`)
    counts as skipped or failed. Unknown child elements are ignored.
    """
    tags = {_local(child.tag) for child in case}
    if tags & {"error", "rerunError", "flakyError"}:
        return ERROR
    if tags & {"failure", "rerunFailure", "flakyFailure"}:
        return FAILED
    if "skipped" in tags:
        return SKIPPED
    for attr in ("status", "result"):
        value = case.get(attr, "").strip().lower()
        if value in _RAN:
            continue
        if value in ("notrun", "skipped", "skip", "disabled", "ignored", "suppressed"):
            return SKIPPED
        if value in ("error", "errored"):
            return ERROR
        return FAILED
    return PASSED


def _no_doctype(*_args: object) -> None:
    raise ValueError("declares a DTD or entities; JUnit results never need one")


def parse_junit(data: bytes, source: str) -> dict[str, str]:
    """Maps invariant id -> outcome for every `testcase` named `...[<id>]` in one JUnit XML document.

    Raises:
        GateError: (exit 1) when the document is not well-formed XML.
    """
    scan = expat.ParserCreate()
    scan.StartDoctypeDeclHandler = _no_doctype
    scan.EntityDeclHandler = _no_doctype
    try:
        scan.Parse(data, True)
        root = ET.fromstring(data)
    except (ET.ParseError, expat.ExpatError) as exc:
        raise GateError(f"is not well-formed JUnit XML: {exc}", path=source) from None
    except ValueError as exc:
        raise GateError(str(exc), path=source) from None
    out: dict[str, str] = {}
    cases = [el for el in root.iter() if _local(el.tag) == "testcase"]
    for case in cases:
        if any(_local(inner.tag) == "testcase" for inner in case.iter() if inner is not case):
            raise GateError("nests a testcase inside another testcase", path=source)
    for case in cases:
        match = _ID_SUFFIX.search(case.get("name", ""))
        if not match:
            continue
        ident, outcome = match.group(1), outcome_of(case)
        if ident not in out or _RANK[outcome] > _RANK[out[ident]]:
            out[ident] = outcome
    return out


def result_files(paths: Iterable[str]) -> list[str]:
    """Expands result arguments: a file is kept, a directory yields every `test.xml` below it.

    Raises:
        GateError: (exit 1) for a path that does not exist or a directory with no test.xml.
    """
    files: list[str] = []
    for path in paths:
        if os.path.isfile(path):
            files.append(path)
        elif os.path.isdir(path):
            found = sorted(
                os.path.join(d, "test.xml") for d, _, names in os.walk(path) if "test.xml" in names
            )
            if not found:
                raise GateError("holds no test.xml", path=path)
            files.extend(found)
        else:
            raise GateError("does not exist", path=path, fix="pass a JUnit XML file or a Bazel test-log directory")
    return files


def merge(maps: Iterable[dict[str, str]]) -> dict[str, str]:
    """Merges id -> outcome maps; the worst outcome of an id wins."""
    out: dict[str, str] = {}
    for mapping in maps:
        for ident, outcome in mapping.items():
            if ident not in out or _RANK[outcome] > _RANK[out[ident]]:
                out[ident] = outcome
    return out


def load_results(paths: Iterable[str]) -> dict[str, str]:
    """Reads every result file (or test-log directory) and returns the merged id -> outcome map.

    Raises:
        GateError: (exit 1) for a missing or unreadable file or malformed XML.
    """
    maps = []
    for path in result_files(paths):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise GateError(f"cannot be read: {exc.strerror}", path=path) from None
        maps.append(parse_junit(data, path))
    return merge(maps)


def to_junit(outcomes: dict[str, str], suite: str) -> bytes:
    """Renders an id -> outcome map as JUnit XML, one `test_invariant[<id>]` case per id, so that
    `compare` and `check --results` read it like a harness's own file."""
    root = ET.Element("testsuites")
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(outcomes)))
    for ident in sorted(outcomes):
        case = ET.SubElement(node, "testcase", classname=suite, name=f"test_invariant[{ident}]")
        outcome = outcomes[ident]
        if outcome == FAILED:
            ET.SubElement(case, "failure", message="failed")
        elif outcome == ERROR:
            ET.SubElement(case, "error", message="error")
        elif outcome == SKIPPED:
            ET.SubElement(case, "skipped", message="skipped")
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def differences(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, str, str]]:
    """Returns (id, outcome in A, outcome in B) for every id whose outcome differs or that one side
    lacks ("missing"), sorted by id. Order, hostnames, timestamps and durations never matter: only
    the two id -> outcome maps are compared."""
    out = []
    for ident in sorted(set(a) | set(b)):
        left, right = a.get(ident, "missing"), b.get(ident, "missing")
        if left != right:
            out.append((ident, left, right))
    return out
