"""The labels of a GitLab merge request that were given on the commit being checked.

GitLab's `CI_MERGE_REQUEST_LABELS` lists a merge request's labels but not the commit each was
given on, so the gate never counts it (labels.py). This module asks GitLab's REST API (v4) instead:

- `GET /projects/:id/merge_requests/:iid/versions`: every diff version of the merge request, one
  per push (and per rebase of the target), each with `head_commit_sha` and `created_at`;
- `GET /projects/:id/merge_requests/:iid/resource_label_events`: every label added to or removed
  from it, with `action` (`add`/`remove`), `label.name` and `created_at`.

A label was given on commit C when, at the time of its last `add` event, the newest version
created strictly before that time had C as its head, and no `remove` event for it came later.
A label added in the same millisecond as a push is not counted (which came first is unknown).
Both lists are read in full (`per_page=100`, following the `X-Next-Page` header). With
ORACLE_GATE_LABELERS set (comma-separated usernames), only `add` events by those users count: on
GitLab anyone who may push to the project may label a merge request.

The token is a GitLab token with the `read_api` scope, sent as the `PRIVATE-TOKEN` header; it is
read from the environment and never printed. The API must be `https://`, or `http://` on a
loopback host (a local stand-in), and no redirect is followed (it would take the token along).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from tools.oracle_gate.errors import UsageError
from tools.oracle_gate.text import one_line

TOKEN_VARIABLE = "ORACLE_GATE_GITLAB_TOKEN"
LABELERS_VARIABLE = "ORACLE_GATE_LABELERS"
# Predefined variables of a GitLab merge request pipeline that name the API and the merge request.
PIPELINE_VARIABLES = ("CI_API_V4_URL", "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID")
PER_PAGE = 100
MAX_PAGES = 100  # 10,000 entries per list: beyond that the merge request is not one a person labels
TIMEOUT_SECONDS = 30.0
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
FULL_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")

# (url, headers) -> (status, headers, body bytes); replaced in tests.
Fetch = Callable[[str, Mapping[str, str]], tuple[int, Mapping[str, str], bytes]]


@dataclass
class GivenLabels:
    """The result: label names given on the head, and why other labels do not count.

    Attributes:
        names: label names whose last `add` was on the head and that were not removed since.
        notes: one line per label on the merge request that does not count, saying why.
    """

    names: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: urllib would send the token on to wherever one points (another host,
    plain http), and GitLab's API answers these endpoints without redirecting. A 3xx answer then
    surfaces as an HTTPError."""

    def redirect_request(
        self, req: urllib.request.Request, fp: object, code: int, msg: str, headers: object, newurl: str
    ) -> None:
        return None


def _fetch(url: str, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes]:
    request = urllib.request.Request(url, headers=dict(headers))
    opener = urllib.request.build_opener(_NoRedirect)
    with opener.open(request, timeout=TIMEOUT_SECONDS) as response:  # scheme checked by _api_base
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def _api_base(url: str) -> str:
    """`url` without a trailing slash, after checking its scheme.

    Raises:
        UsageError: for a scheme other than https (or http on a loopback host).
    """
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "https" or (parsed.scheme == "http" and parsed.hostname in LOOPBACK_HOSTS):
        return url.rstrip("/")
    raise UsageError(
        f"CI_API_V4_URL {one_line(url, 80)!r} must be https:// (http:// only on a loopback host): "
        f"{TOKEN_VARIABLE} would be sent in the clear"
    )


