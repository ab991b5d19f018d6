"""Labels from every CI source; protected-path globs; NUL-separated git diff parsing."""

from __future__ import annotations

import json

import pytest

from tools.oracle_gate.errors import GitError, UsageError
from tools.oracle_gate.gitio import parse_name_status
from tools.oracle_gate.globs import matches
from tools.oracle_gate.labels import collect_labels


def test_labels_from_all_sources(project, tmp_path):
    head = project.git("rev-parse", "HEAD").strip()
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"action": "labeled", "label": {"name": " spaced "},
                                 "pull_request": {"head": {"sha": head}, "labels": [{"name": "gh"}, {"name": " spaced "}]}}))
    env = {"PR_LABELS": " a , b,,", "PR_HEAD_SHA": head, "CI_MERGE_REQUEST_LABELS": "gl", "GITHUB_EVENT_PATH": str(event)}
    found = collect_labels(["cli1,cli2"], env, str(project.path))
    # GitLab's labels and the event's labels other than the one it adds name no commit (test_labels_head.py).
    assert found.names == {"a", "b", "spaced", "cli1", "cli2"}
    assert [n.split(" ignored:")[0] for n in found.notes] == [
        "label 'gl' from GitLab's CI_MERGE_REQUEST_LABELS", "label 'gh' from the GitHub event"]


def test_push_event_without_pull_request_has_no_labels(tmp_path):
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    # No label to check, so no git is read: tmp_path is not a repository.
    assert collect_labels([], {"GITHUB_EVENT_PATH": str(event)}, str(tmp_path)).names == set()


@pytest.mark.parametrize("payload", [
    {"pull_request": {"labels": "x"}},
    {"pull_request": {"labels": [{"id": 1}]}},
    {"pull_request": "x"},
    {"action": "labeled", "label": {"id": 1}, "pull_request": {"labels": []}},
])
def test_malformed_event_fails_closed(tmp_path, payload):
    event = tmp_path / "e.json"
    event.write_text(json.dumps(payload))
    with pytest.raises(UsageError):
        collect_labels([], {"GITHUB_EVENT_PATH": str(event)}, str(tmp_path))


@pytest.mark.parametrize(("path", "pattern", "hit"), [
    ("oracles/a.toml", "oracles/**", True),
    ("oracles/blobs/x/y.json", "oracles/**", True),
    ("oracles", "oracles/**", False),
    ("oraclesX/a", "oracles/**", False),
    ("tools/x/BUILD.bazel", "tools/**/BUILD.bazel", True),
    ("tools/BUILD.bazel", "tools/**/BUILD.bazel", True),
    (".bazelrc", ".bazelrc", True),
    ("sub/.bazelrc", ".bazelrc", False),
    ("a/b.py", "a/*.py", True),
    ("a/c/b.py", "a/*.py", False),
    ("WORKSPACE", "WORKSPAC?", True),
    ("a.b", "a?b", True),
    ("a[x]", "a[x]", True),
])
def test_globs(path, pattern, hit):
    assert (matches(path, (pattern,)) is not None) == hit


def test_name_status_with_renames_and_odd_names():
    raw = b"M\0a b.txt\0R100\0oracles/old.toml\0harness/new.toml\0A\0oracles/bl\xc3\xb6b.toml\0D\0x\ny\0"
    parsed = [(c.status, c.path) for c in parse_name_status(raw)]
    assert parsed == [("M", "a b.txt"), ("R", "oracles/old.toml"), ("R", "harness/new.toml"),
                      ("A", "oracles/blöb.toml"), ("D", "x\ny")]


@pytest.mark.parametrize("raw", [b"M\0", b"Q\0path\0", b"\0path\0", b"R100\0only-one\0"])
def test_unparseable_name_status_fails_closed(raw):
    with pytest.raises(GitError):
        parse_name_status(raw)
