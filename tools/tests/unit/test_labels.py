"""A label approves a commit, not a pull request forever (labels.py): a label from CI data counts only
when that data names the commit the label was given on and that commit is HEAD (or, on GitHub only, for
the merge commit GITHUB_SHA names, HEAD's second parent). Real git repositories; GitHub event files as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.oracle_gate.approval.labels import collect_labels
from tools.oracle_gate.errors import UsageError
from tools.testing.gitrepo import GIT_ENV, IDS, GitRepo, default_rows, junit, oracle_toml

ROOT = Path(__file__).resolve().parents[3]
LABEL = "oracle-change"


def rev(repo: GitRepo, what: str = "HEAD") -> str:
    return repo.git("rev-parse", what).strip()


def event_file(
    tmp_path: Path,
    head: object,
    action: str = "labeled",
    label: str = LABEL,
    labels: tuple[str, ...] = (LABEL,),
    name: str = "event.json",
) -> str:
    """Writes a GitHub `pull_request` event payload; `head` None leaves out pull_request.head."""
    pull: dict[str, object] = {"number": 7, "labels": [{"name": n} for n in labels]}
    if head is not None:
        pull["head"] = {"sha": head, "ref": "change"}
    payload: dict[str, object] = {"action": action, "number": 7, "pull_request": pull}
    if action in ("labeled", "unlabeled"):
        payload["label"] = {"name": label}
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return str(path)


@pytest.fixture
def pushed(project: GitRepo) -> tuple[str, str]:
    """A labelled change A (narrows a bound under oracles/), then a later push B on top; HEAD is B."""
    project.write("oracles/shop.toml", oracle_toml(default_rows(max_=99)))
    project.write_manifest()
    a = project.commit("narrow (labelled on this head)")
    project.write("oracles/shop.toml", oracle_toml(default_rows(max_=50)))
    project.write_manifest()
    b = project.commit("narrow further, pushed after the label")
    return a, b


def labels(repo: GitRepo, environ: dict[str, str], cli: tuple[str, ...] = ()):
    return collect_labels(list(cli), environ, str(repo.path))


# GitHub: the event file.


def test_labeled_event_for_head_counts(project, tmp_path):
    head = project.commit("change")
    found = labels(project, {"GITHUB_EVENT_PATH": event_file(tmp_path, head)})
    assert (found.names, found.notes, found.head) == ({LABEL}, [], head)


@pytest.mark.parametrize(
    "sender, counts", [({"login": "Alice"}, True), ({"login": "mallory"}, False), (None, False), ({"login": 7}, False)]
)
def test_with_labelers_set_only_their_labeled_events_count(project, tmp_path, sender, counts):
    head = project.commit("change")
    path = Path(event_file(tmp_path, head))
    payload = json.loads(path.read_text())
    if sender is not None:
        payload["sender"] = sender
    path.write_text(json.dumps(payload))
    found = labels(project, {"GITHUB_EVENT_PATH": str(path), "ORACLE_GATE_LABELERS": "alice, bob"})
    assert found.names == ({LABEL} if counts else set())
    if not counts:
        assert found.notes == [
            f"label 'oracle-change' from the GitHub event ignored: added by "
            f"{sender['login'] if sender else None!r}, who is not one of ORACLE_GATE_LABELERS"
        ]
    # Unset or empty, anyone's label counts (the platform's permissions decide who may label).
    assert labels(project, {"GITHUB_EVENT_PATH": str(path), "ORACLE_GATE_LABELERS": " , "}).names == {LABEL}


def test_labeled_event_for_an_older_head_is_absent_and_says_why(project, pushed, tmp_path):
    a, b = pushed
    found = labels(project, {"GITHUB_EVENT_PATH": event_file(tmp_path, a)})
    assert found.names == set()
    assert found.notes == [
        f"label 'oracle-change' from the GitHub event ignored: the event names head {a}, HEAD is {b} "
        "(a label approves the commit it was given on; re-apply the label on the current head)"
    ]


def test_head_sha_compares_case_insensitively(project, tmp_path):
    head = project.commit("change")
    assert labels(project, {"GITHUB_EVENT_PATH": event_file(tmp_path, head.upper())}).names == {LABEL}


def test_synchronize_event_after_a_push_does_not_carry_the_label(project, pushed, tmp_path):
    # The label was added on A; B's push sends `synchronize`, whose payload names
    # B as head and still lists the label. Nothing in it says on which commit the label was given.
    _, b = pushed
    found = labels(project, {"GITHUB_EVENT_PATH": event_file(tmp_path, b, action="synchronize")})
    assert found.names == set()
    assert found.notes[0].startswith(
        "label 'oracle-change' from the GitHub event ignored: a 'synchronize' event "
        "lists the labels on the pull request, not the commit each was given on"
    )


@pytest.mark.parametrize("action", ["opened", "reopened", "edited", "unlabeled"])
def test_other_actions_never_carry_a_label(project, tmp_path, action):
    head = project.commit("change")
    environ = {"GITHUB_EVENT_PATH": event_file(tmp_path, head, action=action)}
    assert labels(project, environ).names == set()


def test_labeled_event_counts_only_the_label_it_adds(project, tmp_path):
    head = project.commit("change")
    environ = {"GITHUB_EVENT_PATH": event_file(tmp_path, head, label="bug", labels=("bug", LABEL))}
    found = labels(project, environ)
    assert found.names == {"bug"}
    assert found.notes == [
        "label 'oracle-change' from the GitHub event ignored: this 'labeled' event ties only the "
        "label it adds ('bug') to a commit (a label approves the commit it was given on; re-apply "
        "the label on the current head)"
    ]


@pytest.mark.parametrize("sha", [None, "", "abc1234", "g" * 40, 12345, ["x"], "a" * 39, "a" * 41])
def test_head_sha_missing_or_not_a_full_id_is_absent(project, tmp_path, sha):
    project.commit("change")
    path = tmp_path / "event.json"
    pull: dict[str, object] = {"labels": [{"name": LABEL}]}
    if sha is not None:
        pull["head"] = {"sha": sha}
    path.write_text(json.dumps({"action": "labeled", "label": {"name": LABEL}, "pull_request": pull}))
    found = labels(project, {"GITHUB_EVENT_PATH": str(path)})
    assert found.names == set()
    assert len(found.notes) == 1
    assert found.notes[0].startswith(
        f"label 'oracle-change' from the GitHub event ignored: pull_request.head.sha is {sha!r}"
    )


def test_a_sha256_length_id_is_a_full_id(project, tmp_path):
    head = project.commit("change")
    found = labels(project, {"GITHUB_EVENT_PATH": event_file(tmp_path, "ab" * 32)})
    assert found.names == set()
    assert f"the event names head {'ab' * 32}, HEAD is {head}" in found.notes[0]


def merge_ref(project: GitRepo) -> tuple[str, str]:
    """GitHub's refs/pull/N/merge: main advanced, then HEAD = merge of main (first parent) and the PR
    head (second parent), checked out detached. Returns (pr head, merge)."""
    head = project.commit("change")
    project.git("checkout", "-q", "main")
    project.write("shop/other.py", "X = 1\n")
    project.commit("main moves on")
    project.git("checkout", "-q", "--detach", "main")
    project.git("merge", "-q", "--no-ff", "--no-edit", "change")
    return head, rev(project)


def test_merge_commit_whose_second_parent_is_the_head_counts(project, tmp_path):
    head, merge = merge_ref(project)
    assert rev(project, "HEAD^2") == head
    environ = {"GITHUB_EVENT_PATH": event_file(tmp_path, head), "GITHUB_SHA": merge}
    found = labels(project, environ)
    assert (found.names, found.notes, found.head) == ({LABEL}, [], merge)


def test_merge_commit_counts_only_when_it_is_the_merge_github_made(project, tmp_path):
    # Any merge can have the labelled head as its second parent (one the author pushes, with other
    # content in its first parent): only GITHUB_SHA, GitHub's merge for this event, is trusted.
    head, merge = merge_ref(project)
    for github_sha in ({}, {"GITHUB_SHA": head}, {"GITHUB_SHA": "short"}):
        found = labels(project, {"GITHUB_EVENT_PATH": event_file(tmp_path, head), **github_sha})
        assert found.names == set(), github_sha
        assert f"the event names {head}, the second parent of the merge HEAD {merge}, but GITHUB_SHA" in found.notes[0]


def test_merge_commit_whose_first_parent_is_the_head_is_absent(project, tmp_path):
    head = project.commit("change")
    project.git("checkout", "-q", "main")
    project.write("shop/other.py", "X = 1\n")
    project.commit("main moves on")
    project.git("checkout", "-q", "change")
    project.git("merge", "-q", "--no-ff", "--no-edit", "main")
    merge = rev(project)
    assert rev(project, "HEAD^1") == head
    found = labels(project, {"GITHUB_EVENT_PATH": event_file(tmp_path, head), "GITHUB_SHA": merge})
    assert found.names == set()
    assert f"the event names head {head}, HEAD is {merge} (a merge whose second parent is " in found.notes[0]


# PR_LABELS / PR_HEAD_SHA.


def test_pr_labels_need_pr_head_sha(project):
    project.commit("change")
    found = labels(project, {"PR_LABELS": "bug, oracle-change"})
    assert found.names == set()
    assert found.notes == [
        "labels 'bug', 'oracle-change' from PR_LABELS ignored: PR_HEAD_SHA is not set, so nothing names the commit "
        "they were given on (a label approves the commit it was given on; set PR_HEAD_SHA to the full id of the "
        "commit the labels were given on, or pass --label from a step that verified it)"
    ]


def test_pr_labels_with_pr_head_sha_of_head_count(project):
    head = project.commit("change")
    for sha in (head, head.upper(), f" {head}\n"):
        found = labels(project, {"PR_LABELS": "bug, oracle-change", "PR_HEAD_SHA": sha})
        assert (found.names, found.notes) == ({"bug", LABEL}, []), sha


def test_pr_labels_with_an_older_or_short_pr_head_sha_are_absent(project, pushed):
    a, b = pushed
    found = labels(project, {"PR_LABELS": LABEL, "PR_HEAD_SHA": a})
    assert found.names == set()
    assert f"from PR_LABELS ignored: PR_HEAD_SHA names head {a}, HEAD is {b} (" in found.notes[0]
    found = labels(project, {"PR_LABELS": LABEL, "PR_HEAD_SHA": b[:12]})
    assert found.names == set()
    assert f"PR_HEAD_SHA is '{b[:12]}', not a full commit id (40 or 64 hex digits)" in found.notes[0]


PR_MERGE_NOTE = (
    "PR_LABELS counts only for HEAD itself: nothing says HEAD is the merge the platform made, and any "
    "merge can have the labelled commit as its second parent"
)


def test_pr_labels_with_the_merges_second_parent_are_absent(project):
    # Unlike GitHub's GITHUB_SHA, nothing vouches that HEAD is the platform's merge: PR_HEAD_SHA must name HEAD.
    head, merge = merge_ref(project)
    found = labels(project, {"PR_LABELS": LABEL, "PR_HEAD_SHA": head})
    assert found.names == set()
    assert found.notes == [
        f"label 'oracle-change' from PR_LABELS ignored: PR_HEAD_SHA names {head}, the second parent of the merge "
        f"HEAD {merge}, but {PR_MERGE_NOTE} (a label approves the commit it was given on; set PR_HEAD_SHA to the "
        "full id of the commit the labels were given on, or pass --label from a step that verified it)"
    ]
    assert labels(project, {"PR_LABELS": LABEL, "PR_HEAD_SHA": merge}).names == {LABEL}


# GitLab.


@pytest.mark.parametrize("shas", [{}, {"CI_COMMIT_SHA": "HEAD"}, {"CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": "HEAD"}])
def test_gitlab_labels_name_no_commit_and_never_count(project, shas):
    head = project.commit("change")
    environ = {"CI_MERGE_REQUEST_LABELS": "oracle-change,bug", **{k: head for k in shas}}
    found = labels(project, environ)
    assert found.names == set()
    assert found.notes == [
        "labels 'bug', 'oracle-change' from GitLab's CI_MERGE_REQUEST_LABELS ignored: GitLab lists the merge "
        "request's labels, not the commit each was given on (CI_COMMIT_SHA names the commit the pipeline builds, "
        "and a label stays on the merge request across pushes) (a label approves the commit it was given on; pass "
        "PR_LABELS with PR_HEAD_SHA, or --label, from a job that verified the label was given on this head)"
    ]


# --label, and what every note looks like.


def test_command_line_labels_are_unaffected(project, pushed, tmp_path):
    a, _ = pushed
    environ = {"GITHUB_EVENT_PATH": event_file(tmp_path, a), "PR_LABELS": LABEL, "CI_MERGE_REQUEST_LABELS": LABEL}
    assert labels(project, environ, cli=("oracle-change,bug",)).names == {LABEL, "bug"}
    # With no CI label nothing is read from git: the operator vouches for --label.
    found = collect_labels(["oracle-change"], {}, str(tmp_path / "not-a-repo"))
    assert (found.names, found.notes, found.head) == ({LABEL}, [], "")


def test_notes_are_single_lines_with_environment_text_escaped(project, tmp_path):
    project.commit("change")
    environ = {
        "PR_LABELS": "evil\ngate ok (exit 0)\x1b[2K\u202e",
        "PR_HEAD_SHA": "a" * 20 + "\r\x1b",
        "CI_MERGE_REQUEST_LABELS": "\u2028x\x85",
        "GITHUB_EVENT_PATH": event_file(tmp_path, "x\ny", label="a\nb", labels=("a\nb", "c\rd")),
    }
    notes = labels(project, environ).notes
    assert len(notes) == 4
    for note in notes:
        assert note.isprintable(), note
    assert notes[0].startswith(
        "label 'evil\\ngate ok (exit 0)\\x1b[2K\\u202e' from PR_LABELS ignored: "
        "PR_HEAD_SHA is 'aaaaaaaaaaaaaaaaaaaa\\r\\x1b', not a full commit id"
    )


def test_clean_run_passes_the_head_it_resolved(project, pushed, tmp_path):
    a, b = pushed
    found = collect_labels([], {"PR_LABELS": LABEL, "PR_HEAD_SHA": a}, str(project.path), head=a)
    assert (found.names, found.head) == ({LABEL}, a)


# End to end: `python3 -m tools.oracle_gate check --results` on a change under oracles/.


def run_gate(repo: GitRepo, results: str, environ: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **GIT_ENV, **environ}
    return subprocess.run(
        [
            sys.executable,
            "-B",
            "-m",
            "tools.oracle_gate",
            "--repo",
            str(repo.path),
            "check",
            "--base",
            "main",
            "--results",
            results,
            *extra,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_end_to_end_a_label_for_an_older_head_exits_2(project, pushed, tmp_path):
    a, b = pushed
    results = junit(tmp_path, {i: "passed" for i in IDS})
    stale = run_gate(project, results, {"GITHUB_EVENT_PATH": event_file(tmp_path, a, name="a.json")})
    assert stale.returncode == 2, stale.stdout + stale.stderr
    assert f"label 'oracle-change' from the GitHub event ignored: the event names head {a}, HEAD is {b}" in stale.stdout
    assert (
        "[2] oracles/shop.toml: protected by 'oracles/**' and changed (M) without the 'oracle-change' label"
        in stale.stdout
    )
    synchronize = run_gate(
        project, results, {"GITHUB_EVENT_PATH": event_file(tmp_path, b, action="synchronize", name="s.json")}
    )
    assert synchronize.returncode == 2, synchronize.stdout
    relabelled = run_gate(project, results, {"GITHUB_EVENT_PATH": event_file(tmp_path, b, name="b.json")})
    operator = run_gate(project, results, {}, "--label", LABEL)
    assert (relabelled.returncode, operator.returncode) == (0, 0), relabelled.stdout + operator.stdout
    assert "gate ok (exit 0)" in relabelled.stdout and "ignored" not in relabelled.stdout


def test_end_to_end_github_merge_ref_and_json_notes(project, tmp_path):
    project.write("oracles/shop.toml", oracle_toml(default_rows(max_=99)))
    project.write_manifest()
    head, merge = merge_ref(project)
    results = junit(tmp_path, {i: "passed" for i in IDS})
    event = event_file(tmp_path, head)
    ok = run_gate(project, results, {"GITHUB_EVENT_PATH": event, "GITHUB_SHA": merge})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    refused = run_gate(project, results, {"GITHUB_EVENT_PATH": event}, "--format", "json")
    doc = json.loads(refused.stdout)
    assert refused.returncode == doc["exit_code"] == 2
    assert doc["notes"][0].startswith(
        "label 'oracle-change' from the GitHub event ignored: the event names "
        f"{head}, the second parent of the merge HEAD {merge}, but GITHUB_SHA"
    )


def test_end_to_end_pr_labels_do_not_carry_into_a_pushed_merge(project, tmp_path):
    # A, labelled, is harmless. E, on top of main, edits a protected file. The author pushes
    # M = merge(E, A) as HEAD: A is M's second parent, but the label was never given on E's change.
    project.write("shop/other.py", "X = 1\n")
    a = project.commit("harmless change (labelled on this head)")
    project.git("checkout", "-q", "--detach", "main")
    project.write("tools/gate.py", "# the gate, weakened\n")
    e = project.commit("edit a protected file")
    project.git("merge", "-q", "--no-ff", "--no-edit", "change")
    m = rev(project)
    assert (rev(project, "HEAD^1"), rev(project, "HEAD^2"), rev(project, f"{e}^")) == (e, a, rev(project, "main"))
    results = junit(tmp_path, {i: "passed" for i in IDS})
    protected = "[2] tools/gate.py: protected by 'tools/**' and changed (M) without the 'oracle-change' label"
    unlabelled = run_gate(project, results, {})
    assert unlabelled.returncode == 2 and protected in unlabelled.stdout, unlabelled.stdout + unlabelled.stderr
    pushed = run_gate(project, results, {"PR_LABELS": LABEL, "PR_HEAD_SHA": a})
    assert pushed.returncode == 2, pushed.stdout + pushed.stderr
    assert protected in pushed.stdout
    assert (
        f"label 'oracle-change' from PR_LABELS ignored: PR_HEAD_SHA names {a}, the second parent of the merge "
        f"HEAD {m}, but {PR_MERGE_NOTE} ("
    ) in pushed.stdout
    assert "gate ok" not in pushed.stdout
    operator = run_gate(project, results, {}, "--label", LABEL)
    assert operator.returncode == 0, operator.stdout + operator.stderr


# The same rule in `clean-run`, which picks HEAD's oracles only for a labelled change.


def test_clean_run_uses_head_oracles_only_for_a_label_given_on_head(gate, project, pushed, tmp_path, monkeypatch):
    from tools.oracle_gate.commands import clean_run_cmd
    from tools.oracle_gate.runs.bazel_run import BazelRun
    from tools.oracle_gate.runs.results import Observed

    a, b = pushed
    used: list[str] = []

    def fake_clean_run(repo, head, oracles_commit, environ, remote=False, salt="", block=()):
        used.append(oracles_commit)
        return BazelRun(observed={i: Observed("passed") for i in IDS})

    monkeypatch.setattr(clean_run_cmd, "clean_run", fake_clean_run)
    out = str(tmp_path / "clean.xml")
    code, stale, _ = gate(
        "--repo",
        str(project.path),
        "clean-run",
        "--base",
        "main",
        "--out",
        out,
        environ={"GITHUB_EVENT_PATH": event_file(tmp_path, a, name="a.json")},
    )
    assert code == 0 and f"the event names head {a}, HEAD is {b}" in stale
    code, fresh, _ = gate(
        "--repo",
        str(project.path),
        "clean-run",
        "--base",
        "main",
        "--out",
        out,
        environ={"GITHUB_EVENT_PATH": event_file(tmp_path, b, name="b.json")},
    )
    assert code == 0 and "ignored" not in fresh
    assert used == [rev(project, "main"), b]


def test_check_refuses_when_head_moved_after_the_labels_were_read(gate, project, pushed, tmp_path, monkeypatch):
    from tools.oracle_gate.approval.labels import Labels
    from tools.oracle_gate.commands import check_cmd

    a, b = pushed
    monkeypatch.setattr(check_cmd, "collect_labels", lambda *_a, **_k: Labels({LABEL}, [], a))
    code, _, err = gate(
        "--repo", str(project.path), "check", "--base", "main", "--results", junit(tmp_path, {i: "passed" for i in IDS})
    )
    assert code == 1 and f"HEAD moved from {a} to {b} while the gate ran" in err


# Every source at once, push events and malformed event files.


def test_labels_from_all_sources(project, tmp_path):
    head = project.git("rev-parse", "HEAD").strip()
    event = tmp_path / "e.json"
    event.write_text(
        json.dumps(
            {
                "action": "labeled",
                "label": {"name": " spaced "},
                "pull_request": {"head": {"sha": head}, "labels": [{"name": "gh"}, {"name": " spaced "}]},
            }
        )
    )
    env = {
        "PR_LABELS": " a , b,,",
        "PR_HEAD_SHA": head,
        "CI_MERGE_REQUEST_LABELS": "gl",
        "GITHUB_EVENT_PATH": str(event),
    }
    found = collect_labels(["cli1,cli2"], env, str(project.path))
    # GitLab's labels and the event's labels other than the one it adds name no commit (see above).
    assert found.names == {"a", "b", "spaced", "cli1", "cli2"}
    assert [n.split(" ignored:")[0] for n in found.notes] == [
        "label 'gl' from GitLab's CI_MERGE_REQUEST_LABELS",
        "label 'gh' from the GitHub event",
    ]


def test_push_event_without_pull_request_has_no_labels(tmp_path):
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    # No label to check, so no git is read: tmp_path is not a repository.
    assert collect_labels([], {"GITHUB_EVENT_PATH": str(event)}, str(tmp_path)).names == set()


@pytest.mark.parametrize(
    "payload",
    [
        {"pull_request": {"labels": "x"}},
        {"pull_request": {"labels": [{"id": 1}]}},
        {"pull_request": "x"},
        {"action": "labeled", "label": {"id": 1}, "pull_request": {"labels": []}},
    ],
)
def test_malformed_event_fails_closed(tmp_path, payload):
    event = tmp_path / "e.json"
    event.write_text(json.dumps(payload))
    with pytest.raises(UsageError):
        collect_labels([], {"GITHUB_EVENT_PATH": str(event)}, str(tmp_path))
