"""`verify`'s checks of a statement file (docs/design.md section 14): its form, its shape, the
digest that ties its two lines, and everything in it that git can recompute; then that it names
the commit asked about, was made with the claims asked about, and passed.

What git recomputes: the judged commit's tree; the judged commit itself, as the gate's merge of
the recorded head into the recorded base tip (`gitio.merge_commit`, deterministic) when it is not
HEAD; the claims' `oracles/` tree and the policy's and manifest's blob ids. What it cannot (the
outcomes, the time) is tied to line 1 by the sha256 line 1 holds of line 2, and the platform's
signature over the file ties the lines to the CI job that wrote them (docs/ci.md).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate import errors
from tools.oracle_gate.attest.schema import RESULTS_SCHEMA, VSA_SCHEMA, schema_problem
from tools.oracle_gate.attest.statement import CLAIMS_LEVEL, PASSED, canonical, object_id, policy_descriptor
from tools.oracle_gate.errors import GateError, GitError
from tools.oracle_gate.git.gitio import merge_commit

# A statement larger than this is refused unread (bytes; a check of 100,000 ids is about 20 MB).
MAX_BYTES = 64 * 1024 * 1024
# Exit codes of `verify` (docs/design.md section 6): the statement is malformed or altered; it
# records a failed verdict; it names another commit or other claims.
ALTERED = errors.INVALID_ORACLE
FAILED_VERDICT = errors.NO_OUTCOME
OTHER_SUBJECT = errors.RUNS_DISAGREE


class StatementRefused(GateError):
    """A statement `verify` does not accept; `code` says why (ALTERED, FAILED_VERDICT, OTHER_SUBJECT)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Accepted:
    """What an accepted statement says, for `verify`'s line: the judged commit, the claims commit
    and their `oracles/` tree, the gate version that judged, when, and whether the clean run ran."""

    judged: str
    claims: str
    oracles_tree: str
    version: str
    time: str
    clean: bool = False


def verify_statement(
    data: bytes, repo: str, commit: str, policy_from: str | None = None, *, require_clean: bool = False
) -> Accepted:
    """Checks the statement `data` (the bytes of a `check --attest` file) against git.

    Args:
        data: the file's bytes.
        repo: a clone holding the judged commit's parents (the recorded head and base tip).
        commit: the full id of the commit the caller asks about: the judged commit, or any commit
            with the same tree (a merge the platform made of the same content).
        policy_from: the full id of the commit whose claims the caller requires (its `oracles/`
            tree), or None for the claims commit the statement records.
        require_clean: the statement must record the clean run (`check --clean`).

    Raises:
        StatementRefused: ALTERED (exit 5) for a file that is not two canonical statement lines of
            the schema's shape, whose line-1 digest of line 2 or shared fields differ, or whose
            commit, tree or claims ids git computes otherwise; OTHER_SUBJECT (exit 6) when it
            names another commit (and tree) or other claims than asked; FAILED_VERDICT (exit 4)
            when its verdict is FAILED.
        GitError: (exit 1) when git cannot read an object the check needs.
    """
    vsa, results = _lines(data)
    predicate, facts = vsa["predicate"], results["predicate"]
    judged, tree = vsa["subject"][0]["digest"]["gitCommit"], vsa["subject"][1]["digest"]["gitTree"]
    _recompute(repo, vsa, facts)
    if commit != judged and _tree_or_none(repo, f"{commit}^{{tree}}") != tree:
        what = (
            f"the gate's merge {judged} of head {facts['head']} into the base tip {facts['baseTip']}"
            if judged != facts["head"]
            else f"commit {judged}"
        )
        raise StatementRefused(
            OTHER_SUBJECT, f"the statement is about {what} (tree {tree}), not {commit} or a commit with that tree"
        )
    oracles_tree = predicate["policy"]["digest"]["gitTree"]
    if policy_from is not None:
        theirs = _tree_or_none(repo, f"{policy_from}:oracles")
        if theirs != oracles_tree:
            raise StatementRefused(
                OTHER_SUBJECT,
                f"the statement was made with the claims of {facts['claims']} (oracles/ tree {oracles_tree}), "
                f"not those of {policy_from}" + (" (it has no oracles/)" if theirs is None else ""),
            )
    if require_clean and facts["runs"]["clean"] is None:
        raise StatementRefused(OTHER_SUBJECT, "the statement was made without the clean run (check --clean)")
    if predicate["verificationResult"] != PASSED:
        raise StatementRefused(FAILED_VERDICT, f"the statement records a FAILED verdict (exit {facts['exitCode']})")
    version = predicate["verifier"]["version"]["oracle-gate"]
    clean = facts["runs"]["clean"] is not None
    return Accepted(judged, facts["claims"], oracles_tree, version, predicate["timeVerified"], clean)


