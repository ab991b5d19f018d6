"""The statement `check --attest FILE` writes (docs/design.md section 14): two in-toto Statements v1
about the judged commit, one per line, each line the canonical JSON of its statement.

Line 1 is a SLSA Verification Summary Attestation v1 (predicate type VSA_TYPE): the verifier (the
gate's name, version and sources digest), the time, the repository and commit (`resourceUri`), the
claims in force (`policy`: the `oracles/` tree of the claims commit, with the policy's and the
manifest's blob ids), PASSED or FAILED, and, as its one input attestation, the sha256 of line 2.
Line 2 (predicate type RESULTS_TYPE) holds the per-id results: each id's outcome and observation
digest in each run, the salt, each hidden row's word, the checks, the violations by code, path
and id (no message, which may quote a sample), and the label that approved an oracle change with
the commit it was bound to. No sample, expected value or hidden blob is in either line.

Sources: in-toto Attestation Framework, Statement v1 (`_type` STATEMENT_TYPE, `subject`,
`predicateType`, `predicate`; digest names `gitCommit`, `gitTree`, `gitBlob`, `sha256`); SLSA
Verification Summary Attestation v1 (verifier, timeVerified, resourceUri, policy,
inputAttestations, verificationResult, verifiedLevels, slsaVersion).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate import __version__
from tools.oracle_gate.attest.sources import repository_uri, sources_digest
from tools.oracle_gate.check.findings import Report
from tools.oracle_gate.git.gitio import git

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
VSA_TYPE = "https://slsa.dev/verification_summary/v1"
# The per-id results' predicate type: a URN, as the gate has no web address of its own.
RESULTS_TYPE = "urn:oracle-gate:check-results:v1"
VERIFIER_ID = "urn:oracle-gate:check"
PASSED, FAILED = "PASSED", "FAILED"
# The VSA's `verifiedLevels` for a passed verdict: a custom level (the SLSA_ prefix is the SLSA
# tracks'): every claim in force held on what would land; a failed verdict's is `FAILED`, as the
# VSA specification says for a failed policy verification.
CLAIMS_LEVEL = "ORACLE_GATE_CLAIMS_HELD"
POLICY_FILE = "oracles/policy.toml"
MANIFEST_FILE = "oracles/MANIFEST.sha256"


@dataclass(frozen=True)
class Approval:
    """The label that approved an oracle change and the commit it was bound to (the HEAD the CI
    labels were checked against), for line 2's `approvals`."""

    label: str
    commit: str


def canonical(value: Any) -> bytes:
    """The one byte form of a statement line: JSON with sorted keys, no spaces, ASCII only, and a
    newline. Equal values give equal bytes, so `verify` can refuse any other form. Raises
    TypeError for a value JSON cannot hold."""
    return (json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False) + "\n").encode(
        "ascii"
    )


