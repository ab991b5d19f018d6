"""The CI recipes under ci/, run for real: every shell step of the GitHub Actions workflow and the
GitLab CI job runs on this machine (tools/testing/ci_recipes.py says how each platform is stood
in for) against a generated repository: a committed copy of this workspace as the base branch
`main`, with pull-request branches on top, in a bare origin the recipes clone.

Each run takes the gate from the base revision, runs the workspace and the sealed clean run on
the pull request's head, and compares them (`check --clean`):

- a production change that keeps the claims passes, with the annotations, the markdown summary
  and the JUnit report the recipe asks for;
- an oracle change passes only with the label given on its head: a GitHub `labeled` event for
  that head, or a GitLab label added after that head was pushed (GitLab's API stood in for on
  loopback); the same label from a `synchronize` event, added before the push, or added by
  someone not in ORACLE_GATE_LABELERS (a repository variable) does not count;
- a change that also rewrites the gate's own exit code gets no help from it: the gate that runs
  is the base's, it names the protected paths the change touched, and it runs nothing of the
  change (no Bazel) while they are unlabelled;
- the GitLab job's report replaces a link of its name that the change committed, and never writes
  through it.

It needs a nested Bazel because each recipe runs the gate's `check --clean`, whose workspace run and
clean run are Bazel runs; one committed copy serves every job of the module."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools.testing.ci_recipes import JobResult, run_github_job, run_gitlab_job
from tools.testing.loopback_http import serve
from tools.testing.workspace_copy import gate, git, nested_env, shutdown, source_root

LABEL = "oracle-change"


@dataclass
class Origin:
    bare: Path
    base: str
    refactor: str
    narrow: str
    narrow_and_gate_edit: str
    victim: Path


def commit_edit(ws: Path, rel: str, old: str, new: str, message: str) -> str:
    path = ws / rel
    text = path.read_text()
    assert old in text, rel
    path.write_text(text.replace(old, new, 1))
    git(ws, "commit", "-q", "--no-gpg-sign", "-am", message)
    return git(ws, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def origin(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """The base `main` and three pull-request heads, pushed to a bare origin."""
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "checkout", "-q", "-b", "refactor", "main")
    refactor = commit_edit(
        repo,
        "billing/tax.py",
        "def apply_rate(",
        "def _unused_helper():\n    return None\n\n\ndef apply_rate(",
        "tax: a helper",
    )
    git(repo, "checkout", "-q", "-b", "narrow", "main")
    commit_edit(repo, "oracles/billing.toml", "max = 1_000_000_000_000_000", "max = 200_000_000_000_000", "narrow")
    written = gate(repo, "manifest", "--write")
    assert written.returncode == 0, written.stdout + written.stderr
    # A link where the GitLab job's report goes, to a file of the CI user's.
    victim = tmp_path_factory.mktemp("victim") / "profile"
    victim.write_text("keep me\n")
    (repo / "oracle-gate-junit.xml").symlink_to(victim)
    git(repo, "add", "oracle-gate-junit.xml")
    git(repo, "commit", "-q", "--no-gpg-sign", "-am", "oracles: narrow the total's bound; manifest")
    narrow = git(repo, "rev-parse", "HEAD").strip()
    edited = commit_edit(
        repo,
        "tools/oracle_gate/commands/check_cmd.py",
        "    return report.exit_code\n",
        "    return 0\n",
        "gate: always pass",
    )
    git(repo, "checkout", "-q", "main")
    bare = tmp_path_factory.mktemp("origin") / "shop.git"
    git(repo, "clone", "-q", "--bare", str(repo), str(bare))
    return Origin(bare, base, refactor, narrow, edited, victim)


def pull_request_event(
    action: str, head: str, base: str, label: str | None = None, sender: str = "alice"
) -> dict[str, object]:
    event: dict[str, object] = {
        "action": action,
        "number": 7,
        "sender": {"login": sender},
        "pull_request": {
            "number": 7,
            "head": {"sha": head, "ref": "topic"},
            "base": {"sha": base, "ref": "main"},
            "labels": [{"name": LABEL}] if label or action == "synchronize" else [],
        },
    }
    if label:
        event["label"] = {"name": label}
    return event


def github(origin: Origin, event: dict[str, object], root: Path) -> JobResult:
    try:
        return run_github_job(
            source_root() / "ci/github/oracle-gate.yml",
            origin.bare,
            event,
            origin.base,
            root,
            nested_env(),
            variables={"ORACLE_GATE_LABELERS": "alice"},
        )
    finally:
        shutdown(root / "workspace" / "pr")


def gate_step(result: JobResult) -> str:
    return result.step("Run the gate (workspace run, sealed clean run, compared)").output


def test_github_a_production_change_that_keeps_the_claims_passes(origin, tmp_path):
    result = github(origin, pull_request_event("opened", origin.refactor, origin.base), tmp_path)
    assert result.code == 0, result.output[-6000:]
    assert f"the gate of base {origin.base} judges head {origin.refactor}" in result.output
    out = gate_step(result)
    assert "clean run sealed by: bubblewrap" in out and "::notice title=oracle-gate::gate ok (exit 0)" in out, out
    summary = (tmp_path / "runner-temp" / "step_summary.md").read_text()
    assert summary.startswith("## oracle-gate: gate ok (exit 0)"), summary
    junit, statement = result.artifacts
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "0"
    # The statement the sign-verdict job signs: the gate's verify accepts it for the judged head.
    pr = tmp_path / "workspace" / "pr"
    accepted = gate(source_root(), "--repo", str(pr), "verify", str(statement), "--commit", origin.refactor)
    assert accepted.returncode == 0 and accepted.stdout.startswith(f"statement ok: {origin.refactor} PASSED"), (
        accepted.stdout + accepted.stderr
    )


def test_github_an_oracle_change_passes_with_the_label_given_on_its_head(origin, tmp_path):
    result = github(origin, pull_request_event("labeled", origin.narrow, origin.base, LABEL), tmp_path)
    assert result.code == 0, result.output[-6000:]
    out = gate_step(result)
    assert f"labels: {LABEL}" in out and "[bound narrowed]" in out, out


def test_github_a_label_from_someone_not_among_the_labelers_does_not_count(origin, tmp_path):
    event = pull_request_event("labeled", origin.narrow, origin.base, LABEL, sender="mallory")
    result = github(origin, event, tmp_path)
    assert result.code == 2, result.output[-6000:]
    assert (
        "label 'oracle-change' from the GitHub event ignored: added by 'mallory', who is not one of "
        "ORACLE_GATE_LABELERS"
    ) in gate_step(result)


def test_github_a_push_after_the_label_and_an_edited_gate_fail_on_the_protected_paths(origin, tmp_path):
    event = pull_request_event("synchronize", origin.narrow_and_gate_edit, origin.base)
    result = github(origin, event, tmp_path)
    assert result.code == 2, result.output[-6000:]
    out = gate_step(result)
    assert "from the GitHub event ignored: a 'synchronize' event lists the labels on the pull request" in out, out
    for path in ("oracles/billing.toml", "tools/oracle_gate/commands/check_cmd.py"):
        assert f"::error file={path}" in out, out
    assert "::error title=oracle-gate::gate FAILED (exit 2)" in out
    # Nothing of the change ran: its gate edit, WORKSPACE or repository rules never reach Bazel unlabelled.
    assert "FAIL  invariant outcomes  not run: protected paths changed without the label" in out
    assert "workspace run:" not in out and "clean run" not in out
    assert [s.name for s in result.steps][-2:] == ["Keep the gate's JUnit report", "Keep the gate's verdict statement"]
    junit, statement = result.artifacts  # `if: always()` ran both
    assert ET.parse(junit).getroot().find("testsuite").get("failures") != "0"
    assert json.loads(statement.read_text().splitlines()[0])["predicate"]["verificationResult"] == "FAILED"


@pytest.fixture
def gitlab_api() -> Iterator[tuple[str, dict[str, list[dict[str, object]]]]]:
    """GitLab's REST API on loopback: the versions and label events of merge request 7 of
    project 42, from a dict the test fills; 401 without the token."""
    lists: dict[str, list[dict[str, object]]] = {"versions": [], "resource_label_events": []}

    def answer(path: str, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        path = path.split("?")[0]
        name = path.rsplit("/", 1)[-1]
        if headers.get("PRIVATE-TOKEN") != "glpat-test":
            return 401, {}, b""
        if path != f"/api/v4/projects/42/merge_requests/7/{name}":
            return 404, {}, b""
        return 200, {}, json.dumps(lists[name]).encode()

    with serve(answer) as url:
        yield f"{url}/api/v4", lists


def gitlab(origin: Origin, head: str, api: str, root: Path) -> JobResult:
    predefined = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_COMMIT_SHA": head,
        "CI_MERGE_REQUEST_IID": "7",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_PROJECT_ID": "42",
        "CI_API_V4_URL": api,
        "CI_MERGE_REQUEST_LABELS": LABEL,
        "ORACLE_GATE_GITLAB_TOKEN": "glpat-test",
    }
    try:
        return run_gitlab_job(
            source_root() / "ci/gitlab/oracle-gate.gitlab-ci.yml",
            "oracle-gate",
            origin.bare,
            predefined,
            root,
            nested_env(),
        )
    finally:
        shutdown(root / "project")


def label_event(at: str) -> dict[str, object]:
    return {"id": 1, "action": "add", "created_at": at, "label": {"id": 3, "name": LABEL}}


def test_gitlab_an_oracle_change_passes_with_a_label_added_after_its_head_was_pushed(origin, gitlab_api, tmp_path):
    api, lists = gitlab_api
    lists["versions"] = [{"id": 1, "head_commit_sha": origin.narrow, "created_at": "2026-11-30T10:00:00.000Z"}]
    lists["resource_label_events"] = [label_event("2026-11-30T10:05:00.000Z")]
    result = gitlab(origin, origin.narrow, api, tmp_path)
    assert result.code == 0, result.output[-6000:]
    assert f"the gate of base {origin.base} judges head {origin.narrow}" in result.output
    assert f"labels: {LABEL}" in result.output and "gate ok (exit 0)" in result.output
    assert "CI_MERGE_REQUEST_LABELS ignored" not in result.output
    junit, statement = result.artifacts
    assert not junit.is_symlink() and ET.parse(junit).getroot().find("testsuite").get("failures") == "0"
    # The label that approved the oracle change is in the statement, bound to the head it was given on.
    approvals = json.loads(statement.read_text().splitlines()[1])["predicate"]["approvals"]
    assert approvals == [{"label": LABEL, "commit": origin.narrow}]
    assert origin.victim.read_text() == "keep me\n"  # the committed link was replaced, not written through


def test_gitlab_a_label_added_before_the_head_was_pushed_does_not_count(origin, gitlab_api, tmp_path):
    api, lists = gitlab_api
    lists["versions"] = [
        {"id": 1, "head_commit_sha": origin.refactor, "created_at": "2026-11-30T10:00:00.000Z"},
        {"id": 2, "head_commit_sha": origin.narrow, "created_at": "2026-11-30T11:00:00.000Z"},
    ]
    lists["resource_label_events"] = [label_event("2026-11-30T10:05:00.000Z")]
    result = gitlab(origin, origin.narrow, api, tmp_path)
    assert result.code == 2, result.output[-6000:]
    assert (
        f"gitlab-labels: label '{LABEL}' ignored: it was added at 2026-11-30T10:05:00+00:00 on head {origin.refactor}"
        in result.output
    )
    assert "labels: none" in result.output and "gate FAILED (exit 2)" in result.output
    assert "not run: protected paths changed without the label" in result.output
    junit, statement = result.artifacts
    assert ET.parse(junit).getroot().find("testsuite").get("failures") != "0"
    assert json.loads(statement.read_text().splitlines()[0])["predicate"]["verificationResult"] == "FAILED"
