"""attest/verify.py: a statement accepted for its commit and claims, refused for another commit,
other claims, a failed verdict and any altered byte."""

from __future__ import annotations

import json

import pytest

from tools.oracle_gate.attest.statement import statement_lines
from tools.oracle_gate.attest.verify import ALTERED, FAILED_VERDICT, OTHER_SUBJECT, StatementRefused, verify_statement
from tools.testing.reports import NOW, report_of


def made(project, **kwargs) -> bytes:
    return statement_lines(report_of(project, **kwargs), str(project.path), {}, now=NOW)


def refused(data: bytes, project, commit: str, policy_from: str | None = None) -> StatementRefused:
    with pytest.raises(StatementRefused) as caught:
        verify_statement(data, str(project.path), commit, policy_from)
    return caught.value


def test_accepted_for_its_commit_and_claims(project):
    head = project.git("rev-parse", "HEAD").strip()
    main = project.git("rev-parse", "main").strip()
    accepted = verify_statement(made(project), str(project.path), head, main)
    assert (accepted.judged, accepted.claims) == (head, main)


def test_refused_for_another_commit_and_for_other_claims(project):
    data = made(project)
    project.write("shop/calc.py", "def add(a, b):\n    return a - b\n")
    other = project.commit("another")
    assert refused(data, project, other).code == OTHER_SUBJECT
    project.write("oracles/extra.toml", "schema = 1\n")
    newer_claims = project.commit("claims changed")
    head = project.git("rev-parse", "HEAD~2").strip()
    error = refused(data, project, head, newer_claims)
    assert error.code == OTHER_SUBJECT and "claims" in error.message


def test_accepted_for_a_commit_with_the_same_tree(project):
    data = made(project)
    project.git("commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", "same tree, new commit")
    assert verify_statement(data, str(project.path), project.git("rev-parse", "HEAD").strip()).judged


def test_refused_for_a_failed_verdict(project):
    error = refused(made(project, failed=True), project, project.git("rev-parse", "HEAD").strip())
    assert error.code == FAILED_VERDICT and "FAILED" in error.message


def test_every_altered_byte_of_either_predicate_is_refused(project):
    """Each byte of the predicates, changed to another character that keeps the line ASCII: no
    altered copy is accepted (by form, shape, the digest line 1 holds of line 2, or what git
    recomputes), and each refusal is exit 5."""
    head = project.git("rev-parse", "HEAD").strip()
    data = made(project)
    starts = [data.index(b'"predicate":{'), data.index(b'"predicate":{', data.index(b"\n"))]
    positions = [
        p for start in starts for p in range(start, data.index(b"}\n" if start == starts[0] else b"}\n", start))
    ]
    for position in positions:
        original = data[position]
        for replacement in {ord("0"), ord("a"), ord("X"), ord(" ")} - {original}:
            altered = data[:position] + bytes([replacement]) + data[position + 1 :]
            assert refused(altered, project, head).code == ALTERED, (position, chr(original), chr(replacement))


def test_refused_forms(project):
    head = project.git("rev-parse", "HEAD").strip()
    data = made(project)
    first, second = data.split(b"\n")[:2]
    for bad, why in (
        (first + b"\n", "exactly two lines"),
        (b"\n".join([first, second]), "exactly two lines"),
        (json.dumps(json.loads(first), indent=1).encode().replace(b"\n", b"") + b"\n" + second + b"\n", "canonical"),
        (first + b"\n" + first + b"\n", "line 2 of the statement"),
        (b"\xff\n" + second + b"\n", "not ASCII JSON"),
    ):
        assert why in refused(bad, project, head).message, why


def test_a_statement_without_the_clean_run_is_refused_when_it_is_required(project):
    head = project.git("rev-parse", "HEAD").strip()
    with_clean = made(project)
    assert verify_statement(with_clean, str(project.path), head, require_clean=True).clean
    without = statement_lines(report_of(project, clean_observed=None), str(project.path), {}, now=NOW)
    assert not verify_statement(without, str(project.path), head).clean
    with pytest.raises(StatementRefused, match="without the clean run") as caught:
        verify_statement(without, str(project.path), head, require_clean=True)
    assert caught.value.code == OTHER_SUBJECT


def test_a_merge_result_is_recomputed_and_named_when_another_commit_is_asked_about(project):
    """The statement of a branch behind main is about the gate's merge; asked about the branch's
    HEAD, verify names the merge and the head it was made of."""
    from tools.oracle_gate.git.gitio import merge_commit

    head = project.git("rev-parse", "HEAD").strip()
    project.git("checkout", "-q", "main")
    project.write("shop/other.py", "X = 1\n")
    tip = project.commit("main moves on")
    project.git("checkout", "-q", "change")
    merged = merge_commit(str(project.path), tip, head)
    report = report_of(project)
    report.tip, report.merged = tip, merged
    data = statement_lines(report, str(project.path), {}, now=NOW)
    assert verify_statement(data, str(project.path), merged).judged == merged
    error = refused(data, project, head)
    assert error.code == OTHER_SUBJECT and f"the gate's merge {merged} of head {head}" in error.message
