"""Test results: JUnit XML as the judge, pytest and Bazel write it, reduced to per-id observations.

An invariant's outcome is the `testcase` whose name ends in `[<id>]` in the results of a test target
of the protected `oracles` package (docs/design.md section 5); the judge adds the
observation digests as testcase properties. Such testcases from any other target are ignored.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from xml.parsers import expat
from collections.abc import Iterable
from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class Observed:
    """One invariant's result in one run.

    Attributes:
        outcome: passed, failed, error or skipped.
        digest: the observation digest the judge recorded (`observation_sha256`), or "".
        samples: the per-sample digests (`sample_sha256`), in sample order.
        source: the result file it was read from.
        message: the `message` of the testcase's failure or error element (the judge puts the first
            failing sample there), or "".
    """

    outcome: str
    digest: str = ""
    samples: tuple[str, ...] = ()
    source: str = ""
    message: str = ""


def _properties(case: ET.Element) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in case:
        if _local(node.tag) != "properties":
            continue
        for prop in node:
            if _local(prop.tag) == "property" and prop.get("name") and prop.get("name") not in out:
                out[prop.get("name", "")] = prop.get("value", "")
    return out


def _worse(new: Observed, old: Observed | None) -> bool:
    return old is None or _RANK[new.outcome] > _RANK[old.outcome]


def parse_observed(data: bytes, source: str) -> dict[str, Observed]:
    """Maps invariant id -> Observed for every `testcase` named `...[<id>]` in one JUnit XML document.

    The digests come from the testcase's `observation_sha256` and `sample_sha256` properties
    (written by the judge, `runner/judge.py`). When an id appears more than once, the worst outcome
    wins; of equal outcomes the first is kept.

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
    out: dict[str, Observed] = {}
    cases = [el for el in root.iter() if _local(el.tag) == "testcase"]
    for case in cases:
        if any(_local(inner.tag) == "testcase" for inner in case.iter() if inner is not case):
            raise GateError("nests a testcase inside another testcase", path=source)
    for case in cases:
        match = _ID_SUFFIX.search(case.get("name", ""))
        if not match:
            continue
        props = _properties(case)
        failure = next((c for c in case if _local(c.tag) in ("failure", "error")), None)
        found = Observed(outcome_of(case), props.get("observation_sha256", ""),
                         tuple(props.get("sample_sha256", "").split()), source,
                         failure.get("message", "") if failure is not None else "")
        if _worse(found, out.get(match.group(1))):
            out[match.group(1)] = found
    return out


def parse_junit(data: bytes, source: str) -> dict[str, str]:
    """Maps invariant id -> outcome for every `testcase` named `...[<id>]` in one JUnit XML document.

    Raises:
        GateError: (exit 1) when the document is not well-formed XML.
    """
    return {ident: found.outcome for ident, found in parse_observed(data, source).items()}


def is_oracle_result(path: str, given: str) -> bool:
    """True when a test.xml found under the directory `given` belongs to a test target of the
    protected `oracles` package: its path below `given` starts with `oracles/`, or `given` itself is
    the `oracles` folder of a test-log directory."""
    rel = os.path.relpath(path, given).replace(os.sep, "/")
    return rel.startswith("oracles/") or os.path.basename(os.path.abspath(given)) == "oracles"


def result_files(paths: Iterable[str]) -> list[tuple[str, bool]]:
    """Expands result arguments into (file, counts) pairs.

    A file is kept and counts as the oracle test's results (the operator chose it). A directory is
    a Bazel test-log directory: every `test.xml` below it is read, and counts only when it belongs
    to a target of the `oracles` package (`is_oracle_result`).

    Raises:
        GateError: (exit 1) for a path that does not exist or a directory with no test.xml.
    """
    files: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isfile(path):
            files.append((path, True))
        elif os.path.isdir(path):
            found = sorted(
                os.path.join(d, "test.xml") for d, _, names in os.walk(path) if "test.xml" in names
            )
            if not found:
                raise GateError("holds no test.xml", path=path)
            files.extend((f, is_oracle_result(f, path)) for f in found)
        else:
            raise GateError("does not exist", path=path, fix="pass a JUnit XML file or a Bazel test-log directory")
    return files


