"""Loads and validates everything under `oracles/` from a tree: policy, oracle files, blobs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.policy import POLICY_PATH, Policy, parse_policy
from tools.oracle_gate.samples import SampleError, check_shape, load_samples
from tools.oracle_gate.schema import Invariant, OracleFile, duplicate_ids, is_oracle_path, parse_oracle
from tools.oracle_gate.tree import GITLINK, Entry, Tree
from tools.oracle_gate.transform import explain, restore_command, rewrite_fix, rewritten

PIN_FIX = ("if you changed the blob on purpose, update blob_sha256 in a change labelled oracle-change; "
           "if you did not, restore it: `{restore}` writes the committed bytes")


@dataclass
class Oracles:
    """The oracle side of one tree.

    Attributes:
        policy: the parsed policy, or None when the tree has none (bootstrap) or it is invalid.
        files: the oracle files, in path order.
        problems: every OracleError found (exit 5); empty when all is valid.
    """

    policy: Policy | None
    files: list[OracleFile] = field(default_factory=list)
    problems: list[OracleError] = field(default_factory=list)

    @property
    def invariants(self) -> list[Invariant]:
        """Every valid invariant row, in file then row order."""
        return [inv for f in self.files for inv in f.invariants]

    @property
    def declared_ids(self) -> set[str]:
        """Every id string any row declares, valid or not."""
        return {i for f in self.files for i in f.declared_ids}


def check_blob(invariant: Invariant, entry: Entry | None, data: bytes | None, *, committed: bool = False) -> list[OracleError]:
    """Checks one row's blob: a regular file whose bytes match the pin and parse to the kind's shape.

    Args:
        invariant: the row.
        entry: the blob's tree entry, or None when it does not exist.
        data: the blob's bytes (ignored when entry is None or not a regular file).
        committed: the bytes were read from git objects, not from disk (`Tree.committed`); a
            rewritten blob's message then speaks of the commit, not of a checkout.
    """

    def bad(field_name: str, message: str, fix: str | None = None) -> list[OracleError]:
        return [OracleError(message, path=invariant.source, row=invariant.id, field=field_name, fix=fix)]

    if entry is None:
        return bad("blob", f"{invariant.blob} does not exist")
    if not entry.is_regular:
        what = "a symlink" if entry.mode == "120000" else "a submodule" if entry.mode == GITLINK else "not a regular file"
        return bad("blob", f"{invariant.blob} is {what}; blobs must be regular files under oracles/blobs/")
    assert data is not None
    actual = hashlib.sha256(data).hexdigest()
    if actual != invariant.blob_sha256:
        mismatch = f"{invariant.blob} does not match its pin: expected sha256 {invariant.blob_sha256}, the bytes hash to {actual}"
        rewrite = explain(data, lambda original: hashlib.sha256(original).hexdigest() == invariant.blob_sha256)
        if rewrite:
            return bad("blob_sha256", f"{mismatch}; {rewritten(rewrite, committed)}", rewrite_fix(invariant.blob, committed))
        return bad("blob_sha256", mismatch, PIN_FIX.format(restore=restore_command(invariant.blob)))
    try:
        check_shape(invariant, load_samples(data))
    except SampleError as exc:
        return bad("blob", f"{invariant.blob} {exc}")
    return []


def load_policy(tree: Tree, listing: dict[str, Entry]) -> Policy | None:
    """Parses the tree's policy.toml, or returns None when the tree has none.

    Raises:
        OracleError: when the policy exists but is invalid or not a regular file.
    """
    entry = listing.get(POLICY_PATH)
    if entry is None:
        return None
    if not entry.is_regular:
        raise OracleError("must be a regular file", path=POLICY_PATH)
    return parse_policy(tree.read(entry))


def load_oracles(tree: Tree, policy: Policy | None = None, *, use_tree_policy: bool = True) -> Oracles:
    """Loads and validates the policy, every oracle file and every blob pin of a tree.

    Args:
        tree: where to read `oracles/` from.
        policy: the policy whose production packages restrict `entry`; when None and
            `use_tree_policy`, the tree's own policy is used.
        use_tree_policy: read the tree's policy.toml when `policy` is None.

    Returns:
        Oracles with every problem collected; never raises for bad content.
    """
    listing = tree.files("oracles")
    result = Oracles(policy=None)
    try:
        tree_policy = load_policy(tree, listing)
    except OracleError as exc:
        result.problems.append(exc)
        tree_policy = None
    result.policy = tree_policy
    effective = policy if policy is not None else (tree_policy if use_tree_policy else None)
    if effective is None and use_tree_policy and POLICY_PATH not in listing:
        result.problems.append(OracleError("is missing; the gate needs it to know what is protected", path=POLICY_PATH))
    allowed = effective.production_packages if effective else None
    for path in sorted(listing):
        entry = listing[path]
        if not is_oracle_path(path):
            continue
        if not entry.is_regular:
            result.problems.append(OracleError("must be a regular file, not a symlink or submodule", path=path))
            continue
        oracle = parse_oracle(tree.read(entry), path, allowed)
        result.files.append(oracle)
        result.problems.extend(oracle.problems)
    result.problems.extend(duplicate_ids(result.files))
    for invariant in result.invariants:
        blob_entry = listing.get(invariant.blob)
        data = tree.read(blob_entry) if blob_entry is not None and blob_entry.is_regular else None
        result.problems.extend(check_blob(invariant, blob_entry, data, committed=tree.committed))
    return result
