"""Loads and validates everything under `oracles/` from a tree: policy, oracle files, blobs
(docs/design.md sections 2-4).

There is one validation path: `check`, `manifest` and the manifest test read a tree with
`load_oracles`; the build's pin check (pin_check.py) calls the same `policy.load_policy`,
`read_oracle_files` and `check_blob` on the files Bazel gives its action.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tools.oracle_gate.approval.policy import POLICY_PATH, Policy, in_labelled_change, load_policy
from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.git.objects import CHUNK
from tools.oracle_gate.git.transform import explain, restore_command, rewrite_fix, rewritten
from tools.oracle_gate.git.tree import GITLINK, Entry, Tree
from tools.oracle_gate.spec.samples import SampleError
from tools.oracle_gate.spec.schema import (
    HIDDEN_DIR,
    Invariant,
    OracleFile,
    Retired,
    duplicate_ids,
    is_oracle_path,
    parse_oracle,
    retired_problems,
)
from tools.oracle_gate.spec.stream import check_stream


def pin_fix(blob: str, label: str | None) -> str:
    """What to do about a blob whose bytes do not match its pin and no known rewrite explains:
    re-pin under the label (`policy.in_labelled_change`; None when the policy in force is not
    known) or restore the committed bytes (`transform.restore_command`)."""
    return (
        f"if you changed the blob on purpose, update blob_sha256 (`pin --write`) {in_labelled_change(label)}; "
        f"if you did not and HEAD has the file, `{restore_command(blob)}` restores the committed bytes"
    )


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

    @property
    def retired(self) -> dict[str, Retired]:
        """Every valid `[[retired]]` entry, by id (the first, when an id is retired twice)."""
        found: dict[str, Retired] = {}
        for f in self.files:
            for entry in f.retired:
                found.setdefault(entry.id, entry)
        return found


@dataclass(frozen=True)
class Reading:
    """What one streamed pass over a blob's bytes found (`read_blob`).

    Attributes:
        sha256: the hex digest of the bytes.
        checked: True when the pass also checked the shape for a row (`stream.check_stream`).
        problem: then the refusal (a `SampleError` message), or None when the shape is right.
    """

    sha256: str
    checked: bool = False
    problem: str | None = None


def read_blob(tree: Tree, entry: Entry, invariant: Invariant | None) -> Reading:
    """Reads a regular file entry once, as a stream of pieces (`Tree.stream`): hashes it and, when
    `invariant` is given, checks its bytes are strict JSON of that row's sample shape on the way
    (`stream.check_stream`), so memory is one piece plus one sample, not the blob.

    Raises:
        GateError: (exit 1, GitError among them) when the bytes cannot be read.
    """
    pieces = tree.stream(entry)
    problem = None
    if invariant is not None:
        try:
            check_stream(invariant, pieces)
        except SampleError as exc:
            problem = str(exc)
    return Reading(pieces.hexdigest(), invariant is not None, problem)


def check_blob(
    invariant: Invariant,
    entry: Entry | None,
    data: bytes | Callable[[], bytes] | None,
    *,
    committed: bool = False,
    label: str | None = None,
    digest: str | None = None,
    shape_known: bool = False,
    reading: Reading | None = None,
) -> list[OracleError]:
    """Checks one row's blob: a regular file whose bytes match the pin and parse to the kind's shape.

    Args:
        invariant: the row.
        entry: the blob's tree entry, or None when it does not exist.
        data: the blob's bytes, or a function that reads them (called only when they are needed:
            to hash them when neither `digest` nor `reading` is given, to explain a mismatch, to
            check the shape when `reading` did not); ignored when entry is None or not a regular file.
        committed: the bytes were read from git objects, not from disk (`Tree.committed`); a
            rewritten blob's message then speaks of the commit, not of a checkout.
        label: the label a re-pin needs, named in the fix (`pin_fix`); None when the policy in
            force is not known.
        digest: the bytes' sha256 hex digest when already known (`Tree.known_digest`).
        shape_known: the bytes are known to have the kind's shape (the merge base pinned the same
            object for the same kind, `Tree.vouched`), so they are not parsed again.
        reading: what one pass over the bytes found (`read_blob`): its digest is used instead of
            `digest`, and its shape check, when it made one, instead of parsing `data`.

    Returns:
        One OracleError (exit 5) for the first problem found, a pin mismatch before a shape
        problem, or an empty list.
    """
    problem = _entry_problem(invariant, entry)
    if problem is not None:
        return [_blob_error(invariant, problem)]
    assert data is not None
    read: Callable[[], bytes] = data if callable(data) else (lambda: data)
    mismatch = _pin_mismatch(invariant, read, reading.sha256 if reading is not None else digest, committed, label)
    if mismatch is not None:
        return [mismatch]
    if shape_known:
        return []
    problem = reading.problem if reading is not None and reading.checked else _shape_problem(invariant, read())
    return [_blob_error(invariant, f"{invariant.blob} {problem}")] if problem is not None else []


def _blob_error(invariant: Invariant, message: str) -> OracleError:
    """The exit-5 error `message` about the row's field `blob`."""
    return OracleError(message, path=invariant.source, row=invariant.id, field="blob")


