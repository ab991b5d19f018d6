"""The judge: the oracle test's main. Decides every invariant from sealed expectations.

Usage (the `oracle_test` rule passes these):

    judge.py --expectations EXPECTATIONS.json --observations OBSERVATIONS.json --log CALLER.log

The judge runs in its own test action and imports only the standard library and the gate package;
no production, harness or third-party module is ever loaded into this process. It reads the
expectations view (bounds and expected values, never given to production code) and the
observations the caller action wrote, parses each reply with the strict JSON rules of blobs
(`tools.oracle_gate.samples.load_samples`), and judges each sample with `tools.oracle_gate.verdicts`.

It writes one JUnit `testcase` per invariant, named `invariant[<id>]`, to `$XML_OUTPUT_FILE`, with
the properties `observation_sha256` (the row's observation digest), `sample_sha256` (the digest of
each sample's observation, space-separated, 16 hex digits each) and `salt`. The observation digest
is the sha256 of the canonical JSON (`canonical`) of the row's `results` list as the caller returned
it, or of `{"error": reason}` when the row has none. Exit code 0 when every invariant holds, else 1.
The contract: docs/design.md sections 8 and 9.
"""

from __future__ import annotations

import os
import sys

# Python puts this script's real folder (the source tree, not the runfiles) first on sys.path; an
# untracked file there must not shadow a module this process imports. os and sys are loaded already.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != _HERE]

import argparse
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate import verdicts
from tools.oracle_gate.samples import SampleError, load_samples

MAX_REASONS = 20
MAX_LOG_ECHO_BYTES = 256 << 10
SAMPLE_DIGEST_HEX = 16


def canonical(value: Any) -> bytes:
    """Canonical JSON of a plain value: sorted keys, no spaces, UTF-8, no NaN (the digest input)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8", "surrogatepass")


@dataclass
class Judgement:
    """The verdict on one invariant.

    Attributes:
        id: the invariant id.
        ok: True when every sample held.
        reasons: one line per failing sample (or one for the row), in sample order.
        digest: the observation digest (sha256 hex).
        sample_digests: one 16-hex-digit digest per sample observation, in order.
    """

    id: str
    ok: bool
    reasons: list[str] = field(default_factory=list)
    digest: str = ""
    sample_digests: list[str] = field(default_factory=list)


def _label(index: int, blob_samples: int, salt: str) -> str:
    if index < blob_samples:
        return f"sample {index}"
    return f"generated sample {index - blob_samples} (salt {salt})"


def judge_sample(expect: Mapping[str, Any], index: int, observed: Any) -> verdicts.Verdict:
    """Judges one sample's observation (`{"value": V}`, `{"raised": ...}` or `{"unplain": ...}`)."""
    if type(observed) is not dict or len(observed) != 1:
        return verdicts.Verdict(False, "malformed observation: expected one of value, raised, unplain")
    (key, value), = observed.items()
    if key == "raised":
        return verdicts.Verdict(False, f"raised {value}" if type(value) is str else "raised (malformed message)")
    if key == "unplain":
        return verdicts.Verdict(False, value if type(value) is str else "result is not plain JSON")
    if key != "value":
        return verdicts.Verdict(False, f"malformed observation: unknown key {key!r}")
    kind = expect["kind"]
    if kind == "bound":
        return verdicts.judge_bound(value, expect["min"], expect["max"])
    if kind == "exact_table":
        return verdicts.judge_exact(value, expect["expected"][index])
    if kind == "idempotent":
        if type(value) is not list or len(value) != expect["repeat"]:
            return verdicts.Verdict(False, f"malformed observation: expected {expect['repeat']} states")
        return verdicts.judge_idempotent(value)
    return verdicts.Verdict(False, f"unknown kind {kind!r}")


def judge_row(expect: Mapping[str, Any], observation: Mapping[str, Any] | None, salt: str) -> Judgement:
    """Judges one invariant from its expectations and the caller action's entry for it."""
    ident = expect["id"]
    if observation is None:
        return _row_failure(ident, "no observation: the caller action did not run this row")
    if "error" in observation:
        return _row_failure(ident, str(observation["error"]))
    try:
        reply = load_samples(str(observation.get("reply", "")).encode("utf-8", "surrogatepass"))
    except SampleError as exc:
        return _row_failure(ident, f"malformed reply: {exc}")
    if type(reply) is not dict or reply.get("id") != ident:
        return _row_failure(ident, "malformed reply: not an object for this row")
    if set(reply) == {"id", "error"} and type(reply["error"]) is str:
        return _row_failure(ident, reply["error"])
    results = reply.get("results")
    expected_count = expect["blob_samples"] + expect["generated"]
    if set(reply) != {"id", "results"} or type(results) is not list:
        return _row_failure(ident, "malformed reply: expected exactly id and results")
    if len(results) != expected_count:
        return _row_failure(ident, f"malformed reply: {len(results)} result(s) for {expected_count} sample(s)", results)
    out = Judgement(ident, True, digest=hashlib.sha256(canonical(results)).hexdigest(),
                    sample_digests=[hashlib.sha256(canonical(r)).hexdigest()[:SAMPLE_DIGEST_HEX] for r in results])
    for index, observed in enumerate(results):
        verdict = judge_sample(expect, index, observed)
        if not verdict.ok:
            out.ok = False
            out.reasons.append(f"{_label(index, expect['blob_samples'], salt)}: {verdict.reason}")
    return out


