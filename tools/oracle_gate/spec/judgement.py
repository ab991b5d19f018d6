"""Judging observations against sealed expectations: the verdict on each invariant from its
expectation row and the caller's observation row, and the observation digests (docs/design.md
sections 8 and 9). Pure: the judge action (`actions/judge.py`) runs it, and so do `vacuity` and
the benchmarks; nothing here reads a file or starts a process.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.oracle_gate.spec import verdicts
from tools.oracle_gate.spec.samples import SampleError, load_samples

# At most this many failing samples are listed per invariant.
MAX_REASONS = 20
# Hex digits of each sample's observation digest in the JUnit property `sample_sha256`.
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
