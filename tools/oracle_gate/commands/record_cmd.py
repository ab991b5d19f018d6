"""`record ID... [--from REV] [--count N] [--salt S] [--write]`: rows' samples observed on approved
code, shown as a table and, with --write, written as their blobs and pinned (authoring/record.py)."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import secrets
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.approval.policy import POLICY_PATH, load_policy
from tools.oracle_gate.authoring import record
from tools.oracle_gate.authoring.pin import rewrite
from tools.oracle_gate.authoring.promote import blob_text
from tools.oracle_gate.authoring.record_files import build_files_lacking, work_oracles
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import GateError, GitError, OracleError, UsageError, exit_codes_help
from tools.oracle_gate.files import linked_folder, replace_file
from tools.oracle_gate.git.gitio import default_base, on_first_parent_chain, resolve_commit
from tools.oracle_gate.git.tree import GitTree, WorkTree
from tools.oracle_gate.runs.probe import probe
from tools.oracle_gate.spec import kinds
from tools.oracle_gate.suite.manifest import write_manifest
from tools.oracle_gate.suite.probe_files import probe_oracles
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "record"
# Fresh samples drawn per row when --count is not given.
DEFAULT_COUNT = 20
DESCRIPTION = """\
Runs each row ID's entry as committed at the base tip (or at --from REV) through
the gate's own caller, in a tree written from that commit's git objects and
sealed like the clean run, on the row's stored inputs, on N fresh samples drawn
from its generate table and on its boundary samples (each generator's bounds,
0, -1, 1, empty and one-past-the-longest strings and lists). Prints the table
a reviewer reads: each sample's inputs and result, marked new, changed or kept
(left out, with why, for a sample the approved code fails the row on). With
--write, writes each row's blob (exact_table: the observed values as expected
values, or `raises` for an exception; other kinds: the inputs), sets the pins
and regenerates the manifest: an oracle change, whose commit needs the
policy's label. Writes nothing without --write or on any failure. Refuses to
run from a branch that is not on the base's first-parent history unless --from
names the commit (then the first line says so). Exits 0; 5 for a row the
schema refuses, one without inputs, or one whose recording fails (its entry
missing at REV, a limit, a result that is not plain JSON); 1 for an unknown ID
or REV, or a probe that cannot run."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `record` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="record rows' samples from approved code into their blobs",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("ids", nargs="+", metavar="ID", help="the rows to record")
    parser.add_argument("--base", help="the base branch (default: origin/main, else main)")
    parser.add_argument("--from", dest="source", metavar="REV", help="record from this commit instead of the base tip")
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"fresh samples per row ({DEFAULT_COUNT})")
    parser.add_argument("--salt", help="the salt to draw the fresh samples with (default: a new one, printed)")
    parser.add_argument("--write", action="store_true", help="write the blobs, the pins and the manifest")


def recorded_commit(repo: str, base: str, source: str | None) -> tuple[str, str]:
    """(commit to record from, the first line to print or "").

    Raises:
        UsageError: (exit 1) for a base or REV that names no commit, or, without `source`, a HEAD
            that is not on the base's first-parent history.
    """
    try:
        tip = resolve_commit(repo, base)
    except GitError as exc:
        raise UsageError(str(exc)) from None
    base = base.removeprefix("refs/heads/")
    if source is None:
        head = resolve_commit(repo, "HEAD")
        if not on_first_parent_chain(repo, tip, head):
            raise UsageError(
                f"HEAD {head[:12]} is not on {base}'s first-parent history; record reads the base tip "
                f"{tip[:12]}, not this branch's code: run it on {base}, or name the commit with --from REV"
            )
        return tip, ""
    try:
        commit = resolve_commit(repo, source)
    except GitError:
        raise UsageError(f"--from {source!r} is not a commit in this repository") from None
    if on_first_parent_chain(repo, tip, commit):
        return commit, ""
    return commit, f"record: recording from {source} ({commit[:12]}), which is not on {base}'s first-parent history"


