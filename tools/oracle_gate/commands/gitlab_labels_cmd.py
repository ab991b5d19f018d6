"""`gitlab-labels [--head SHA]`: the labels of this GitLab merge request given on the head, for
PR_LABELS (gitlab_labels.py; the CI job in ci/gitlab/ uses it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.approval.gitlab_labels import merge_request_labels
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import exit_codes_help
from tools.oracle_gate.git.gitio import resolve_commit
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "gitlab-labels"
DESCRIPTION = """\
In a GitLab merge request pipeline, asks GitLab's API which of the merge
request's labels were given while the commit being checked was its head, and
prints them comma-separated on one line (nothing when there are none), for
PR_LABELS with PR_HEAD_SHA set to that commit. A label added before that commit
was pushed, or removed since, is left out with a note on stderr. Needs
CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID and ORACLE_GATE_GITLAB_TOKEN
(a token with the read_api scope). Exits 0, or 1 when the API cannot answer."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `gitlab-labels` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="a GitLab merge request's labels given on the head",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--head", help="full id of the commit being checked (default: HEAD of --repo)")


def run(args: argparse.Namespace, context: Context) -> int:
    """Prints the labels given on the head (stdout, one comma-separated line) and a note per label
    that does not count (stderr).

    Raises:
        UsageError: (exit 1) for a missing variable, a head that is not a full id, or an API failure.
        GitError: (exit 1) when --head is not given and HEAD cannot be read.
    """
    head = args.head if args.head is not None else resolve_commit(context.repo(), "HEAD")
    found = merge_request_labels(context.environ, head)
    for note in found.notes:
        print(visible(f"gitlab-labels: {note}"), file=sys.stderr)
    print(",".join(found.names))
    return errors.OK
