"""What `check` judges, read from git once (`gather_inputs`): four commit sides and the approval.

The sides are the merge base (the base side of what the change did), HEAD, the claims (the commit
whose `oracles/` are in force without the label: the base tip, or the merge base with
`--head-only`) and the judged commit (the merge result of HEAD into the tip, or HEAD itself when it
contains the tip or with `--head-only`; docs/design.md section 11). Sides that are one commit are
one object: the claims are the merge base, and the judged commit is HEAD, whenever the gate made
no merge result.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from tools.oracle_gate.approval.change import ChangeApproval, approve_change
from tools.oracle_gate.approval.policy import protection
from tools.oracle_gate.git.gitio import Change, changed_paths, on_first_parent_chain
from tools.oracle_gate.git.objects import Trust
from tools.oracle_gate.git.tree import Entry, GitTree
from tools.oracle_gate.runs.bazel_control import control_globs
from tools.oracle_gate.suite.loader import Oracles, load_oracles
from tools.oracle_gate.suite.manifest import vouch_for_base


@dataclass(frozen=True)
class Side:
    """One commit as the checks read it.

    Attributes:
        commit: the commit id.
        tree: its tree, built once, reading blobs with the run's `Trust`.
        oracles: its `oracles/` (`loader.load_oracles`).
        listing: every file of the commit.
        links: every symlink of the commit -> its target.
    """

    commit: str
    tree: GitTree
    oracles: Oracles
    listing: Mapping[str, Entry]
    links: Mapping[str, str]


def read_side(commit: str, tree: GitTree, oracles: Oracles) -> Side:
    """The side of `commit`: `tree` and `oracles` as given, its listing and symlinks read from
    `tree`. Raises GateError (exit 1) when git cannot list or read the tree."""
    listing = tree.files("")
    return Side(commit, tree, oracles, listing, tree.symlinks(listing))


@dataclass(frozen=True)
class Inputs:
    """What the checks judge, read from git once (`gather_inputs`).

    Attributes:
        repo: the work tree's root.
        base: the base revision as given (branch, tag, commit id).
        approval: the approval step (`approval.change.approve_change`): the base tip, the label
            that allows protected changes and whether the change carries it.
        labels: the pull request's labels that count (labels.py).
        merge_base: the merge base of the tip and HEAD.
        head: HEAD; its oracles' fix messages name the label in force.
        claims: the commit whose claims are in force without the label; `merge_base` itself
            when that is the merge base (no merge result, or `head_only`).
        judged: the commit judged; `head` itself when that is HEAD.
        protected: the protected globs (`policy.protection`): the base tip's policy's plus
            HEAD's, the merge base's and the merge result's, the defaults when none is readable,
            and what the Bazel control files of those commits name (`bazel_control.control_globs`).
        changes: every path that differs between the merge base and HEAD.
        merge_changes: every path that differs between `claims` and `judged` when the judged
            commit is a merge result (what the change would undo of the tip); else empty.
        bootstrap: the claims commit has neither a policy nor an oracle file (no id can be missing).
        trust: what this run vouches for about blob objects without reading them (the merge base's
            and the tip's manifests and pins, `manifest.vouch_for_base`); the sides' trees read
            blobs with it, nothing else holds it.
        head_only: judge HEAD against the merge base, as if the tip had not moved (`--head-only`).
    """

    repo: str
    base: str
    approval: ChangeApproval
    labels: frozenset[str]
    merge_base: Side
    head: Side
    claims: Side
    judged: Side
    protected: tuple[str, ...]
    changes: tuple[Change, ...]
    merge_changes: tuple[Change, ...]
    bootstrap: bool
    trust: Trust
    head_only: bool

    @property
    def tip(self) -> str:
        """The base tip: the commit `base` names."""
        return self.approval.tip

    @property
    def label(self) -> str:
        """The label that allows protected changes (`policy.label_name`)."""
        return self.approval.label

    @property
    def labelled(self) -> bool:
        """The change carries `label`, compared case-insensitively (`policy.has_label`)."""
        return self.approval.labelled

    @property
    def is_merge(self) -> bool:
        """True when the commit judged is a merge result the gate made, not HEAD."""
        return self.judged.commit != self.head.commit

    @property
    def oracles_commit(self) -> str:
        """Whose `oracles/` the clean run uses: the judged commit's for a labelled change (the
        change's own edits merged with the tip's), else the claims commit's (the tip's)."""
        return self.judged.commit if self.labelled else self.claims.commit

    def close_trees(self) -> None:
        """Ends the trees' git processes before Bazel runs the change's code (a later read starts
        a new one), so no reader of this repository's objects outlives the gate's own steps."""
        sides = (self.merge_base, self.head, self.claims, self.judged)
        for tree in {id(side.tree): side.tree for side in sides}.values():
            tree.close()


def gather_inputs(
    repo: str, base: str, labels: Collection[str], *, verify_all: bool = False, head_only: bool = False
) -> Inputs:
    """Reads from git everything the checks judge.

    What is judged is the merge result of HEAD into the base tip (docs/design.md section 11): HEAD
    itself when it contains the tip (a branch that is up to date, or a merge commit the CI checked
    out), else a merge commit the gate writes (`gitio.merge_commit`; no ref, index or work tree
    changes). The claims in force are the tip's; what the change did is read against the merge base.
    The approval step is `clean-run`'s too (`approval.change.approve_change`); the merge base's and
    the claims' blobs are vouched for, not read (`_merge_base_and_claims`, docs/design.md section 4,
    "Which blobs are hashed").

    Args:
        repo: the work tree's root.
        base: a revision (branch, tag, commit id).
        labels: the pull request's labels that count.
        verify_all: hash and parse every judged blob, vouching for nothing of the base.
        head_only: judge HEAD against the merge base (the claims are the merge base's).

    Raises:
        GitError: (exit 1) grafts or replace refs, an unknown base, no merge base, a change that
            does not merge cleanly into the tip (`gitio.MergeConflict`) (gitio.py).
        GateError: (exit 1) when the base tip's policy is invalid: nothing then says what is
            protected.
    """
    # This run's trust: made here, filled from the base side, held by the Inputs and gone with them.
    trust = Trust()
    approval = approve_change(repo, base, labels, trust, head_only=head_only)
    merge_base, claims = _merge_base_and_claims(repo, approval, trust, verify_all)
    # Entries are judged by HEAD's policy, as the build's pin check does (a labelled change may add
    # a package with its rows); fix messages name the label in force (policy.label_name).
    label_in_force = approval.claims_policy.label if approval.claims_policy else None
    head = read_side(approval.head, approval.head_tree, load_oracles(approval.head_tree, label=label_in_force))
    judged = head
    if approval.judged.commit != head.commit:
        tree = GitTree(repo, approval.judged.commit, trust)
        judged = read_side(approval.judged.commit, tree, load_oracles(tree, label=label_in_force))
    return Inputs(
        repo=repo,
        base=base,
        approval=approval,
        labels=frozenset(labels),
        merge_base=merge_base,
        head=head,
        claims=claims,
        judged=judged,
        protected=_protected_globs(approval, (merge_base.oracles, judged.oracles), (merge_base, head, claims, judged)),
        changes=tuple(changed_paths(repo, merge_base.commit, head.commit)),
        merge_changes=tuple(changed_paths(repo, claims.commit, judged.commit)) if judged is not head else (),
        bootstrap=claims.oracles.policy is None and not claims.oracles.files,
        trust=trust,
        head_only=head_only,
    )


def _merge_base_and_claims(repo: str, approval: ChangeApproval, trust: Trust, verify_all: bool) -> tuple[Side, Side]:
    """(merge base, claims): their oracles read without verifying blobs, and what each vouches
    for in `trust` (`manifest.vouch_for_base`) unless `verify_all`: the tip always, the merge base
    when it is on the base branch's first-parent chain. One side when the claims are the merge base."""
    commits = approval.judged
    tree = approval.claims_tree if commits.claims == commits.merge_base else GitTree(repo, commits.merge_base, trust)
    merge_base = read_side(commits.merge_base, tree, load_oracles(tree, verify_blobs=False))
    claims = merge_base
    if commits.claims != commits.merge_base:
        claims = read_side(commits.claims, approval.claims_tree, load_oracles(approval.claims_tree, verify_blobs=False))
    if not verify_all:
        # Only a commit the base branch itself pointed at passed the gate; a merge base inside a
        # merged branch (the change forked from another pull request) vouches for nothing.
        if on_first_parent_chain(repo, approval.tip, merge_base.commit):
            vouch_for_base(merge_base.tree, merge_base.oracles, trust)
        if claims is not merge_base:
            vouch_for_base(claims.tree, claims.oracles, trust)
    return merge_base, claims


def _protected_globs(approval: ChangeApproval, others: Sequence[Oracles], sides: Sequence[Side]) -> tuple[str, ...]:
    """The protected globs (`Inputs.protected`): the policy in force's plus HEAD's
    (`policy.protection`), the merge base's and the merge result's (`others`), and the files the
    Bazel control files of each commit of `sides` make Bazel read or run before any sandbox exists
    (an rc file's imports, the .bzl files WORKSPACE loads), protected like those files."""
    _, protected = protection(approval.claims_policy, approval.head_policy)
    for oracles in others:
        if oracles.policy:
            protected += oracles.policy.protected
    for side in {side.commit: side for side in sides}.values():
        protected += control_globs(side.tree, side.listing)
    return tuple(dict.fromkeys(protected))


def judged_note(inputs: Inputs) -> str:
    """The report line that says what was judged and whose claims are in force."""
    tip, mb, head = inputs.tip[:12], inputs.merge_base.commit[:12], inputs.head.commit[:12]
    if inputs.head_only:
        return (
            f"judged: HEAD {head} with the merge base {mb}'s claims (--head-only); the base tip {tip} "
            "was not merged, so rows and code it gained since are not judged"
        )
    claims = (
        "the oracles of the change (labelled), merged with the base tip's"
        if inputs.labelled
        else "the base tip's claims"
    )
    if inputs.is_merge:
        return (
            f"judged: the merge result {inputs.judged.commit[:12]} of HEAD {head} into the base tip {tip} "
            f"(merge base {mb}), with {claims}; a green result holds for this tip only"
        )
    return f"judged: HEAD {head}, which contains the base tip {tip}, with {claims}"


def blob_reader(side: Side) -> Callable[[str], bytes | None]:
    """Reads a blob of `side` by repository path (`spec_changes.BlobReader`): its bytes, or None
    when the side has no regular file there. Raises GateError (exit 1) when git cannot read it."""

    def read(path: str) -> bytes | None:
        entry = side.listing.get(path)
        return side.tree.read(entry) if entry is not None and entry.is_regular else None

    return read
