"""The labels of a GitHub pull request's event that were given on the commit being checked.

GitHub Actions writes the webhook payload of the event that started the run to the file named by
`GITHUB_EVENT_PATH`; for a pull request that is the `pull_request` payload. This module reads that
file and nothing else of GitHub: it calls no REST endpoint and needs no token. The fields it uses:

- `action`: only `labeled` ties a label to a commit (docs/design.md section 5);
- `label.name`: the label a `labeled` event adds;
- `pull_request.head.sha`: the head of the pull request when the event happened, so the commit
  a `labeled` event's label was given on;
- `pull_request.labels[].name`: every label on the pull request now, given on unknown commits;
- `sender.login`: who added the label, checked against ORACLE_GATE_LABELERS when it is set
  (comma-separated GitHub logins; `labelers_from` in gitlab_labels.py).

The rule: a `labeled` event's label counts when `pull_request.head.sha` names HEAD, or HEAD's
second parent when HEAD is also `GITHUB_SHA` (the environment variable GitHub Actions sets: for
`pull_request` events the merge commit GitHub made for this event, checked out from
`refs/pull/N/merge`). Every other label the payload lists, and every label of any other action
(`synchronize` after a push included), is ignored. A payload without `pull_request` (a push, say)
has no labels. The labels.py module docstring states the rule for every source.

A commit id in the event or in `GITHUB_SHA` must be a full 40 (SHA-1) or 64 (SHA-256) hex digit
id; it is compared case-insensitively.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tools.oracle_gate.approval.gitlab_labels import LABELERS_VARIABLE, labelers_from
from tools.oracle_gate.errors import UsageError
from tools.oracle_gate.text import one_line

EVENT_VARIABLE = "GITHUB_EVENT_PATH"
FULL_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
APPROVES = "a label approves the commit it was given on"
REAPPLY = f"({APPROVES}; re-apply the label on the current head)"


class Head(Protocol):
    """The commit being checked, read from git only when a label needs it (labels.py's `_Head`)."""

    def commit(self) -> str:
        """The full id of the commit being checked."""

    def mismatch(self, subject: str, named: str, merge_trusted: str | None) -> str | None:
        """None when `named` is HEAD, or HEAD's second parent with `merge_trusted` None; else why not."""


@dataclass
class EventLabels:
    """The result: label names given on the head, and the labels that do not count with why.

    Attributes:
        names: the label names that count, stripped of surrounding blanks.
        ignored: (label names, why they do not count) per group of labels that do not count, in
            the order found; the caller names the source (`labels.py`).
    """

    names: set[str] = field(default_factory=set)
    ignored: list[tuple[set[str], str]] = field(default_factory=list)


def _shown(value: object) -> str:
    """`repr(value)` shown on one line (`text.one_line`), cut to 80 characters."""
    return one_line(repr(value), 80)


def event_labels(environ: Mapping[str, str], target: Head) -> EventLabels:
    """Labels from the GitHub event file: only a `labeled` event's label, given on head.sha.

    Args:
        environ: the environment: `GITHUB_EVENT_PATH`, `GITHUB_SHA` and ORACLE_GATE_LABELERS.
        target: the commit being checked; git is read only when a `labeled` event's label needs it.

    Returns:
        The labels that count and, for the others, why not (nothing when GITHUB_EVENT_PATH is
        unset or the event is not a pull request's).

    Raises:
        UsageError: when the file cannot be read or has an unexpected shape.
        GitError: when HEAD or its parents cannot be read.
    """
    found = EventLabels()
    event_path = environ.get(EVENT_VARIABLE, "")
    if not event_path:
        return found
    event = _read_event(event_path)
    if not isinstance(event, dict) or event.get("pull_request") is None:
        return found  # not a pull request's event (a push, say): no labels
    pull = event["pull_request"]
    listed = _listed(event_path, pull)
    given = _given(event_path, event)
    others = listed - given
    if others:
        found.ignored.append((others, f"{_others_why(event.get('action'), given)} {REAPPLY}"))
    if not given:
        return found
    refused = _sender_refused(environ, event)
    if refused is not None:
        found.ignored.append((given, refused))
        return found
    mismatch = _head_mismatch(environ, pull, target)
    if mismatch is None:
        found.names.update(given)
    else:
        found.ignored.append((given, f"{mismatch} {REAPPLY}"))
    return found


def _read_event(event_path: str) -> object:
    """The JSON document in the event file; UsageError when the file cannot be read or is not JSON."""
    try:
        with open(event_path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"cannot read the GitHub event file {event_path}: {exc}") from None


def _listed(event_path: str, pull: object) -> set[str]:
    """The non-blank names in `pull_request.labels[].name`, stripped; UsageError for another shape."""
    items = pull.get("labels", []) if isinstance(pull, dict) else None
    if not isinstance(items, list):
        raise UsageError(f"{event_path}: pull_request.labels is not a list")
    listed: set[str] = set()
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise UsageError(f"{event_path}: a pull_request.labels entry has no string name")
        if name.strip():
            listed.add(name.strip())
    return listed


def _given(event_path: str, event: dict[str, object]) -> set[str]:
    """The label a `labeled` event adds, stripped (none for another action); UsageError without label.name."""
    if event.get("action") != "labeled":
        return set()
    label = event.get("label")
    name = label.get("name") if isinstance(label, dict) else None
    if not isinstance(name, str):
        raise UsageError(f"{event_path}: a 'labeled' event has no string label.name")
    return {name.strip()} - {""}


def _others_why(action: object, given: set[str]) -> str:
    """Why the labels the event lists, other than the one a `labeled` event adds, do not count."""
    if given:
        return f"this 'labeled' event ties only the label it adds ({_shown(next(iter(given)))}) to a commit"
    what = f"a {_shown(action)} event" if isinstance(action, str) else "an event without an action"
    return (
        f"{what} lists the labels on the pull request, not the commit each was given on; only a "
        "'labeled' event names the head a label was given on"
    )


def _sender_refused(environ: Mapping[str, str], event: dict[str, object]) -> str | None:
    """None when ORACLE_GATE_LABELERS is unset or lists `sender.login`, else why the label does not count."""
    labelers = labelers_from(environ)
    if labelers is None:
        return None
    sender = event.get("sender")
    login = sender.get("login") if isinstance(sender, dict) else None
    if not isinstance(login, str) or login.lower() not in labelers:
        return f"added by {_shown(login)}, who is not one of {LABELERS_VARIABLE}"
    return None


def _head_mismatch(environ: Mapping[str, str], pull: dict[str, object], target: Head) -> str | None:
    """None when `pull_request.head.sha` names HEAD (or its second parent, HEAD being GITHUB_SHA), else why not."""
    head = pull.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    if not isinstance(sha, str) or not FULL_ID.fullmatch(sha):
        return f"pull_request.head.sha is {_shown(sha)}, not a full commit id, so the event names no head"
    github_sha = environ.get("GITHUB_SHA", "")
    merge_trusted = (
        None
        if FULL_ID.fullmatch(github_sha) and github_sha.lower() == target.commit().lower()
        else (
            f"GITHUB_SHA ({_shown(github_sha)}) does not name HEAD, so HEAD is not the merge GitHub made for this event"
        )
    )
    return target.mismatch("the event", sha, merge_trusted)
