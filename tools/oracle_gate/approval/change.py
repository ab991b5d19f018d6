"""The approval step of `check` and `clean-run`: which commits a change is judged by, which
policy is in force, which label allows protected changes and whether the change carries it
(docs/design.md sections 3, 5 and 11).

It reads two policy files and nothing else of `oracles/`: no blob is read or hashed to learn the
label. A base whose policy exists but is invalid stops both commands (exit 1): nothing then says
what is protected.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from tools.oracle_gate.approval.policy import POLICY_PATH, Policy, has_label, label_name, load_policy
from tools.oracle_gate.errors import GateError, OracleError
from tools.oracle_gate.git.gitio import Judged, judged_commits, refuse_grafts, resolve_commit
from tools.oracle_gate.git.objects import Trust
from tools.oracle_gate.git.tree import GitTree


@dataclass(frozen=True)
class ChangeApproval:
    """Who may change what for one change.

    Attributes:
        tip: the base tip (the commit the base revision names).
        head: the commit HEAD names.
        judged: the merge base, the commit judged and the commit whose claims are in force
            (`gitio.judged_commits`).
        claims_tree, head_tree: the trees of `judged.claims` and HEAD, reading blobs with the
            run's `Trust`.
        claims_policy: the policy in force (`judged.claims`'), None when that commit has none.
        head_policy: HEAD's policy, None when it has none or it is invalid (then checked as an
            oracle file, exit 5).
        label: the label that allows protected changes (`policy.label_name`).
        labelled: the change carries it (`policy.has_label`, case-insensitive).
    """

    tip: str
    head: str
    judged: Judged
    claims_tree: GitTree
    head_tree: GitTree
    claims_policy: Policy | None
    head_policy: Policy | None
    label: str
    labelled: bool


def approve_change(
    repo: str, base: str, labels: Collection[str], trust: Trust, *, head_only: bool = False
) -> ChangeApproval:
    """The approval step for HEAD against `base`, with the pull request's `labels` that count.

    Args:
        repo: the work tree's root.
        base: a revision (branch, tag, commit id).
        labels: label names (`labels.collect_labels`).
        trust: the run's trust, handed to the trees it makes (`objects.Trust`).
        head_only: judge HEAD against the merge base (`gitio.judged_commits`).

    Raises:
        GitError: (exit 1) grafts or replace refs, an unknown base, no merge base, a change that
            does not merge cleanly into the tip (gitio.py).
        GateError: (exit 1) when the policy in force exists but is invalid.
    """
    refuse_grafts(repo)
    tip = resolve_commit(repo, base)
    head = resolve_commit(repo, "HEAD")
    judged = judged_commits(repo, tip, head, head_only=head_only)
    claims_tree = GitTree(repo, judged.claims, trust)
    head_tree = GitTree(repo, head, trust)
    try:
        claims_policy = load_policy(claims_tree, claims_tree.files(POLICY_PATH).get(POLICY_PATH))
    except OracleError:
        raise GateError(
            "the base revision's policy is invalid; the gate cannot tell what is protected",
            path=POLICY_PATH,
            fix="fix it on the base branch first",
        ) from None
    try:
        head_policy = load_policy(head_tree, head_tree.files(POLICY_PATH).get(POLICY_PATH))
    except OracleError:
        head_policy = None
    label = label_name(claims_policy, head_policy)
    return ChangeApproval(
        tip, head, judged, claims_tree, head_tree, claims_policy, head_policy, label, has_label(label, set(labels))
    )
