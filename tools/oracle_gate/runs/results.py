"""Test results: JUnit XML as the judge, pytest and Bazel write it, reduced to per-id observations.

An invariant's outcome is the `testcase` whose name ends in `[<id>]` in the results of a test target
of the protected `oracles` package (docs/design.md section 5); the judge adds the
observation digests as testcase properties. Such testcases from any other target are ignored.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from xml.parsers import expat

from tools.oracle_gate.errors import GateError
from tools.oracle_gate.spec.judgement import HIDDEN_FAILED, HIDDEN_WORDS, MAX_MESSAGE_CHARS, FailingSamples
from tools.oracle_gate.spec.ran_record import RAN_PROPERTY, parse_ran_text, ran_text
from tools.oracle_gate.spec.schema import ID_PATTERN

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
EXECUTED = (PASSED, FAILED)
# When one id appears more than once, the worst outcome wins.
_RANK = {SKIPPED: 0, PASSED: 1, FAILED: 2, ERROR: 3}
# A testcase names an invariant when its name ends in `[<id>]`, the id as schema.ID_PATTERN allows.
_ID_SUFFIX = re.compile(rf"\[({ID_PATTERN.pattern})\]\Z")
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
        failing: the failing samples of a failed outcome, from the judge's `failing_samples`
            property (empty when the file has none, or one that does not parse). Never compared:
            two runs agree or disagree on outcomes and digests alone.
        ran: the production functions the caller says the row's calls entered, from the judge's
            `ran_functions` property (`ran_record.parse_ran_text`); None when the testcase has
            none, or one that does not parse. Untrusted (the change's process wrote it) and never
            compared: `check` uses it only to add a note or a failure (docs/design.md section 12).
        hidden: the judge's word on the row's hidden samples (`hidden` property): "passed",
            "failed", "clean run only", or "" for a row without them. Never part of the digest.
    """

    outcome: str
    digest: str = ""
    samples: tuple[str, ...] = ()
    source: str = ""
    message: str = ""
    failing: FailingSamples = FailingSamples()
    ran: tuple[str, ...] | None = None
    hidden: str = ""


def short_digest(found: Observed | None) -> str:
    """The first 12 hex digits of an observation digest for a table, or `-` when none was recorded."""
    return found.digest[:12] if found is not None and found.digest else "-"


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


@dataclass(frozen=True)
class FileResult:
    """What one JUnit XML file says.

    Attributes:
        observed: id -> Observed for every testcase named `...[<id>]`.
        failure: the worst failed or erroring testcase that names no id, as an Observed whose
            message says so, or None. Bazel writes such a testcase (named after the target) when a
            test crashes, times out or exits non-zero without writing its own XML.
    """

    observed: dict[str, Observed]
    failure: Observed | None = None


