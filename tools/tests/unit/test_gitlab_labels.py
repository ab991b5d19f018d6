"""gitlab_labels.py and `gitlab-labels`: a label counts only when it was added while the checked
commit was the merge request's head, and was not removed since; the API is read in full pages,
over https (or loopback http), and every failure is one line with exit 1."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pytest

from tools.oracle_gate.approval.gitlab_labels import given_on, merge_request_labels
from tools.oracle_gate.errors import UsageError
from tools.testing.loopback_http import serve

A, B = "a" * 40, "b" * 40


def version(sha: str, at: str) -> dict[str, object]:
    return {"id": 1, "head_commit_sha": sha, "created_at": at}


def event(name: str, action: str, at: str, user: str = "alice") -> dict[str, object]:
    return {
        "id": 1,
        "action": action,
        "created_at": at,
        "label": {"id": 7, "name": name},
        "user": {"id": 3, "username": user},
    }


PUSHES = [version(A, "2026-11-01T10:00:00.000Z"), version(B, "2026-11-01T12:00:00.000Z")]


def test_a_label_added_while_the_head_was_current_counts():
    found = given_on(B, PUSHES, [event("oracle-change", "add", "2026-11-01T12:00:01.000Z")])
    assert found.names == ["oracle-change"] and found.notes == []


def test_a_label_added_on_an_earlier_head_does_not_count_for_the_new_push():
    found = given_on(B, PUSHES, [event("oracle-change", "add", "2026-11-01T11:00:00.000Z")])
    assert found.names == []
    assert found.notes == [
        f"label 'oracle-change' ignored: it was added at 2026-11-01T11:00:00+00:00 on head {A}, "
        f"not on {B} (a label approves the commit it was given on; re-apply it)"
    ]


def test_the_earlier_head_itself_keeps_its_label():
    assert given_on(A, PUSHES, [event("oracle-change", "add", "2026-11-01T11:00:00.000Z")]).names == ["oracle-change"]


@pytest.mark.parametrize(
    "events, names",
    [
        ([event("x", "add", "2026-11-01T12:01:00Z"), event("x", "remove", "2026-11-01T12:02:00Z")], []),
        ([event("x", "remove", "2026-11-01T12:02:00Z"), event("x", "add", "2026-11-01T12:01:00Z")], []),  # any order
        (
            [
                event("x", "add", "2026-11-01T11:00:00Z"),
                event("x", "remove", "2026-11-01T11:30:00Z"),
                event("x", "add", "2026-11-01T12:30:00Z"),
            ],
            ["x"],
        ),  # re-applied on the new head
        ([event("x", "add", "2026-11-01T12:00:00.000Z")], []),  # same millisecond as the push: unknown order
        ([event("x", "add", "2026-11-01T13:00:00+02:00")], []),  # 11:00 UTC: on A
        ([event("x", "add", "2026-11-01T09:00:00Z")], []),  # before any push
        ([{"action": "add", "created_at": "2026-11-01T12:30:00Z", "label": None}], []),  # a deleted label
    ],
)
def test_only_the_last_event_of_each_label_decides(events, names):
    assert given_on(B, PUSHES, events).names == names


def test_a_push_back_to_an_old_head_keeps_labels_given_on_it_only_while_current():
    pushes = PUSHES + [version(A, "2026-11-01T14:00:00Z")]
    assert given_on(A, pushes, [event("x", "add", "2026-11-01T13:00:00Z")]).names == []  # given on B
    assert given_on(A, pushes, [event("x", "add", "2026-11-01T14:00:01Z")]).names == ["x"]


def test_with_labelers_only_their_additions_count_and_anyones_removal_does():
    labelers = frozenset({"alice"})
    mallory = given_on(B, PUSHES, [event("x", "add", "2026-11-01T12:30:00Z", user="mallory")], labelers)
    assert mallory.names == [] and mallory.notes == [
        "label 'x' ignored: added by 'mallory', who is not one of ORACLE_GATE_LABELERS"
    ]
    assert given_on(B, PUSHES, [event("x", "add", "2026-11-01T12:30:00Z", user="Alice")], labelers).names == ["x"]
    removed = [event("x", "add", "2026-11-01T12:30:00Z"), event("x", "remove", "2026-11-01T12:40:00Z", user="mallory")]
    assert given_on(B, PUSHES, removed, labelers).names == []
    no_user = {"action": "add", "created_at": "2026-11-01T12:30:00Z", "label": {"name": "x"}}
    assert given_on(B, PUSHES, [no_user], labelers).names == []
    assert given_on(B, PUSHES, [no_user]).names == ["x"]  # without labelers, anyone's label counts


def test_a_label_name_that_cannot_pass_through_pr_labels_is_left_out():
    found = given_on(B, PUSHES, [event("a,b", "add", "2026-11-01T12:30:00Z")])
    assert found.names == [] and "comma" in found.notes[0]


@pytest.mark.parametrize(
    "versions, events, message",
    [
        (
            [{"head_commit_sha": "abc", "created_at": "2026-11-01T10:00:00Z"}],
            [],
            "version 1 has no full head_commit_sha",
        ),
        ([{"head_commit_sha": A, "created_at": "yesterday"}], [], "not an ISO 8601 time"),
        ([{"head_commit_sha": A, "created_at": "2026-11-01T10:00:00"}], [], "without a time zone"),
        (PUSHES, [{"action": "rename", "created_at": "2026-11-01T10:00:00Z", "label": {"name": "x"}}], "label event 1"),
        (PUSHES, [{"action": "add", "created_at": "2026-11-01T10:00:00Z", "label": {}}], "label event 1"),
    ],
)
def test_an_answer_without_the_fields_the_rule_needs_is_exit_1(versions, events, message):
    with pytest.raises(UsageError, match=message):
        given_on(A, versions, events)


ENV = {
    "CI_API_V4_URL": "https://gitlab.example/api/v4",
    "CI_PROJECT_ID": "group/shop",
    "CI_MERGE_REQUEST_IID": "12",
    "ORACLE_GATE_GITLAB_TOKEN": "glpat-secret",
}


class StandIn:
    """A fetch that answers from a dict of path -> pages, recording every request."""

    def __init__(self, pages: Mapping[str, list[list[dict[str, object]]]]) -> None:
        self.pages = pages
        self.requests: list[tuple[str, Mapping[str, str]]] = []

    def __call__(self, url: str, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        self.requests.append((url, headers))
        path, query = url.split("?")
        page = int(dict(part.split("=") for part in query.split("&"))["page"])
        pages = self.pages[path]
        more = {"x-next-page": str(page + 1)} if page < len(pages) else {"x-next-page": ""}
        return 200, more, json.dumps(pages[page - 1]).encode()


def test_both_lists_are_read_in_full_with_the_token_and_the_project_path_encoded():
    base = "https://gitlab.example/api/v4/projects/group%2Fshop/merge_requests/12"
    fetch = StandIn(
        {
            f"{base}/versions": [PUSHES],
            f"{base}/resource_label_events": [
                [event("x", "add", "2026-11-01T11:00:00Z")],
                [event("oracle-change", "add", "2026-11-01T12:30:00Z")],
            ],
        }
    )
    found = merge_request_labels(ENV, B, fetch)
    assert found.names == ["oracle-change"] and len(found.notes) == 1
    assert [url for url, _ in fetch.requests] == [
        f"{base}/versions?per_page=100&page=1",
        f"{base}/resource_label_events?per_page=100&page=1",
        f"{base}/resource_label_events?per_page=100&page=2",
    ]
    assert all(headers["PRIVATE-TOKEN"] == "glpat-secret" for _, headers in fetch.requests)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"ORACLE_GATE_GITLAB_TOKEN": ""}, "ORACLE_GATE_GITLAB_TOKEN not set"),
        ({"CI_MERGE_REQUEST_IID": ""}, "CI_MERGE_REQUEST_IID not set"),
        ({"CI_MERGE_REQUEST_IID": "12/../13"}, "is not a number"),
        ({"CI_API_V4_URL": "http://gitlab.example/api/v4"}, "must be https://"),
        ({"CI_API_V4_URL": "ftp://127.0.0.1/api/v4"}, "must be https://"),
    ],
)
def test_missing_or_unsafe_settings_are_exit_1_before_any_request(change, message):
    fetch = StandIn({})
    with pytest.raises(UsageError, match=message):
        merge_request_labels(ENV | change, B, fetch)
    assert fetch.requests == []


def test_a_head_that_is_not_a_full_id_is_refused():
    with pytest.raises(UsageError, match="not a full commit id"):
        merge_request_labels(ENV, "HEAD", StandIn({}))


@pytest.mark.parametrize(
    "answer, message",
    [
        ((200, {}, b"<html>"), "not JSON"),
        ((200, {}, b'{"message": "401 Unauthorized"}'), "not a list of objects"),
        ((200, {"x-next-page": "two"}, b"[]"), "not a page number"),
        ((500, {}, b"[]"), "HTTP 500"),
    ],
)
def test_an_unexpected_answer_is_exit_1(answer, message):
    with pytest.raises(UsageError, match=message):
        merge_request_labels(ENV, B, lambda url, headers: answer)


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP stand-in for GitLab's API: 401 without the token, else the lists; under
    /moved/ a redirect to plain http on another host."""
    seen: list[str] = []

    def answer(path: str, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        seen.append(path)
        if path.startswith("/moved/"):
            return 302, {"Location": "http://127.0.0.2:9" + path[len("/moved") :]}, b""
        if headers.get("PRIVATE-TOKEN") != "glpat-secret":
            return 401, {}, b""
        body = PUSHES if "/versions" in path else [event("oracle-change", "add", "2026-11-01T12:30:00Z")]
        return 200, {"Content-Type": "application/json", "X-Next-Page": ""}, json.dumps(body).encode()

    with serve(answer) as url:
        yield f"{url}/api/v4", seen


def test_the_command_prints_the_labels_for_pr_labels(project, gate, server):
    url, seen = server
    head = project.git("rev-parse", "HEAD").strip()
    env = ENV | {"CI_API_V4_URL": url, "CI_PROJECT_ID": "7"}
    code, out, err = gate("--repo", str(project.path), "gitlab-labels", environ=env)
    assert (code, out) == (0, "\n"), err  # HEAD is not the head GitLab recorded
    assert (
        err == f"gitlab-labels: label 'oracle-change' ignored: it was added at 2026-11-01T12:30:00+00:00 on head {B}, "
        f"not on {head} (a label approves the commit it was given on; re-apply it)\n"
    )
    code, out, err = gate("--repo", str(project.path), "gitlab-labels", "--head", B, environ=env)
    assert (code, out) == (0, "oracle-change\n"), err
    assert seen[-1] == "/api/v4/projects/7/merge_requests/12/resource_label_events?per_page=100&page=1"
    code, out, err = gate(
        "--repo", str(project.path), "gitlab-labels", "--head", B, environ=env | {"ORACLE_GATE_GITLAB_TOKEN": "wrong"}
    )
    assert code == 1 and out == "" and len(err.splitlines()) == 1
    assert "HTTP 401 Unauthorized (is ORACLE_GATE_GITLAB_TOKEN a token with the read_api scope?)" in err
    assert "wrong" not in err


def test_a_redirect_is_not_followed_so_the_token_stays_with_the_api(project, gate, server):
    url, seen = server
    moved = url.replace("/api/v4", "/moved/api/v4")
    env = ENV | {"CI_API_V4_URL": moved, "CI_PROJECT_ID": "7"}
    code, out, err = gate("--repo", str(project.path), "gitlab-labels", "--head", B, environ=env)
    assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    assert "HTTP 302 Found (a redirect to 'http://127.0.0.2:9/api/v4/projects/7/merge_requests/12/versions" in err
    assert "not followed" in err and seen == ["/moved/api/v4/projects/7/merge_requests/12/versions?per_page=100&page=1"]