def merge_observed(maps: Iterable[dict[str, Observed]]) -> dict[str, Observed]:
    """Merges id -> Observed maps; the worst outcome of an id wins, the first of equal ones."""
    out: dict[str, Observed] = {}
    for mapping in maps:
        for ident, found in mapping.items():
            if _worse(found, out.get(ident)):
                out[ident] = found
    return out


@dataclass
class Results:
    """What a set of result files says.

    Attributes:
        observed: id -> Observed from the files that count (the oracle test's).
        ignored: result file -> ids its `[<id>]` testcases named, for files that do not count.
    """

    observed: dict[str, Observed] = field(default_factory=dict)
    ignored: dict[str, list[str]] = field(default_factory=dict)

    @property
    def outcomes(self) -> dict[str, str]:
        """id -> outcome of the files that count."""
        return {ident: found.outcome for ident, found in self.observed.items()}


def load_observed(paths: Iterable[str]) -> Results:
    """Reads every result file (or test-log directory); see `result_files` for which ones count.

    Raises:
        GateError: (exit 1) for a missing or unreadable file or malformed XML.
    """
    counted = []
    out = Results()
    for path, counts in result_files(paths):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise GateError(f"cannot be read: {exc.strerror}", path=path) from None
        found = parse_observed(data, path)
        if counts:
            counted.append(found)
        elif found:
            out.ignored[path] = sorted(found)
    out.observed = merge_observed(counted)
    return out


def load_results(paths: Iterable[str]) -> dict[str, str]:
    """Reads every result file (or test-log directory) and returns the merged id -> outcome map of
    the files that count (`result_files`).

    Raises:
        GateError: (exit 1) for a missing or unreadable file or malformed XML.
    """
    return load_observed(paths).outcomes


def to_junit(observed: dict[str, Observed], suite: str) -> bytes:
    """Renders an id -> Observed map as JUnit XML, one `invariant[<id>]` case per id with the
    digest properties, so that `compare` and `check --results` read it like the judge's own file."""
    root = ET.Element("testsuites")
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(observed)))
    for ident in sorted(observed):
        found = observed[ident]
        case = ET.SubElement(node, "testcase", classname=suite, name=f"invariant[{ident}]")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="observation_sha256", value=found.digest)
        ET.SubElement(props, "property", name="sample_sha256", value=" ".join(found.samples))
        if found.outcome == FAILED:
            ET.SubElement(case, "failure", message="failed")
        elif found.outcome == ERROR:
            ET.SubElement(case, "error", message="error")
        elif found.outcome == SKIPPED:
            ET.SubElement(case, "skipped", message="skipped")
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


@dataclass(frozen=True)
class Difference:
    """One id on which two runs disagree: the outcome on each side ("missing" when absent) and why."""

    id: str
    left: str
    right: str
    reason: str


def first_differing_sample(a: Observed, b: Observed) -> str:
    """Names the first sample whose observation digests differ, e.g. "sample 3", or a count mismatch."""
    for index, (x, y) in enumerate(zip(a.samples, b.samples)):
        if x != y:
            return f"sample {index}"
    if len(a.samples) != len(b.samples):
        return f"{len(a.samples)} vs {len(b.samples)} sample(s)"
    return "the row as a whole"


def differences(a: dict[str, Observed], b: dict[str, Observed]) -> list[Difference]:
    """Every id whose outcome or observation digest differs between two runs, or that one lacks.

    Order, hostnames, timestamps and durations never matter: only id -> (outcome, digest). A digest
    is compared only when both runs recorded one.
    """
    out = []
    for ident in sorted(set(a) | set(b)):
        left, right = a.get(ident), b.get(ident)
        lo = left.outcome if left else "missing"
        ro = right.outcome if right else "missing"
        if lo != ro:
            out.append(Difference(ident, lo, ro, "outcomes differ"))
        elif left and right and left.digest and right.digest and left.digest != right.digest:
            out.append(Difference(ident, lo, ro, f"observation digests differ, first at {first_differing_sample(left, right)}"))
    return out
