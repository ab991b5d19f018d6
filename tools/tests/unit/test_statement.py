"""attest/statement.py: the two statement lines of a check, from a report of real commits."""

from __future__ import annotations

import hashlib
import json

from tools.oracle_gate.attest.schema import RESULTS_SCHEMA, VSA_SCHEMA, schema_problem
from tools.oracle_gate.attest.statement import (
    CLAIMS_LEVEL,
    RESULTS_TYPE,
    STATEMENT_TYPE,
    VSA_TYPE,
    Approval,
    canonical,
    statement_lines,
)
from tools.testing.reports import NOW, SECRET, report_of


def lines(project, report, **kwargs) -> list[dict]:
    data = statement_lines(report, str(project.path), {}, now=NOW, **kwargs)
    return [json.loads(line) for line in data.decode().splitlines()]


def test_two_canonical_statements_the_first_naming_the_second_by_digest(project):
    data = statement_lines(report_of(project), str(project.path), {}, now=NOW)
    first, second = data.split(b"\n")[:2]
    assert data.count(b"\n") == 2 and data.endswith(b"\n")
    vsa, results = json.loads(first), json.loads(second)
    assert canonical(vsa) == first + b"\n" and canonical(results) == second + b"\n"
    assert vsa["_type"] == results["_type"] == STATEMENT_TYPE
    assert (vsa["predicateType"], results["predicateType"]) == (VSA_TYPE, RESULTS_TYPE)
    digest = vsa["predicate"]["inputAttestations"][0]["digest"]["sha256"]
    assert digest == hashlib.sha256(second + b"\n").hexdigest()


def test_the_json_schema_pins_the_shape_of_both_lines(project):
    vsa, results = lines(project, report_of(project))
    assert schema_problem(vsa, VSA_SCHEMA) is None
    assert schema_problem(results, RESULTS_SCHEMA) is None
    # Closed objects: any field the gate does not write is refused, as is any missing one.
    vsa["predicate"]["extra"] = 1
    assert "has 'extra'" in schema_problem(vsa, VSA_SCHEMA)
    del results["predicate"]["salt"]
    assert "lacks 'salt'" in schema_problem(results, RESULTS_SCHEMA)


def test_the_vsa_names_commit_tree_claims_and_verdict(project):
    head = project.git("rev-parse", "HEAD").strip()
    tree = project.git("rev-parse", "HEAD^{tree}").strip()
    oracles = project.git("rev-parse", "main:oracles").strip()
    vsa, results = lines(project, report_of(project))
    assert vsa["subject"][0]["digest"] == {"gitCommit": head}
    assert vsa["subject"][1]["digest"] == {"gitTree": tree}
    predicate = vsa["predicate"]
    assert predicate["verificationResult"] == "PASSED" and predicate["verifiedLevels"] == [CLAIMS_LEVEL]
    assert predicate["resourceUri"].endswith(f"@{head}") and predicate["resourceUri"].startswith("git+file://")
    assert predicate["policy"]["digest"] == {"gitTree": oracles}
    assert predicate["policy"]["annotations"]["policy"] == project.git("rev-parse", "main:oracles/policy.toml").strip()
    assert predicate["timeVerified"] == "2026-12-07T10:30:15Z"
    assert predicate["verifier"]["version"]["oracle-gate-sources"].startswith("sha256:")
    assert results["predicate"]["runs"]["clean"]["a"] == {"outcome": "passed", "digest": "1" * 64}
    assert results["predicate"]["hidden"] == {"b": "passed"}


def test_a_failed_verdict_and_approvals_and_nothing_secret(project):
    head = project.git("rev-parse", "HEAD").strip()
    report = report_of(project, failed=True, approved="oracle-change", hidden_not_run=["b"])
    data = statement_lines(report, str(project.path), {}, approvals=(Approval("oracle-change", head),), now=NOW)
    vsa, results = (json.loads(x) for x in data.decode().splitlines())
    assert vsa["predicate"]["verificationResult"] == "FAILED" and vsa["predicate"]["verifiedLevels"] == ["FAILED"]
    assert results["predicate"]["violations"] == [{"code": 4, "path": "oracles/shop.toml", "id": "a"}]
    assert results["predicate"]["approvals"] == [{"label": "oracle-change", "commit": head}]
    assert results["predicate"]["hidden"] == {"b": "not-run"}
    assert SECRET not in data.decode()


def test_the_repository_uri_never_carries_credentials(project):
    project.git("remote", "add", "origin", "https://x-access-token:ghs_SECRET@example.invalid/o/r.git")
    vsa, _ = lines(project, report_of(project))
    assert vsa["predicate"]["resourceUri"].startswith("git+https://example.invalid/o/r.git@")
    env = {"GITHUB_SERVER_URL": "https://example.invalid", "GITHUB_REPOSITORY": "o/r"}
    data = statement_lines(report_of(project), str(project.path), env, now=NOW)
    assert b"ghs_SECRET" not in data and b'"resourceUri":"git+https://example.invalid/o/r@' in data
