"""`clean-run`: the harness on a pristine tree; writes the per-id results as JUnit XML."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from tools.oracle_gate import errors
from tools.oracle_gate.clean_run import clean_run
from tools.oracle_gate.commands.check_cmd import choose_salt
from tools.oracle_gate.errors import UsageError
from tools.oracle_gate.gitio import default_base, merge_base, refuse_grafts, resolve_commit
from tools.oracle_gate.labels import collect_labels
from tools.oracle_gate.loader import load_oracles
from tools.oracle_gate.policy import has_label, label_name
from tools.oracle_gate.results import to_junit
from tools.oracle_gate.text import visible
from tools.oracle_gate.tree import GitTree


def run(args: argparse.Namespace, repo: str, environ: Mapping[str, str]) -> int:
    """Runs the clean harness and writes `--out`; returns 0, or 1 when Bazel could not run it.

    The tree holds HEAD's committed code and harness with the merge base's `oracles/` (HEAD's
    when the change carries the oracle-change label, as a human approved those).
    """
    out = os.path.abspath(args.out)
    if not os.path.isdir(os.path.dirname(out)) or not os.access(os.path.dirname(out), os.W_OK):
        raise UsageError(f"--out {args.out}: its directory does not exist or is not writable")
    refuse_grafts(repo)
    base = default_base(repo) if args.base is None else args.base
    head = resolve_commit(repo, "HEAD")
    mb = merge_base(repo, resolve_commit(repo, base), head)
    label = label_name(load_oracles(GitTree(repo, mb)).policy, load_oracles(GitTree(repo, head)).policy)
    found = collect_labels(args.label, environ, repo, head=head)
    labelled = has_label(label, found.names)
    for note in found.notes:  # why a CI label does not count
        print(note)
    salt = choose_salt(args.salt) if args.salt else ""
    run_result = clean_run(repo, head, head if labelled else mb, environ, remote=args.remote, salt=salt)
    with open(out, "wb") as f:
        f.write(to_junit(run_result.observations(), "clean-run"))
    for line in run_result.summary:
        print(visible(f"clean run: {line}"))
    width = max([len(i) for i in run_result.outcomes] + [2])
    observed = run_result.observations()
    for ident in sorted(observed):
        print(f"  {ident.ljust(width)}  {observed[ident].outcome:9}  {observed[ident].digest[:12] or '-'}")
    for label, status in run_result.harness_failures().items():
        print(visible(f"  harness target {label}: {status}"))
    print(visible(f"wrote {out} ({len(run_result.outcomes)} id(s))"))
    if run_result.build_failed:
        print("oracle_gate: [1] the clean run did not build (bazel exit 1)", file=sys.stderr)
        return errors.UNDECIDED
    return errors.OK
