"""Pull-request labels from the command line and CI environments (docs/design.md section 5).

A label approves the commit it was given on, not the pull request: a label a human added while the
pull request's head was commit A must not approve commit B pushed later. So a label from a CI
platform's data counts only when that data names the commit the label was given on and that
commit is the one being checked: HEAD, or (GitHub only) the second parent of HEAD when HEAD is the
merge commit the platform made of the base branch and the head. Otherwise the label is treated as
absent and a note says why. Labels given with `--label` count as they are: whoever passes them
vouches for them.

The rule per source:

- `--label` (repeatable, comma-separated): always counts.
- `PR_LABELS` (comma-separated, any platform) counts only with `PR_HEAD_SHA`, the full id of the
  commit the labels were given on, naming HEAD itself. The step that sets the two vouches that
  every label in PR_LABELS was given on that commit. PR_LABELS without PR_HEAD_SHA is ignored
  (fail closed). HEAD's second parent is not enough: any merge can have the labelled commit as its
  second parent (one the author pushes, with other changes in its first parent), and nothing here
  says HEAD is the merge the platform made, as GITHUB_SHA does on GitHub. A CI that checks out a
  platform-made merge commit passes `--label` from a step that verified the label and the merge.
- The GitHub event file at `GITHUB_EVENT_PATH` (the `pull_request` webhook payload GitHub Actions
  writes there): only the `labeled` action ties a label to a commit. Its `label.name` was given
  on `pull_request.head.sha`, the head at labelling time; that label counts when head.sha names
  HEAD, or HEAD's second parent when HEAD is also `GITHUB_SHA` (for `pull_request` events the
  merge commit GitHub made for this event, checked out from `refs/pull/N/merge`). Every other
  label the payload lists in `pull_request.labels[].name` (and every label of any other action,
  `synchronize` after a push included) is on the pull request now but was given on an unknown
  commit, so it is ignored. github_labels.py reads the event file.
- With ORACLE_GATE_LABELERS set (comma-separated logins), a GitHub `labeled` event counts only
  when its `sender.login` is one of them; the same variable limits `gitlab-labels` on GitLab.
- GitLab's `CI_MERGE_REQUEST_LABELS` (predefined variable: the merge request's labels when the
  pipeline was created) names no commit: `CI_COMMIT_SHA` and `CI_MERGE_REQUEST_SOURCE_BRANCH_SHA`
  name the commit the pipeline builds, and a label stays on the merge request across pushes. So
  these labels are always ignored; a GitLab pipeline passes `PR_LABELS` with `PR_HEAD_SHA`, or
  `--label`, from a job that verified the label was given on the head it builds.

A commit id from the environment or an event must be a full 40 (SHA-1) or 64 (SHA-256) hex digit
id; it is compared case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tools.oracle_gate.approval.github_labels import event_labels
from tools.oracle_gate.git.gitio import parents, resolve_commit
from tools.oracle_gate.text import one_line

FULL_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
APPROVES = "a label approves the commit it was given on"


@dataclass
class Labels:
    """The labels that count for the commit being checked, and why others do not.

    Attributes:
        names: the label names that count, as given (callers compare them case-insensitively).
        notes: one single-line note per source whose labels were ignored, for the report.
        head: the commit CI labels were checked against, or "" when no CI source had labels.
            A caller that resolves HEAD again must get the same commit.
    """

    names: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    head: str = ""


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _shown(value: object) -> str:
    """`repr(value)` shown on one line (`text.one_line`), cut to 80 characters."""
    return one_line(repr(value), 80)


def _named(names: Iterable[str]) -> str:
    """`label 'a'` or `labels 'a', 'b'`, at most ten shown."""
    ordered = sorted(names)
    shown = ", ".join(_shown(n) for n in ordered[:10]) + (f" and {len(ordered) - 10} more" if len(ordered) > 10 else "")
    return f"label {shown}" if len(ordered) == 1 else f"labels {shown}"


class _Head:
    """The commit being checked and its parents, read from git only when a CI label needs them."""

    def __init__(self, repo: str, head: str | None) -> None:
        self.repo = repo
        self._commit = head or ""
        self._parents: list[str] | None = None

    def commit(self) -> str:
        """The full id of the commit being checked (HEAD unless the caller gave it).

        Raises:
            GitError: when HEAD has no commit.
        """
        if not self._commit:
            self._commit = resolve_commit(self.repo, "HEAD")
        return self._commit

    @property
    def resolved(self) -> str:
        """The commit id when it was given or read, else ""."""
        return self._commit

    def mismatch(self, subject: str, named: str, merge_trusted: str | None) -> str | None:
        """None when `named` (a full id) is HEAD, or HEAD's second parent with HEAD a two-parent
        merge and `merge_trusted` None; otherwise why not, as a phrase starting with `subject`.
        `merge_trusted` is None when the merge form is accepted for this source, else why it is not."""
        head = self.commit()
        if named.lower() == head.lower():
            return None
        if self._parents is None:
            self._parents = parents(self.repo, head)
        two = self._parents if len(self._parents) == 2 else None
        if two is not None and two[1].lower() == named.lower():
            if merge_trusted is None:
                return None
            return f"{subject} names {two[1]}, the second parent of the merge HEAD {head}, but {merge_trusted}"
        merge = f" (a merge whose second parent is {two[1]})" if two is not None else ""
        return f"{subject} names head {named.lower()}, HEAD is {head}{merge}"


def collect_labels(cli_labels: Sequence[str], environ: Mapping[str, str], repo: str, head: str | None = None) -> Labels:
    """Gathers the labels that approve the commit being checked (rules: the module docstring).

    Args:
        cli_labels: `--label` values, each a name or comma-separated names; they always count.
        environ: the environment: `PR_LABELS`/`PR_HEAD_SHA`, `GITHUB_EVENT_PATH`/`GITHUB_SHA`,
            `CI_MERGE_REQUEST_LABELS`.
        repo: the work tree's root; HEAD and its parents are read from it (only when a CI source
            has labels).
        head: the full id of the commit being checked when the caller already resolved HEAD.

    Returns:
        The labels that count, a note for each source whose labels were ignored, and the commit
        they were checked against.

    Raises:
        UsageError: (exit 1) when the GitHub event file cannot be read or has an unexpected shape
            (not JSON, `pull_request.labels` not a list, a label without a string name, a
            `labeled` event without a string `label.name`).
        GitError: (exit 1) when HEAD or its parents cannot be read and a CI source has labels.
    """
    found = Labels()
    target = _Head(repo, head)
    for value in cli_labels:
        found.names.update(_split(value))
    _pr_labels(environ, target, found)
    _gitlab(environ, found)
    _github(environ, target, found)
    found.head = target.resolved
    return found


def _pr_labels(environ: Mapping[str, str], target: _Head, found: Labels) -> None:
    """PR_LABELS counts when PR_HEAD_SHA names HEAD itself (never HEAD's second parent)."""
    names = set(_split(environ.get("PR_LABELS", "")))
    if not names:
        return
    sha = environ.get("PR_HEAD_SHA", "").strip()
    fix = (
        f"{APPROVES}; set PR_HEAD_SHA to the full id of the commit the labels were given on, "
        "or pass --label from a step that verified it"
    )
    if not sha:
        why: str | None = "PR_HEAD_SHA is not set, so nothing names the commit they were given on"
    elif not FULL_ID.fullmatch(sha):
        why = f"PR_HEAD_SHA is {_shown(sha)}, not a full commit id (40 or 64 hex digits)"
    else:
        why = target.mismatch(
            "PR_HEAD_SHA",
            sha,
            (
                "PR_LABELS counts only for HEAD itself: nothing says HEAD is the merge the platform made, and any "
                "merge can have the labelled commit as its second parent"
            ),
        )
    if why is None:
        found.names.update(names)
    else:
        found.notes.append(f"{_named(names)} from PR_LABELS ignored: {why} ({fix})")


def _gitlab(environ: Mapping[str, str], found: Labels) -> None:
    """CI_MERGE_REQUEST_LABELS never counts: GitLab does not say which commit a label was given on."""
    names = set(_split(environ.get("CI_MERGE_REQUEST_LABELS", "")))
    if names:
        found.notes.append(
            f"{_named(names)} from GitLab's CI_MERGE_REQUEST_LABELS ignored: GitLab lists the merge request's "
            "labels, not the commit each was given on (CI_COMMIT_SHA names the commit the pipeline builds, and a "
            f"label stays on the merge request across pushes) ({APPROVES}; pass PR_LABELS with PR_HEAD_SHA, or "
            "--label, from a job that verified the label was given on this head)"
        )


def _github(environ: Mapping[str, str], target: _Head, found: Labels) -> None:
    """Labels from the GitHub event file: only a `labeled` event's label, given on head.sha (github_labels.py).

    Raises:
        UsageError: when the file cannot be read or has an unexpected shape.
    """
    event = event_labels(environ, target)
    found.names.update(event.names)
    found.notes.extend(f"{_named(names)} from the GitHub event ignored: {why}" for names, why in event.ignored)