def statement_lines(
    report: Report,
    repo: str,
    environ: Mapping[str, str],
    *,
    approvals: tuple[Approval, ...] = (),
    now: datetime.datetime | None = None,
) -> bytes:
    """The two lines of the statement of `report` (see the module docstring).

    Args:
        report: a finished check of what would land (not `--head-only`, not from `--results`).
        repo: the repository's root, for its git objects and its URI (`sources.repository_uri`).
        environ: the environment (the CI's repository URL variables).
        approvals: the labels that approved an oracle change, with the commit each was bound to.
        now: the time of the verdict (default: now, UTC), written to the second.

    Raises:
        GitError: (exit 1) when a tree or blob id of the judged or the claims commit cannot be read.
    """
    judged = report.merge_result or report.head
    when = (now or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
    verdict = PASSED if report.exit_code == 0 else FAILED
    verifier = {"id": VERIFIER_ID, "version": {"oracle-gate": __version__, "oracle-gate-sources": sources_digest()}}
    time = when.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    uri = repository_uri(repo, environ)
    subject = subjects(uri, judged, object_id(repo, f"{judged}^{{tree}}"))
    results = _statement(subject, RESULTS_TYPE, _results(report, judged, verifier, time, verdict, approvals))
    vsa = {
        "verifier": verifier,
        "timeVerified": time,
        "resourceUri": f"{uri}@{judged}",
        "policy": policy_descriptor(repo, uri, report.claims),
        "inputAttestations": [
            {"name": "per-id results", "digest": {"sha256": hashlib.sha256(results).hexdigest()}},
        ],
        "verificationResult": verdict,
        "verifiedLevels": [CLAIMS_LEVEL if verdict == PASSED else FAILED],
        "slsaVersion": "1.0",
    }
    return _statement(subject, VSA_TYPE, vsa) + results


def subjects(uri: str, commit: str, tree: str) -> list[dict[str, Any]]:
    """The statements' `subject`: the judged commit and its tree. Raises nothing."""
    return [
        {"name": f"{uri}@{commit}", "digest": {"gitCommit": commit}},
        {"name": f"tree of {commit}", "digest": {"gitTree": tree}},
    ]


def policy_descriptor(repo: str, uri: str, claims: str) -> dict[str, Any]:
    """The VSA's `policy`: the `oracles/` tree of the claims commit (every claim, the policy and the
    manifest), with the policy's and the manifest's blob ids as annotations ("" when absent).

    Raises:
        GitError: (exit 1) when the commit has no `oracles/` tree.
    """
    return {
        "uri": f"{uri}@{claims}#oracles",
        "digest": {"gitTree": object_id(repo, f"{claims}:oracles")},
        "annotations": {
            "claimsCommit": claims,
            "policy": _blob_or_empty(repo, claims, POLICY_FILE),
            "manifest": _blob_or_empty(repo, claims, MANIFEST_FILE),
        },
    }


def object_id(repo: str, rev: str) -> str:
    """The full id of the git object `rev` names (`git rev-parse --verify`).

    Raises:
        GitError: (exit 1) when it names nothing.
    """
    return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev).decode().strip()


def _blob_or_empty(repo: str, commit: str, path: str) -> str:
    """The blob id of `path` at `commit`, or "" when the commit has no such file. Raises nothing."""
    listed = git(repo, "ls-tree", "-z", commit, "--", path).split(b"\0")[0].split(b"\t")[0].split()
    return listed[2].decode() if len(listed) == 3 and listed[1] == b"blob" else ""


def _statement(subject: list[dict[str, Any]], predicate_type: str, predicate: dict[str, Any]) -> bytes:
    """One statement line."""
    return canonical(
        {"_type": STATEMENT_TYPE, "subject": subject, "predicateType": predicate_type, "predicate": predicate}
    )


def _results(
    report: Report,
    judged: str,
    verifier: dict[str, Any],
    time: str,
    verdict: str,
    approvals: tuple[Approval, ...],
) -> dict[str, Any]:
    """Line 2's predicate (see the module docstring)."""
    runs: dict[str, Any] = {"workspace": _run(report.invariants, report.observed), "clean": None}
    if report.clean_observed is not None:
        runs["clean"] = _run(sorted(report.clean_observed), report.clean_observed)
    return {
        "verifier": verifier,
        "timeVerified": time,
        "verificationResult": verdict,
        "exitCode": report.exit_code,
        "base": report.base,
        "baseTip": report.tip,
        "mergeBase": report.merge_base,
        "head": report.head,
        "judged": judged,
        "claims": report.claims,
        "salt": report.salt,
        "checks": [{"name": c.name, "status": c.status} for c in report.checks],
        "violations": [{"code": v.code, "path": v.path, "id": v.id} for v in report.violations],
        "runs": runs,
        "hidden": hidden_words(report),
        "approvals": [{"label": a.label, "commit": a.commit} for a in approvals],
    }


def _run(ids: list[str], observed: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """One run's `id -> {outcome, digest}` ("missing" and "" for an id without a result)."""
    out = {}
    for ident in ids:
        seen = observed.get(ident)
        out[ident] = {"outcome": seen.outcome if seen else "missing", "digest": seen.digest if seen else ""}
    return out


def hidden_words(report: Report) -> dict[str, str]:
    """Each row with hidden samples, as one word: `passed`, `failed`, `clean-run-only` (the judge's
    word, the clean run's first) or `not-run` (`report.hidden_not_run`). Raises nothing."""
    words: dict[str, str] = {}
    for observed in (report.observed, report.clean_observed or {}):
        for ident, seen in observed.items():
            if seen.hidden:
                words[ident] = seen.hidden.replace(" ", "-")
    for ident in report.hidden_not_run:
        words[ident] = "not-run"
    return dict(sorted(words.items()))