def run(args: argparse.Namespace, context: Context) -> int:
    """Records the rows; returns 0 (exit codes otherwise as DESCRIPTION says).

    Raises:
        UsageError: (exit 1) as `recorded_commit`, and for an unknown ID or a --count below 0.
        OracleError: (exit 5) as `record.load_targets`, `record.tried_samples`, `record.results_of`
            and `record.recorded`.
        GateError: (exit 1) when the probe cannot run.
    """
    if args.count < 0 or args.count > 100_000:
        raise UsageError("--count must be between 0 and 100000")
    repo = context.repo()
    base = default_base(repo) if args.base is None else args.base
    commit, first = recorded_commit(repo, base, args.source)
    if first:
        print(visible(first))
    tree = WorkTree(repo)
    policy = load_policy(tree, tree.files("oracles").get(POLICY_PATH))
    targets = record.load_targets(tree, args.ids, policy.production_packages if policy else None)
    salt = args.salt or secrets.token_hex(8)
    targets, notes = _annotated(repo, commit, targets)
    tried = [record.tried_samples(t, args.count, salt) for t in targets]
    extra = build_files_lacking(repo, commit, policy.production_packages if policy else ())
    if extra:
        names = ", ".join(sorted(extra))
        print(visible(f"record: the work tree gives {len(extra)} build file(s) that {commit[:12]} lacks: {names}"))
    rows = [record.probe_row(t, samples) for t, samples in zip(targets, tried, strict=True)]
    replies = probe(repo, commit, probe_oracles(work_oracles(tree), rows), context.environ, extra=extra)
    where = f"{args.source or base.removeprefix('refs/heads/')} {commit[:12]}"
    done = []
    for target, samples in zip(targets, tried, strict=True):
        results = record.results_of(target, replies.get(target.invariant.id), where, len(samples))
        done.append(record.recorded(target, samples, results, salt))
    for item in done:
        _print_table(item, where, salt, notes.get(item.target.invariant.id, ""))
    if not args.write:
        print(visible(f"nothing written; `record {' '.join(args.ids)} --salt {salt} --write` writes the blobs"))
        return errors.OK
    for item in done:
        if not item.samples:
            inv = item.target.invariant
            raise OracleError(
                f"record left out every sample: the code at {where} does not hold the row's claim on any of "
                f"them (the table above says why); nothing written: fix the row, or drop it",
                path=inv.source,
                row=inv.id,
                field="blob",
            )
    return _write(repo, tree, done)


def _annotated(repo: str, commit: str, targets: Sequence[record.Target]) -> tuple[list[record.Target], dict[str, str]]:
    """`targets`, each `exact_table` row without a `generate` table given the generators of its
    entry's annotations at `commit` (`record.annotated_generate`); and id -> the line saying where its
    fresh samples come from, or why it has none."""
    tree = GitTree(repo, commit)
    listing = tree.files("")
    out, notes = [], {}
    for target in targets:
        inv = target.invariant
        if inv.generate is not None or not kinds.kind(inv.kind).expected_stored:
            out.append(target)
            continue
        paths = [p for p in record.module_paths(inv.entry.partition(":")[0]) if p in listing]
        sources = {p: tree.read(listing[p]).decode("utf-8", "replace") for p in paths}
        spec = record.annotated_generate(target, sources)
        if isinstance(spec, str):
            notes[inv.id] = f"no fresh samples: {spec}"
            out.append(target)
            continue
        notes[inv.id] = "fresh samples drawn from the entry's annotations at the recorded commit"
        out.append(dataclasses.replace(target, invariant=dataclasses.replace(inv, generate=spec)))
    return out, notes


def _print_table(item: record.Recorded, where: str, salt: str, note: str) -> None:
    """The table of one row: a header, its note, one line per sample tried, a count."""
    inv = item.target.invariant
    print(visible(f"{inv.id} ({inv.source}): {inv.entry or ', '.join(inv.entries)} at {where}, salt {salt}"))
    if note:
        print(visible(f"  {note}"))
    width = max([len(line.mark) for line in item.lines] + [4])
    for line in item.lines:
        note = f"  ({line.note})" if line.note else ""
        print(visible(f"  {line.mark:<{width}}  {line.inputs} -> {line.result}{note}"))
    marks = {mark: sum(1 for line in item.lines if line.mark == mark) for mark in record.MARKS}
    shown = ", ".join(f"{count} {mark}" for mark, count in marks.items() if count)
    print(visible(f"  {len(item.samples)} sample(s) for {inv.blob}: {shown or 'none'}"))


def _write(repo: str, tree: WorkTree, done: Sequence[record.Recorded]) -> int:
    """Writes every blob, each oracle file's pins and the manifest, all computed before the first
    write (a pin that cannot be set in place writes nothing); returns 0.

    Raises:
        GateError: (exit 1) as `pin.rewrite`, or for a symlinked folder on the way to a file, before
            anything is written.
    """
    blobs: dict[str, bytes] = {}
    pins: dict[str, dict[int, str]] = {}
    for item in done:
        inv = item.target.invariant
        blobs[inv.blob] = blob_text(item.samples)
        pins.setdefault(inv.source, {})[item.target.index] = hashlib.sha256(blobs[inv.blob]).hexdigest()
    files = {}
    for path, new in sorted(pins.items()):
        with open(os.path.join(repo, *path.split("/")), "rb") as f:
            files[path] = rewrite(f.read(), path, new)
    for path in sorted({**blobs, **files}):
        linked = linked_folder(repo, path)
        if linked is not None:
            raise GateError(f"{linked} is a symlink: record writes {path} only inside the work tree; remove the link")
    for path, data in sorted({**blobs, **files}.items()):
        target = os.path.join(repo, *path.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        replace_file(target, data)
    for item in done:
        print(visible(f"wrote {item.target.invariant.blob} ({len(item.samples)} sample(s))"))
    lines = write_manifest(tree)
    sys.stdout.flush()
    print(
        visible(
            f"set {sum(len(v) for v in pins.values())} pin(s) and wrote oracles/MANIFEST.sha256 ({lines} lines); "
            "commit them: the pull request needs the policy's label"
        )
    )
    return errors.OK