def _row_failure(ident: str, reason: str, results: Any = None) -> Judgement:
    body = results if results is not None else {"error": reason}
    return Judgement(ident, False, [reason], hashlib.sha256(canonical(body)).hexdigest())


def judge_all(expectations: Mapping[str, Any], observations: Any) -> tuple[list[Judgement], str, list[str]]:
    """Judges every row of the expectations view.

    Args:
        expectations: the parsed expectations view (trusted: written by the pin-check action).
        observations: the parsed observations document (untrusted: written next to production code).

    Returns:
        (judgements in id order, the salt the observations report, notes about the observations).
    """
    notes: list[str] = []
    by_id: dict[str, Mapping[str, Any]] = {}
    salt = ""
    if type(observations) is not dict or type(observations.get("rows")) is not list:
        notes.append("the observations file is malformed; every row fails")
    else:
        reported = observations.get("salt")
        salt = reported if type(reported) is str else ""
        for row in observations["rows"]:
            if type(row) is not dict or type(row.get("id")) is not str:
                notes.append("an observation row is malformed and was ignored")
                continue
            if row["id"] in by_id:
                notes.append(f"observation row {row['id']} appears twice; the row fails")
                by_id[row["id"]] = {"error": "two observations for one row"}
                continue
            by_id[row["id"]] = row
    declared = {row["id"] for row in expectations["rows"]}
    extra = sorted(set(by_id) - declared)
    if extra:
        notes.append(f"observations for ids no oracle declares were ignored: {', '.join(extra)}")
    judged = [judge_row(row, by_id.get(row["id"]), salt) for row in expectations["rows"]]
    return judged, salt, notes


# Characters XML 1.0 does not allow (its "Char" production, section 2.2): C0 controls but tab, line
# feed and carriage return, surrogates, U+FFFE and U+FFFF. A reason quotes production code's
# exception messages, which may hold any of them; written raw, they would make the file unreadable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 does not allow shown as a Python escape (`\\x1b`)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def to_junit(judged: Sequence[Judgement], salt: str, suite: str) -> bytes:
    """Renders judgements as JUnit XML: one `invariant[<id>]` testcase each, with digest properties."""
    root = ET.Element("testsuites")
    failures = sum(1 for j in judged if not j.ok)
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(judged)), failures=str(failures), errors="0")
    for item in judged:
        case = ET.SubElement(node, "testcase", classname="oracle", name=f"invariant[{item.id}]")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="observation_sha256", value=item.digest)
        ET.SubElement(props, "property", name="sample_sha256", value=" ".join(item.sample_digests))
        ET.SubElement(props, "property", name="salt", value=salt)
        if not item.ok:
            failure = ET.SubElement(case, "failure", message=xml_text(item.reasons[0][:500]) if item.reasons else "failed")
            failure.text = "\n".join(xml_text(r) for r in item.reasons[:MAX_REASONS])
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def _read_json(path: str, strict: bool) -> Any:
    with open(path, "rb") as f:
        data = f.read()
    if strict:
        return load_samples(data)
    return json.loads(data)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ) -> int:
    """Judges every invariant; returns 0 when all hold, 1 otherwise (or when an input is unreadable)."""
    parser = argparse.ArgumentParser(prog="judge")
    parser.add_argument("--expectations", required=True)
    parser.add_argument("--observations", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--suite", default=environ.get("TEST_TARGET", "oracle_test"))
    args = parser.parse_args(argv)
    try:
        expectations = _read_json(args.expectations, strict=False)
    except (OSError, ValueError) as exc:
        print(f"judge: cannot read the expectations view: {exc}")
        return 1
    try:
        observations = _read_json(args.observations, strict=True)
    except (OSError, SampleError) as exc:
        observations = None
        print(f"judge: the observations file is unusable: {exc}")
    judged, salt, notes = judge_all(expectations, observations)
    for note in notes:
        print(f"judge: {note}")
    for item in judged:
        print(f"{'passed' if item.ok else 'FAILED'} {item.id} observation_sha256={item.digest}")
        for reason in item.reasons[:MAX_REASONS]:
            print(f"    {reason}")
    if salt:
        print(f"salt: {salt} (replay with `check --salt {salt}`)")
    xml_path = environ.get("XML_OUTPUT_FILE")
    if xml_path:
        with open(xml_path, "wb") as f:
            f.write(to_junit(judged, salt, args.suite))
    _echo_log(args.log)
    return 0 if all(item.ok for item in judged) else 1


def _echo_log(path: str) -> None:
    """Copies the caller's stdout and stderr into the test log (at most MAX_LOG_ECHO_BYTES)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_LOG_ECHO_BYTES + 1)
    except OSError:
        return
    print("--- caller log (production code's stdout and stderr) ---")
    text = data[:MAX_LOG_ECHO_BYTES].decode("utf-8", "replace")
    print(text.encode("ascii", "backslashreplace").decode("ascii"))
    if len(data) > MAX_LOG_ECHO_BYTES:
        print(f"--- caller log cut at {MAX_LOG_ECHO_BYTES} bytes ---")


if __name__ == "__main__":
    raise SystemExit(main())