def _read_list(base: str, path: str, token: str, fetch: Fetch) -> list[dict[str, object]]:
    """Every entry of a paginated list endpoint.

    Raises:
        UsageError: for an HTTP or network error, a body that is not a JSON list of objects, or
            more than MAX_PAGES pages.
    """
    entries: list[dict[str, object]] = []
    page = "1"
    for _ in range(MAX_PAGES):
        url = f"{base}{path}?per_page={PER_PAGE}&page={urllib.parse.quote(page)}"
        try:
            status, headers, body = fetch(url, {"PRIVATE-TOKEN": token, "Accept": "application/json"})
        except urllib.error.HTTPError as exc:
            hint = ""
            if exc.code in (401, 403):
                hint = f" (is {TOKEN_VARIABLE} a token with the read_api scope?)"
            elif 300 <= exc.code < 400:
                location = one_line(str(exc.headers.get("Location", "")), 120) if exc.headers else ""
                hint = (
                    f" (a redirect to {location!r}: not followed, the token would go with it; "
                    "set CI_API_V4_URL to the API itself)"
                )
            raise UsageError(f"GitLab API GET {url}: HTTP {exc.code} {one_line(str(exc.reason), 80)}{hint}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise UsageError(f"GitLab API GET {url}: {one_line(str(exc), 120)}") from None
        if status != 200:
            raise UsageError(f"GitLab API GET {url}: HTTP {status}")
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            raise UsageError(f"GitLab API GET {url}: the answer is not JSON") from None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise UsageError(f"GitLab API GET {url}: the answer is not a list of objects")
        entries.extend(data)
        page = str(headers.get("x-next-page", "")).strip()
        if not page:
            return entries
        if not page.isdigit():
            raise UsageError(f"GitLab API GET {url}: X-Next-Page {one_line(page, 20)!r} is not a page number")
    raise UsageError(f"GitLab API {path}: more than {MAX_PAGES} pages of {PER_PAGE}")


def _time(value: object, what: str) -> datetime:
    """An ISO 8601 `created_at` with its time zone.

    Raises:
        UsageError: for anything else.
    """
    try:
        if not isinstance(value, str):
            raise ValueError
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"GitLab API: {what} has created_at {one_line(repr(value), 60)}, not an ISO 8601 time"
        ) from None
    if parsed.tzinfo is None:
        raise UsageError(f"GitLab API: {what} has created_at {value!r} without a time zone")
    return parsed


def given_on(
    head: str,
    versions: list[dict[str, object]],
    events: list[dict[str, object]],
    labelers: frozenset[str] | None = None,
) -> GivenLabels:
    """Which labels were given on `head` (the rule: the module docstring).

    Args:
        head: the full id of the commit being checked.
        versions: the merge request's diff versions, as the API returns them (any order).
        events: its resource label events, as the API returns them (any order).
        labelers: when given, the lower-cased usernames whose `add` events count (`labelers_from`);
            a `remove` counts whoever made it.

    Returns:
        The labels given on `head`, sorted, and a note for each other label still on the merge request.

    Raises:
        UsageError: for a version or event without the fields the rule needs.
    """
    pushes = _pushes(versions)
    last, others = _latest(events, labelers)
    found = GivenLabels()
    for name, username in sorted(others.items()):
        if last.get(name, (None, ""))[1] != "add":
            found.notes.append(f"label {name!r} ignored: added by {username!r}, who is not one of {LABELERS_VARIABLE}")
    for name, (when, action) in sorted(last.items()):
        if action != "add":
            continue
        before = [sha for pushed, sha in pushes if pushed < when]
        on = before[-1] if before else None
        if any(c in name for c in ",\n\r"):
            found.notes.append(f"label {name!r} ignored: a comma or line break cannot pass through PR_LABELS")
        elif on == head.lower():
            found.names.append(name)
        elif on is None:
            found.notes.append(
                f"label {name!r} ignored: it was added at {when.isoformat()}, before any push GitLab "
                "recorded for the merge request"
            )
        else:
            found.notes.append(
                f"label {name!r} ignored: it was added at {when.isoformat()} on head {on}, not on "
                f"{head.lower()} (a label approves the commit it was given on; re-apply it)"
            )
    return found


def _pushes(versions: list[dict[str, object]]) -> list[tuple[datetime, str]]:
    """(created_at, lower-cased head_commit_sha) of every version, oldest first; UsageError for a malformed one."""
    pushes: list[tuple[datetime, str]] = []
    for k, version in enumerate(versions):
        sha = version.get("head_commit_sha")
        if not isinstance(sha, str) or not FULL_ID.fullmatch(sha):
            raise UsageError(f"GitLab API: version {k + 1} has no full head_commit_sha")
        pushes.append((_time(version.get("created_at"), f"version {k + 1}"), sha.lower()))
    pushes.sort()
    return pushes