def _entry_problem(invariant: Invariant, entry: Entry | None) -> str | None:
    """Why the blob's tree entry is not a regular file (it is missing, a link, ...), or None."""
    if entry is None:
        return f"{invariant.blob} does not exist"
    if not entry.is_regular:
        what = (
            "a symlink" if entry.mode == "120000" else "a submodule" if entry.mode == GITLINK else "not a regular file"
        )
        return f"{invariant.blob} is {what}; blobs must be regular files under oracles/blobs/"
    return None


def _pin_mismatch(
    invariant: Invariant, read: Callable[[], bytes], digest: str | None, committed: bool, label: str | None
) -> OracleError | None:
    """The error for bytes that do not hash to the row's pin (`_mismatch`), or None; `digest`, when
    known, is trusted for a match, and the bytes are read to explain a mismatch."""
    actual = digest if digest is not None else hashlib.sha256(read()).hexdigest()
    if actual == invariant.blob_sha256:
        return None
    content = read()
    # The digest may have been vouched for, not computed: the message names what the bytes hash to.
    actual = hashlib.sha256(content).hexdigest()
    return None if actual == invariant.blob_sha256 else _mismatch(invariant, content, actual, committed, label)


def _mismatch(invariant: Invariant, content: bytes, actual: str, committed: bool, label: str | None) -> OracleError:
    """The error for bytes `content` that hash to `actual`, not to the row's pin: named as a known
    checkout rewrite of the pinned bytes when undoing one gives them (`transform.explain`)."""
    mismatch = (
        f"{invariant.blob} does not match its pin: expected sha256 {invariant.blob_sha256}, the bytes hash to {actual}"
    )
    rewrite = explain(content, lambda original: hashlib.sha256(original).hexdigest() == invariant.blob_sha256)
    if rewrite:
        return OracleError(
            f"{mismatch}; {rewritten(rewrite, committed)}",
            path=invariant.source,
            row=invariant.id,
            field="blob_sha256",
            fix=rewrite_fix(invariant.blob, committed),
        )
    return OracleError(
        mismatch, path=invariant.source, row=invariant.id, field="blob_sha256", fix=pin_fix(invariant.blob, label)
    )


def _shape_problem(invariant: Invariant, data: bytes) -> str | None:
    """The refusal of bytes already in memory (`stream.check_stream`, fed in CHUNK slices so no
    copy of the whole is made), or None."""
    view = memoryview(data)
    try:
        check_stream(invariant, (bytes(view[i : i + CHUNK]) for i in range(0, len(data), CHUNK)))
    except SampleError as exc:
        return str(exc)
    return None


def read_oracle_files(
    tree: Tree, entries: Mapping[str, Entry], policy: Policy | None
) -> tuple[list[OracleFile], list[OracleError]]:
    """Parses and validates oracle files (`schema.parse_oracle`), in path order.

    Args:
        tree: where to read the bytes.
        entries: repository path -> entry of each oracle file.
        policy: the policy whose production packages an `entry` may name, or None to skip that check.

    Returns:
        (files, problems): the parsed files, and one OracleError (exit 5) per problem: an entry
        that is not a regular file, each file's own problems, then every id declared in more than
        one file, and every retired id retired twice or reused by a row (`schema.retired_problems`).
        Never raises for bad content.
    """
    allowed = policy.production_packages if policy else None
    files: list[OracleFile] = []
    problems: list[OracleError] = []
    for path in sorted(entries):
        entry = entries[path]
        if not entry.is_regular:
            problems.append(OracleError("must be a regular file, not a symlink or submodule", path=path))
            continue
        oracle = parse_oracle(tree.read(entry), path, allowed)
        files.append(oracle)
        problems.extend(oracle.problems)
    problems.extend(duplicate_ids(files))
    problems.extend(retired_problems(files))
    return files, problems


