"""The judge: the oracle test's main. Decides every invariant from the expectations view.

Usage (the `oracle_test` rule passes these):

    judge.py --expectations EXPECTATIONS.json --observations OBSERVATIONS.json --log CALLER.log
             [--reference REFERENCE.json] [--generated GENERATED.json]
             [--hidden-expectations HIDDEN_EXPECTATIONS.json --hidden-observations HIDDEN_OBSERVATIONS.json]

The judge runs in its own test action and imports only the standard library and the gate package;
no production, harness or third-party module is ever loaded into this process. It reads the
expectations view (bounds and expected values, never given to production code), the reference view
(the expected values the reference implementations gave, `actions/reference_check.py`), the
generated samples the draw action wrote (the run's salt, and the inputs `round_trip` and `monotonic`
rows are judged by) and the observations the caller action wrote, parses each reply with the strict JSON rules of blobs
(`tools.oracle_gate.spec.samples.load_samples`), and judges each sample with `tools.oracle_gate.spec.verdicts`.

It writes one JUnit `testcase` per invariant, named `invariant[<id>]`, to `$XML_OUTPUT_FILE`, with
the properties `observation_sha256` (the row's observation digest), `sample_sha256` (the digest of
each sample's observation, space-separated, 16 hex digits each) and `salt`; one whose reply carried
a coverage record also `ran_functions` (the production functions the caller says the row's calls
entered, space-separated: untrusted, never judged, docs/design.md section 12); a failed one also has
`failing_samples` (`FailingSamples.to_text`: the first MAX_SHOWN failing samples with their index,
inputs, result, expected value and message, and how many failed) and a `failure` whose message is
the first failing sample's line and whose text shows them all. The observation digest is the sha256
of the canonical JSON (`canonical`) of the row's `results` list as the caller returned it, or of
`{"error": reason}` when the row has none; no message is part of it. A row with a
`hidden_sha256` also has the property `hidden`: `passed` or `failed` when the run held its hidden
samples (`--hidden-expectations`, `--hidden-observations`: the hidden caller's), `clean run only`
when it did not; nothing else of the hidden samples is written anywhere, and the hidden caller's
log is never read. The testcase's outcome and digest are the visible samples' alone: the gate, not
this exit code, turns a failed hidden part into exit 4. Exit code 0 when every invariant holds,
else 1. The contract: docs/design.md sections 5, 8 and 9.
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  # fmt: skip

import argparse
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from tools.oracle_gate.spec.judgement import (
    HIDDEN_ABSENT,
    HIDDEN_FAILED,
    HIDDEN_PASSED,
    MAX_MESSAGE_CHARS,
    Judgement,
    judge_all,
)
from tools.oracle_gate.spec.ran_record import RAN_PROPERTY, ran_text
from tools.oracle_gate.spec.samples import SampleError, load_samples

MAX_LOG_ECHO_BYTES = 256 << 10


# Characters XML 1.0 does not allow (its "Char" production, section 2.2): C0 controls but tab, line
# feed and carriage return, surrogates, U+FFFE and U+FFFF. A reason quotes production code's
# exception messages, which may hold any of them; written raw, they would make the file unreadable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 does not allow shown as a Python escape (`\\x1b`)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def to_junit(judged: Sequence[Judgement], salt: str, suite: str, hidden: Mapping[str, str] | None = None) -> bytes:
    """Renders judgements as JUnit XML, UTF-8 with a declaration and a trailing newline.

    Args:
        judged: the judgements (`judge_all`), one `invariant[<id>]` testcase each, in that order.
        salt: the run's salt, the `salt` property of every testcase.
        suite: the testsuite's name.
        hidden: id -> the word `hidden_outcomes` gives, the `hidden` property of that row's testcase.

    Every testcase has the properties `observation_sha256`, `sample_sha256` and `salt`; one whose
    reply carried a coverage record also `ran_functions` (`ran_record.ran_text`, never judged); a
    failed one also `failing_samples` (when samples failed) and a `failure` element: its message
    the first reason (cut at MAX_MESSAGE_CHARS), its text `Judgement.failure_lines`. Every character
    XML 1.0 does not allow is shown as an escape (`xml_text`). Raises nothing.
    """
    root = ET.Element("testsuites")
    failures = sum(1 for j in judged if not j.ok)
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(judged)), failures=str(failures), errors="0")
    for item in judged:
        case = ET.SubElement(node, "testcase", classname="oracle", name=f"invariant[{item.id}]")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="observation_sha256", value=item.digest)
        ET.SubElement(props, "property", name="sample_sha256", value=" ".join(item.sample_digests))
        ET.SubElement(props, "property", name="salt", value=xml_text(salt))
        if hidden and item.id in hidden:
            ET.SubElement(props, "property", name="hidden", value=hidden[item.id])
        if item.ran is not None:
            ET.SubElement(props, "property", name=RAN_PROPERTY, value=xml_text(ran_text(item.ran)))
        if item.failing.count:
            ET.SubElement(props, "property", name="failing_samples", value=item.failing.to_text())
        if not item.ok:
            message = xml_text(item.reasons[0][:MAX_MESSAGE_CHARS]) if item.reasons else "failed"
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = "\n".join(xml_text(line) for line in item.failure_lines())
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def hidden_outcomes(expectations: Any, observations: Any) -> dict[str, str]:
    """id -> HIDDEN_PASSED, HIDDEN_FAILED or HIDDEN_ABSENT for every row with hidden samples.

    Args:
        expectations: the parsed hidden expectations view (`pin_check.hidden_views`): its rows, and
            the `absent` ids whose hidden blob this run was not given; None when the judge was
            given none.
        observations: the parsed observations of the hidden caller, or None when unusable (then
            every row with hidden samples fails).

    Feedback on hidden samples is rationed to one word per row (docs/threat-model.md, "Hidden
    samples"): no index, input, result or expected value leaves this function. Raises nothing.
    """
    if type(expectations) is not dict or type(expectations.get("rows")) is not list:
        return {}
    out = {ident: HIDDEN_ABSENT for ident in expectations.get("absent", []) if type(ident) is str}
    if expectations["rows"]:
        judged, _, _ = judge_all(expectations, observations)
        out.update({item.id: HIDDEN_PASSED if item.ok else HIDDEN_FAILED for item in judged})
    return out


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
    parser.add_argument("--reference")
    parser.add_argument("--generated")
    parser.add_argument("--hidden-expectations")
    parser.add_argument("--hidden-observations")
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
    try:
        reference = _read_json(args.reference, strict=False) if args.reference else None
        generated = _read_json(args.generated, strict=False) if args.generated else None
    except (OSError, ValueError) as exc:
        print(f"judge: cannot read the reference view or the generated samples: {exc}")
        return 1
    judged, salt, notes = judge_all(expectations, observations, reference, generated)
    hidden = _hidden(args.hidden_expectations, args.hidden_observations)
    for note in notes:
        print(f"judge: {note}")
    for item in judged:
        print(
            f"{'passed' if item.ok else 'FAILED'} {item.id} observation_sha256={item.digest}"
            + (f" hidden: {hidden[item.id]}" if item.id in hidden else "")
        )
        for line in item.failure_lines():
            print(f"    {line}")
    if salt:
        print(f"salt: {salt} (replay with `check --salt {salt}`)")
    xml_path = environ.get("XML_OUTPUT_FILE")
    if xml_path:
        with open(xml_path, "wb") as f:
            f.write(to_junit(judged, salt, args.suite, hidden))
    _echo_log(args.log)
    return 0 if all(item.ok for item in judged) else 1


def _hidden(expectations_path: str | None, observations_path: str | None) -> dict[str, str]:
    """`hidden_outcomes` of the files given; {} without the hidden expectations view. An unusable
    hidden observations file fails every row with hidden samples, and is not described."""
    if not expectations_path:
        return {}
    try:
        expectations = _read_json(expectations_path, strict=False)
    except (OSError, ValueError):
        print("judge: cannot read the hidden expectations view")
        return {}
    try:
        observations = _read_json(observations_path, strict=True) if observations_path else None
    except (OSError, SampleError):
        observations = None
    return hidden_outcomes(expectations, observations)


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
