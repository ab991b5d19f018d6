"""Pull-request labels from the command line and CI environments (docs/design.md section 5)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from tools.oracle_gate.errors import UsageError


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def collect_labels(cli_labels: Sequence[str], environ: Mapping[str, str]) -> set[str]:
    """Gathers labels from every source (callers compare them case-insensitively, as GitHub does): `--label`, `PR_LABELS` (comma-separated),
    the GitHub event file at `GITHUB_EVENT_PATH` (`pull_request.labels[].name`) and
    `CI_MERGE_REQUEST_LABELS` (GitLab, comma-separated).

    Raises:
        UsageError: (exit 1) when the GitHub event file cannot be read or has an unexpected shape.
    """
    labels: set[str] = set()
    for value in cli_labels:
        labels.update(_split(value))
    labels.update(_split(environ.get("PR_LABELS", "")))
    labels.update(_split(environ.get("CI_MERGE_REQUEST_LABELS", "")))
    event_path = environ.get("GITHUB_EVENT_PATH", "")
    if event_path:
        try:
            with open(event_path, encoding="utf-8") as f:
                event = json.load(f)
        except (OSError, ValueError, RecursionError) as exc:
            raise UsageError(f"cannot read the GitHub event file {event_path}: {exc}") from None
        pull = event.get("pull_request") if isinstance(event, dict) else None
        if pull is not None:
            items = pull.get("labels", []) if isinstance(pull, dict) else None
            if not isinstance(items, list):
                raise UsageError(f"{event_path}: pull_request.labels is not a list")
            for item in items:
                name = item.get("name") if isinstance(item, dict) else None
                if not isinstance(name, str):
                    raise UsageError(f"{event_path}: a pull_request.labels entry has no string name")
                labels.add(name.strip())
    return labels