def read_result(data: bytes, source: str) -> FileResult:
    """Reads one JUnit XML document: the `[<id>]` testcases and any failure that names no id.

    The digests come from the testcase's `observation_sha256` and `sample_sha256` properties
    (written by the judge, `actions/judge.py`). When an id appears more than once, the worst outcome
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
    unnamed: Observed | None = None
    cases = [el for el in root.iter() if _local(el.tag) == "testcase"]
    for case in cases:
        if any(_local(inner.tag) == "testcase" for inner in case.iter() if inner is not case):
            raise GateError("nests a testcase inside another testcase", path=source)
    for case in cases:
        match = _ID_SUFFIX.search(case.get("name", ""))
        if not match:
            outcome = outcome_of(case)
            if outcome in (FAILED, ERROR):
                found = Observed(
                    outcome,
                    source=source,
                    message=f"testcase {case.get('name', '')!r} {outcome} and names "
                    "no invariant (a crash, time-out or failed attempt of the test target)",
                )
                if _worse(found, unnamed):
                    unnamed = found
            continue
        props = _properties(case)
        failure = next((c for c in case if _local(c.tag) in ("failure", "error")), None)
        outcome = outcome_of(case)
        failing = FailingSamples.from_text(props.get("failing_samples", "")) if outcome == FAILED else FailingSamples()
        found = Observed(
            outcome,
            props.get("observation_sha256", ""),
            tuple(props.get("sample_sha256", "").split()),
            source,
            failure.get("message", "") if failure is not None else "",
            failing,
            parse_ran_text(props.get(RAN_PROPERTY)),
            _hidden_word(props.get("hidden", "")),
        )
        if _worse(found, out.get(match.group(1))):
            out[match.group(1)] = found
    return FileResult(out, unnamed)


def _hidden_word(value: str) -> str:
    """The judge's word of a testcase's `hidden` property (judgement.HIDDEN_WORDS), "" for none;
    any other value is read as a failed hidden part."""
    return value if value in HIDDEN_WORDS or not value else HIDDEN_FAILED


def judge_target(files: Iterable[FileResult]) -> dict[str, Observed]:
    """id -> Observed over all result files of one test target (its attempts, shards and runs).

    The worst outcome of an id wins. A failure that names no id (`FileResult.failure`) belongs to
    the whole target: every id of the target takes it, so a crashed attempt before a passing retry
    still fails each id the target reports.
    """
    files = list(files)
    merged = merge_observed(f.observed for f in files)
    failure: Observed | None = None
    for f in files:
        if f.failure is not None and _worse(f.failure, failure):
            failure = f.failure
    if failure is not None:
        for ident, found in merged.items():
            if _worse(failure, found):
                merged[ident] = failure
    return merged


def is_oracle_result(path: str, given: str) -> bool:
    """True when a test.xml found under the directory `given` belongs to a test target of the
    protected `oracles` package: its path below `given` starts with `oracles/`, or `given` is the
    `oracles` folder of a test-log directory or a folder below it (`.../testlogs/oracles/...`)."""
    rel = os.path.relpath(path, given).replace(os.sep, "/")
    if rel.startswith("oracles/") or os.path.basename(os.path.abspath(given)) == "oracles":
        return True
    return "/testlogs/oracles/" in os.path.realpath(given).replace(os.sep, "/") + "/"


# What Bazel writes for one test action (docs/design.md section 5), measured on Bazel 4.2.3:
#   <package>/<target>/test.xml                     the action's final attempt
#   <package>/<target>/test_attempts/attempt_N.xml  earlier attempts (flaky = True, --flaky_test_attempts)
#   <package>/<target>/shard_I_of_M/...             one directory per shard (shard_count)
#   <package>/<target>/run_J_of_K/...               one per run (--runs_per_test)
#   <package>/<target>/shard_I_of_M_run_J_of_K/...  both
# beside logs and the test's undeclared outputs (`test.outputs`, `attempt_N.outputs`, ...), which the
# test itself writes and which are therefore never read as results.
_SHARD_RUN = re.compile(r"(?:shard_(\d+)_of_(\d+))?(?:_?run_(\d+)_of_(\d+))?\Z")
_ATTEMPT = re.compile(r"attempt_([1-9][0-9]*)\.([a-z_]+)\Z")  # Bazel numbers attempts 1, 2, ...
_TEST_OUTPUTS = {"test.outputs", "test.outputs_manifest", "test.raw_splitlogs"}
_ATTEMPT_OUTPUTS = {"outputs", "outputs_manifest", "raw_splitlogs"}
_RESTORE = "remove the test-log directory (or run `bazel clean`) and run the tests again"


def _shard_run(name: str) -> tuple[int, int, int, int] | None:
    """(shard, shards, run, runs) for a `shard_I_of_M`, `run_J_of_K` or `shard_I_of_M_run_J_of_K`
    directory name (an absent part is 1 of 1), else None."""
    match = _SHARD_RUN.match(name)
    if not name or not match or (match.group(1) and match.group(3) and "_run_" not in name):
        return None
    shard, shards, run, runs = (int(g) if g else 1 for g in match.groups())
    if name.startswith("_") or not (1 <= shard <= shards and 1 <= run <= runs):
        return None
    return shard, shards, run, runs


def _attempt_files(folder: str) -> list[str]:
    """The `attempt_N.xml` files of a `test_attempts` directory, in attempt order.

    Raises:
        GateError: (exit 1) for an entry Bazel does not write there, or an attempt with a log but no
            test.xml (its outcome would be unknown).
    """
    xml: dict[int, str] = {}
    logs: set[int] = set()
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        match = _ATTEMPT.match(name)
        kind = match.group(2) if match else ""
        if match and kind == "xml" and os.path.isfile(path) and not os.path.islink(path):
            xml[int(match.group(1))] = path
        elif match and kind == "log":
            logs.add(int(match.group(1)))
        elif match and kind in _ATTEMPT_OUTPUTS and os.path.isdir(path) and not os.path.islink(path):
            continue  # The attempt's undeclared outputs: written by the test, never results.
        else:
            raise GateError(
                f"holds {name!r}, which Bazel does not write there; the gate cannot tell which attempt it belongs to",
                path=folder,
                fix=_RESTORE,
            )
    for number in sorted(logs - set(xml)):
        raise GateError(
            f"attempt {number} has a log but no attempt_{number}.xml; its outcome is unknown", path=folder, fix=_RESTORE
        )
    if sorted(xml) != list(range(1, len(xml) + 1)):
        lacking = min(set(range(1, max(xml) + 1)) - set(xml))
        raise GateError(
            f"lacks attempt_{lacking}.xml although a later attempt is there; its outcome is unknown",
            path=folder,
            fix=_RESTORE,
        )
    return [xml[n] for n in sorted(xml)]


def logged_results(given: str) -> list[str]:
    """Every result file of a Bazel test-log directory (`bazel-testlogs`, or any folder below it):
    each test action's final `test.xml` and every earlier attempt's `test_attempts/attempt_N.xml`,
    over all shards and runs, so that an attempt that failed before a retry passed is never lost.

    Raises:
        GateError: (exit 1) when the layout is not one the gate understands, so that results of
            different invocations cannot mix: an XML file other than these; a `test_attempts`
            folder without the final test.xml beside it; a target folder holding both a test.xml and
            shard or run folders, or shard/run folders of different counts, or an incomplete set of
            them; a symbolic link; or no test.xml at all.
    """

    def unreadable(error: OSError) -> None:
        raise GateError(f"cannot be read ({error.strerror}); its results would be missed", path=error.filename or given)

    found: list[str] = []
    for folder, dirs, names in os.walk(given, onerror=unreadable):
        for name in list(dirs):
            if name in _TEST_OUTPUTS:
                dirs.remove(name)
            elif os.path.islink(os.path.join(folder, name)):
                raise GateError(f"holds a symbolic link {name!r} to a folder; Bazel writes none there", path=folder)
        if os.path.basename(folder) == "test_attempts":
            dirs.clear()
            if "test.xml" not in os.listdir(os.path.dirname(folder)):
                raise GateError("has no test.xml beside it, so the final attempt is missing", path=folder, fix=_RESTORE)
            found.extend(_attempt_files(folder))
            continue
        for name in names:
            path = os.path.join(folder, name)
            if name == "test.xml":
                if os.path.islink(path) or not os.path.isfile(path):
                    raise GateError("is not a regular file", path=path)
                found.append(path)
            elif name.lower().endswith(".xml"):
                raise GateError(
                    "is not a file Bazel writes to a test-log directory (only test.xml and "
                    "test_attempts/attempt_N.xml are results)",
                    path=path,
                    fix=_RESTORE,
                )
        _check_shards_and_runs(folder, dirs, "test.xml" in names)
    if not found:
        raise GateError("holds no test.xml", path=given)
    return sorted(found)


def _check_shards_and_runs(folder: str, dirs: Sequence[str], has_test_xml: bool) -> None:
    """Raises GateError (exit 1) unless a target folder's shard/run folders are one complete set
    from one invocation (and there is no test.xml of an unsharded run beside them)."""
    parts = {name: _shard_run(name) for name in dirs}
    sets = {name: p for name, p in parts.items() if p is not None}
    if not sets:
        return
    if has_test_xml:
        raise GateError(
            f"holds both test.xml and {sorted(sets)[0]}/: results of different invocations "
            "(a sharded or repeated run beside an unsharded one)",
            path=folder,
            fix=_RESTORE,
        )
    shapes = {(p[1], p[3], _shape(name)) for name, p in sets.items()}
    if len(shapes) > 1:
        raise GateError(
            f"holds shard/run folders of different invocations: {', '.join(sorted(sets))}", path=folder, fix=_RESTORE
        )
    ((shards, runs, _),) = shapes
    for name in sorted(sets):
        if not os.path.isfile(os.path.join(folder, name, "test.xml")):
            raise GateError(f"{name}/ holds no test.xml; that shard or run has no outcome", path=folder, fix=_RESTORE)
    have = {(p[0], p[2]) for p in sets.values()}
    lacking = sorted({(i, j) for i in range(1, shards + 1) for j in range(1, runs + 1)} - have)
    if lacking:
        name = next(n for n, p in sets.items())
        raise GateError(
            f"lacks {len(lacking)} of the {shards * runs} shard/run folder(s) that {name}/ belongs to "
            f"(e.g. shard {lacking[0][0]}, run {lacking[0][1]}); their outcomes are unknown",
            path=folder,
            fix=_RESTORE,
        )


def _shape(name: str) -> str:
    return ("shard" if name.startswith("shard_") else "") + ("run" if "run_" in name else "")


def result_files(paths: Iterable[str]) -> list[tuple[str, bool]]:
    """Expands result arguments into (file, counts) pairs.

    A file is kept and counts as the oracle test's results (the operator chose it). A directory is
    a Bazel test-log directory, read with `logged_results`; a file counts only when it belongs to a
    target of the `oracles` package (`is_oracle_result`).

    Raises:
        GateError: (exit 1) for a path that does not exist or a directory whose layout the gate
            does not understand (`logged_results`).
    """
    files: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isfile(path):
            files.append((path, True))
        elif os.path.isdir(path):
            files.extend((f, is_oracle_result(f, path)) for f in logged_results(path))
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


def load_observed(paths: Iterable[str]) -> Results:
    """Reads every result file (or test-log directory); see `result_files` for which ones count.

    Raises:
        GateError: (exit 1) for a missing or unreadable file or malformed XML.
    """
    targets: dict[str, list[FileResult]] = {}
    out = Results()
    for path, counts in result_files(paths):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise GateError(f"cannot be read: {exc.strerror}", path=path) from None
        found = read_result(data, path)
        if counts:
            targets.setdefault(target_folder(path), []).append(found)
        elif found.observed:
            out.ignored[path] = sorted(found.observed)
    out.observed = merge_observed(judge_target(files) for files in targets.values())
    return out


def target_folder(path: str) -> str:
    """The test target a result file belongs to, for grouping: its folder in a test-log directory
    (above `test_attempts/` and any shard or run folder), or the file itself when named directly."""
    folder = os.path.dirname(path)
    if os.path.basename(path) != "test.xml" and os.path.basename(folder) != "test_attempts":
        return path
    if os.path.basename(folder) == "test_attempts":
        folder = os.path.dirname(folder)
    if _shard_run(os.path.basename(folder)):
        folder = os.path.dirname(folder)
    return folder


# Characters XML 1.0 does not allow (as actions/judge.py `xml_text`); a message read from a result
# file holds none (XML could not carry them), but one made by the gate might.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """`text` with every character XML 1.0 does not allow shown as a Python escape (`\\x1b`)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def to_junit(observed: dict[str, Observed], suite: str) -> bytes:
    """Renders an id -> Observed map as JUnit XML, UTF-8 with a declaration and a trailing newline:
    one `invariant[<id>]` case per id with the digest properties, so that `compare` and
    `check --results` read it like the judge's own file. A failed id keeps its message and its
    failing samples (the `failing_samples` property, and their lines as the failure's text); an
    id with a coverage record keeps it (`ran_functions`).
    Raises nothing."""
    root = ET.Element("testsuites")
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(observed)))
    for ident in sorted(observed):
        found = observed[ident]
        case = ET.SubElement(node, "testcase", classname=suite, name=f"invariant[{ident}]")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="observation_sha256", value=xml_safe(found.digest))
        ET.SubElement(props, "property", name="sample_sha256", value=xml_safe(" ".join(found.samples)))
        if found.ran is not None:
            ET.SubElement(props, "property", name=RAN_PROPERTY, value=xml_safe(ran_text(found.ran)))
        if found.hidden:
            ET.SubElement(props, "property", name="hidden", value=found.hidden)
        if found.failing.count:
            ET.SubElement(props, "property", name="failing_samples", value=found.failing.to_text())
        if found.outcome == FAILED:
            failure = ET.SubElement(case, "failure", message=xml_safe(found.message[:MAX_MESSAGE_CHARS] or "failed"))
            failure.text = "\n".join(xml_safe(line) for line in found.failing.lines()) or None
        elif found.outcome == ERROR:
            ET.SubElement(case, "error", message=xml_safe(found.message[:MAX_MESSAGE_CHARS] or "error"))
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
    """Names the first sample whose observation digests differ, e.g. "sample 3 (0-based, over blob
    then generated samples)": its index among the row's results, which hold the blob's samples and
    then the generated ones; or a count mismatch, or "the row as a whole"."""
    for index, (x, y) in enumerate(zip(a.samples, b.samples, strict=False)):
        if x != y:
            return f"sample {index} (0-based, over blob then generated samples)"
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
            out.append(
                Difference(ident, lo, ro, f"observation digests differ, first at {first_differing_sample(left, right)}")
            )
    return out