def _latest(
    events: list[dict[str, object]], labelers: frozenset[str] | None
) -> tuple[dict[str, tuple[datetime, str]], dict[str, str]]:
    """Label name -> (time, action) of its last counted event, and -> a user not in `labelers` who added it."""
    last: dict[str, tuple[datetime, str]] = {}
    others: dict[str, str] = {}
    ordered = []
    for k, event in enumerate(events):
        label = event.get("label")
        if label is None:
            continue  # a label deleted from the project since: it is on no merge request
        name = label.get("name") if isinstance(label, dict) else None
        action = event.get("action")
        if not isinstance(name, str) or action not in ("add", "remove"):
            raise UsageError(f"GitLab API: label event {k + 1} has no label.name or an action other than add/remove")
        if action == "add" and labelers is not None:
            user = event.get("user")
            username = user.get("username") if isinstance(user, dict) else None
            if not isinstance(username, str) or username.lower() not in labelers:
                others.setdefault(name, str(username))
                continue
        ordered.append((_time(event.get("created_at"), f"label event {k + 1}"), k, name, str(action)))
    for when, _, name, action in sorted(ordered):
        last[name] = (when, action)
    return last, others


def merge_request_labels(environ: Mapping[str, str], head: str, fetch: Fetch = _fetch) -> GivenLabels:
    """Asks GitLab which labels of this pipeline's merge request were given on `head`.

    Args:
        environ: the job's environment: `CI_API_V4_URL`, `CI_PROJECT_ID`, `CI_MERGE_REQUEST_IID`
            (predefined in a merge request pipeline) and ORACLE_GATE_GITLAB_TOKEN.
        head: the full id of the commit being checked.
        fetch: the HTTP GET (url, headers) -> (status, lower-cased headers, body); a stand-in in tests.

    Returns:
        The labels given on `head` and notes on the others (`given_on`).

    Raises:
        UsageError: (exit 1) when a variable is missing, the head is not a full commit id, the API
            URL is not https, or the API fails or answers in an unexpected shape.

    ORACLE_GATE_LABELERS, when set, limits whose label additions count (`labelers_from`).
    """
    missing = [name for name in (*PIPELINE_VARIABLES, TOKEN_VARIABLE) if not environ.get(name, "").strip()]
    if missing:
        raise UsageError(
            f"{', '.join(missing)} not set: run this in a GitLab merge request pipeline, with "
            f"{TOKEN_VARIABLE} a masked CI/CD variable holding a token with the read_api scope"
        )
    if not FULL_ID.fullmatch(head):
        raise UsageError(f"--head {one_line(head, 80)!r} is not a full commit id (40 or 64 hex digits)")
    base = _api_base(environ["CI_API_V4_URL"].strip())
    project = urllib.parse.quote(environ["CI_PROJECT_ID"].strip(), safe="")
    iid = environ["CI_MERGE_REQUEST_IID"].strip()
    if not iid.isdigit():
        raise UsageError(f"CI_MERGE_REQUEST_IID {one_line(iid, 40)!r} is not a number")
    prefix = f"/projects/{project}/merge_requests/{iid}"
    token = environ[TOKEN_VARIABLE].strip()
    versions = _read_list(base, f"{prefix}/versions", token, fetch)
    events = _read_list(base, f"{prefix}/resource_label_events", token, fetch)
    return given_on(head, versions, events, labelers_from(environ))


def labelers_from(environ: Mapping[str, str]) -> frozenset[str] | None:
    """The lower-cased names in ORACLE_GATE_LABELERS (comma-separated user names of the people
    whose labels count: GitHub logins, GitLab usernames), or None when it is unset or empty."""
    names = frozenset(part.strip().lower() for part in environ.get(LABELERS_VARIABLE, "").split(",") if part.strip())
    return names or None