def _lines(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two statements of `data`, each checked for canonical form and shape, and tied together.

    Raises:
        StatementRefused: ALTERED, naming the line and what is wrong.
    """
    if len(data) > MAX_BYTES:
        raise StatementRefused(ALTERED, f"the statement has {len(data)} bytes, more than {MAX_BYTES}")
    lines = data.split(b"\n")
    if len(lines) != 3 or lines[2]:
        raise StatementRefused(ALTERED, "the statement must be exactly two lines, each ending with a newline")
    parsed = []
    for number, (line, schema) in enumerate(zip(lines[:2], (VSA_SCHEMA, RESULTS_SCHEMA), strict=True), 1):
        try:
            value = json.loads(line.decode("ascii"))
            same = canonical(value) == line + b"\n"
        except (ValueError, TypeError, RecursionError):
            raise StatementRefused(ALTERED, f"line {number} of the statement is not ASCII JSON") from None
        if not same:
            raise StatementRefused(ALTERED, f"line {number} of the statement is not in its canonical form (altered?)")
        problem = schema_problem(value, schema)
        if problem:
            raise StatementRefused(ALTERED, f"line {number} of the statement: {problem}")
        parsed.append(value)
    vsa, results = parsed
    if vsa["predicate"]["inputAttestations"][0]["digest"]["sha256"] != hashlib.sha256(lines[1] + b"\n").hexdigest():
        raise StatementRefused(ALTERED, "line 2 of the statement is not the one line 1 names by its sha256 (altered?)")
    for key in ("verifier", "timeVerified", "verificationResult"):
        if vsa["predicate"][key] != results["predicate"][key]:
            raise StatementRefused(ALTERED, f"the statement's two lines differ in {key} (altered?)")
    if vsa["subject"] != results["subject"]:
        raise StatementRefused(ALTERED, "the statement's two lines name different subjects (altered?)")
    return vsa, results


def _recompute(repo: str, vsa: dict[str, Any], facts: dict[str, Any]) -> None:
    """Checks every id of the statement that git can compute (module docstring).

    Raises:
        StatementRefused: ALTERED for an id that differs from what git computes.
        GitError: when git cannot read an object it needs.
    """
    predicate = vsa["predicate"]
    judged, tree = vsa["subject"][0]["digest"]["gitCommit"], vsa["subject"][1]["digest"]["gitTree"]
    expected = (
        facts["head"] if facts["judged"] == facts["head"] else _merge_or_none(repo, facts["baseTip"], facts["head"])
    )
    if facts["judged"] != judged or expected != judged:
        raise StatementRefused(
            ALTERED,
            f"the judged commit {judged} is not HEAD or the gate's merge of the recorded head into the base tip",
        )
    if _tree_or_none(repo, f"{judged}^{{tree}}") != tree:
        raise StatementRefused(ALTERED, f"the statement's tree {tree} is not the tree of {judged}")
    uri = vsa["subject"][0]["name"].rpartition("@")[0]
    if predicate["resourceUri"] != f"{uri}@{judged}":
        raise StatementRefused(ALTERED, "the statement's resourceUri does not name its subject (altered?)")
    try:
        policy = policy_descriptor(repo, uri, facts["claims"])
    except GitError:
        raise StatementRefused(ALTERED, f"the claims commit {facts['claims']} has no oracles/ in this clone") from None
    if policy != predicate["policy"]:
        raise StatementRefused(
            ALTERED, f"the statement's policy is not the oracles/ of its claims commit {facts['claims']} (altered?)"
        )
    passed = facts["exitCode"] == 0 and not facts["violations"] and all(c["status"] != "FAIL" for c in facts["checks"])
    if (predicate["verificationResult"] == PASSED) != passed:
        raise StatementRefused(ALTERED, "the statement's verdict does not follow from its exit code (altered?)")
    if predicate["verifiedLevels"] != [CLAIMS_LEVEL if passed else "FAILED"]:
        raise StatementRefused(ALTERED, "the statement's verifiedLevels do not follow from its verdict (altered?)")


def _merge_or_none(repo: str, tip: str, head: str) -> str | None:
    """The gate's merge commit of `head` into `tip`, or None when git cannot make it here."""
    try:
        return merge_commit(repo, tip, head)
    except GateError:
        return None


def _tree_or_none(repo: str, rev: str) -> str | None:
    """The id `rev` names, or None when it names nothing in this clone."""
    try:
        return object_id(repo, rev)
    except GitError:
        return None