def load_oracles(tree: Tree, *, label: str | None = None, verify_blobs: bool = True) -> Oracles:
    """Loads and validates the policy, every oracle file and every blob pin of a tree.

    Oracle files are the tree's `schema.is_oracle_path` files; each `entry` is judged by the tree's
    own policy (docs/design.md section 3), and a tree without `oracles/policy.toml` has that as a
    problem. Blobs are read once each, as streams, hashed and shape-checked on the way
    (`read_blob`); a blob object the merge base pinned with the same pin (the tree's `Trust`,
    `Tree.vouched`) is neither hashed nor parsed again (docs/design.md section 4).

    Args:
        tree: where to read `oracles/` from.
        label: the label fix messages name; None: the tree's own policy's label, or a phrase
            naming the policy's label when the tree has no valid policy (`policy.in_labelled_change`).
        verify_blobs: False to skip the blob checks (pins and shapes), for a caller that needs only
            the policy and the rows (the manifest, the merge base).

    Returns:
        Oracles with every problem collected; never raises for bad content.

    Raises:
        GateError: (exit 1) only when the tree cannot be read (git, file system).
    """
    listing = tree.files("oracles")
    result = Oracles(policy=None)
    try:
        result.policy = load_policy(tree, listing.get(POLICY_PATH))
    except OracleError as exc:
        result.problems.append(exc)
    if result.policy is None and POLICY_PATH not in listing:
        result.problems.append(OracleError("is missing; the gate needs it to know what is protected", path=POLICY_PATH))
    files, problems = read_oracle_files(tree, {p: e for p, e in listing.items() if is_oracle_path(p)}, result.policy)
    result.problems.extend(
        OracleError(
            f"is in {HIDDEN_DIR}/, which only the gate's hidden phase fills; "
            "a hidden blob's bytes must be in no commit (`hidden add` puts them in the store)",
            path=p,
        )
        for p in sorted(listing)
        if p.startswith(HIDDEN_DIR + "/")
    )
    result.files.extend(files)
    result.problems.extend(problems)
    if not verify_blobs:
        return result
    if label is None and result.policy is not None:
        label = result.policy.label
    result.problems.extend(_blob_problems(tree, listing, result.invariants, label))
    return result


def _blob_problems(
    tree: Tree, listing: Mapping[str, Entry], invariants: list[Invariant], label: str | None
) -> list[OracleError]:
    """`check_blob` of every row, reading each blob file at most once per shape it must have."""
    problems: list[OracleError] = []
    # Per file: one digest, and one shape check per kind and arguments, however many rows share it;
    # a file not yet hashed is hashed and shape-checked in one pass (`read_blob`).
    digests: dict[str, str | None] = {}
    shapes_ok: set[tuple[str, str]] = set()
    for invariant in invariants:
        blob_entry = listing.get(invariant.blob)
        found = blob_entry if blob_entry is not None and blob_entry.is_regular else None
        if found is None:
            problems.extend(check_blob(invariant, blob_entry, None, committed=tree.committed, label=label))
            continue
        if found.ref not in digests:
            digests[found.ref] = tree.known_digest(found)
        key = (found.ref, shape_key(invariant))
        known = key in shapes_ok or (tree.committed and tree.vouched(found, key[1]))
        digest, reading = digests[found.ref], None
        if digest is None or (digest == invariant.blob_sha256 and not known):
            reading = read_blob(tree, found, None if known else invariant)
            digests[found.ref] = reading.sha256
        found_problems = check_blob(
            invariant,
            found,
            functools.partial(tree.read, found),
            committed=tree.committed,
            label=label,
            digest=digest,
            shape_known=known,
            reading=reading,
        )
        if not found_problems:
            shapes_ok.add(key)
        problems.extend(found_problems)
    return problems


# The version of the shape rules (`samples.load_samples`, `samples.check_shape`, which
# `stream.check_stream` keeps). Bump it when they
# get stricter: blobs a base vouched for under older rules are then parsed again.
SHAPE_RULES = 3


def shape_key(invariant: Invariant) -> str:
    """What `check_shape` depends on (the entry names the package a `raises` or callable may be
    in; a reference forbids `raises` in some kinds), plus the pin and SHAPE_RULES: the key a
    vouched-for shape is recorded under (`manifest.vouch_for_base`)."""
    return (
        f"rules {SHAPE_RULES} {invariant.blob_sha256} {invariant.kind} {','.join(invariant.args)} "
        f"{','.join(invariant.args_names)} {invariant.receiver is not None} {invariant.over} "
        f"{invariant.entry} {invariant.reference is not None}"
    )
