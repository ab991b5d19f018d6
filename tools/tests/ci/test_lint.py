"""The CI recipes under ci/: valid against the GitHub workflow and GitLab CI JSON schemas that
check-jsonschema bundles (no network), and holding to what docs/ci.md promises of them: the
workflow file and the gate come from the base revision, the checkout is the labelled head with
full history and no stored credentials, values from the event reach shell steps only through
the environment, and the gate runs both runs (`check --clean`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.testing.ci_recipes import load

GITHUB = Path("ci/github/oracle-gate.yml")
GITLAB = Path("ci/gitlab/oracle-gate.gitlab-ci.yml")


def lint(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "HOME": os.environ.get("TEST_TMPDIR", "/nonexistent"),
    }
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize("schema, path", [("vendor.github-workflows", GITHUB), ("vendor.gitlab-ci", GITLAB)])
def test_each_recipe_is_valid_against_its_platform_schema(schema, path):
    proc = lint(schema, path)
    assert proc.returncode == 0 and "ok -- validation done" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "schema, path, old, new",
    [
        # A job without a runner.
        ("vendor.github-workflows", GITHUB, "    runs-on: ubuntu-latest\n", ""),
        # A permission level that does not exist.
        ("vendor.github-workflows", GITHUB, "  contents: read\n", "  contents: maybe\n"),
        # A script line with ": " in it is a YAML mapping, not a command.
        ("vendor.gitlab-ci", GITLAB, "    - status=0\n", "    - echo oracle-gate: starting\n"),
        # `when` of artifacts is a closed set.
        ("vendor.gitlab-ci", GITLAB, "    when: always\n", "    when: sometimes\n"),
    ],
)
def test_the_linter_rejects_a_broken_copy(tmp_path, schema, path, old, new):
    text = path.read_text()
    assert old in text
    broken = tmp_path / path.name
    broken.write_text(text.replace(old, new, 1))
    proc = lint(schema, broken)
    assert proc.returncode == 1 and "Schema validation errors" in proc.stdout, proc.stdout + proc.stderr


def runs(steps: list[str]) -> None:
    for script in steps:
        proc = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{proc.stderr}\n{script}"


def test_the_github_workflow_runs_the_base_revisions_gate_on_the_labelled_head():
    workflow = load(GITHUB)
    assert set(workflow["on"]) == {"pull_request_target"}  # the workflow file comes from the base branch
    assert {"labeled", "unlabeled", "synchronize", "opened", "reopened", "edited"} <= set(
        workflow["on"]["pull_request_target"]["types"]
    )
    assert "if" not in workflow["jobs"]["oracle-gate"]  # a skipped required check would count as passed
    assert workflow["permissions"] == {"contents": "read"}
    assert list(workflow["jobs"]) == ["oracle-gate", "sign-verdict"]
    job = workflow["jobs"]["oracle-gate"]
    assert "permissions" not in job  # the job that runs the change's code keeps the read-only token
    steps = job["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"] == {
        "ref": "${{ github.event.pull_request.head.sha }}",
        "path": "pr",
        "fetch-depth": 0,
        "persist-credentials": False,
    }
    scripts = [s["run"] for s in steps if "run" in s]
    runs(scripts)
    text = GITHUB.read_text()
    assert "secrets" not in "".join(line.split("#")[0] for line in text.splitlines())  # no secret, in no line's code
    # Values from the event reach shell steps only through the environment, never spliced into a script.
    assert all("${{" not in script for script in scripts)
    archive = next(i for i, s in enumerate(steps) if "archive" in s.get("run", ""))
    gate = next(i for i, s in enumerate(steps) if "check --clean" in s.get("run", ""))
    assert steps.index(checkout) < archive < gate
    assert '"${GITHUB_SHA}:${ORACLE_GATE_FROM}" tools' in steps[archive]["run"]
    assert steps[gate]["run"].startswith('cd "$ORACLE_GATE_BASE_GATE"\n')
    assert 'env -i "${keep[@]}" python3 -B -s -E -m tools.oracle_gate' in steps[gate]["run"]
    assert "GITHUB_TOKEN" not in steps[gate]["run"] and "ACTIONS_" not in steps[gate]["run"]
    assert '--base "$GITHUB_SHA"' in steps[gate]["run"] and '--markdown "$GITHUB_STEP_SUMMARY"' in steps[gate]["run"]
    assert '--attest "$RUNNER_TEMP/oracle-gate.intoto.jsonl"' in steps[gate]["run"]


def test_the_github_verdict_is_signed_by_a_job_that_runs_nothing_of_the_change():
    sign = load(GITHUB)["jobs"]["sign-verdict"]
    assert sign["needs"] == "oracle-gate"
    assert sign["permissions"] == {"contents": "read", "id-token": "write", "attestations": "write"}
    uses = [s.get("uses", "").split("@")[0] for s in sign["steps"]]
    assert uses == ["actions/download-artifact", "", "actions/attest"]
    attest = sign["steps"][-1]["with"]
    assert attest["predicate-type"] == "https://slsa.dev/verification_summary/v1"
    assert attest["subject-path"].endswith("/statement/oracle-gate.intoto.jsonl")
    assert not any("checkout" in u for u in uses)  # no checkout: nothing of the change is here
    runs([s["run"] for s in sign["steps"] if "run" in s])


def test_the_gitlab_job_runs_the_base_revisions_gate_on_the_labelled_head():
    job = load(GITLAB)["oracle-gate"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"]["GIT_DEPTH"] == "0"
    assert job["artifacts"] == {
        "when": "always",
        "paths": ["oracle-gate.intoto.jsonl"],
        "reports": {"junit": "oracle-gate-junit.xml"},
    }
    script = job["script"]
    runs(["\n".join(script)])
    archive = next(i for i, line in enumerate(script) if "git archive" in line)
    labels = next(i for i, line in enumerate(script) if "gitlab-labels" in line)
    gate = next(i for i, line in enumerate(script) if "check --clean" in line)
    assert archive < labels < gate and 'cd "$gate"' in script[labels + 1 : gate]
    assert (
        script[gate].startswith('env -i "${keep[@]}" python3 -B -s -E -m tools.oracle_gate')
        and '--base "$base"' in script[gate]
    )
    kept = next(line for line in script if "keep=()" in line)
    # The token is dropped before the ORACLE_GATE_* variables are kept; GitLab's label list is not kept.
    assert kept.index("ORACLE_GATE_GITLAB_TOKEN) ;;") < kept.index("ORACLE_GATE_*") and "CI_MERGE" not in kept
    # The report reaches the checkout only after the run, replacing what the change committed there.
    assert '--junit "$gate/oracle-gate-junit.xml"' in script[gate]
    assert '--attest "$gate/oracle-gate.intoto.jsonl"' in script[gate]
    assert script[gate + 1 :] == [
        "for name in oracle-gate-junit.xml oracle-gate.intoto.jsonl; do\n"
        '  rm -f "$CI_PROJECT_DIR/$name"\n'
        '  if [ -f "$gate/$name" ]; then cp "$gate/$name" "$CI_PROJECT_DIR/$name"; fi\n'
        "done\n",
        'exit "$status"',
    ]


def test_the_gitlab_verdict_is_signed_keyless_by_a_job_that_runs_nothing_of_the_change():
    sign = load(GITLAB)["oracle-gate-sign"]
    assert sign["needs"] == ["oracle-gate"] and sign["variables"]["GIT_STRATEGY"] == "none"
    assert sign["id_tokens"] == {"SIGSTORE_ID_TOKEN": {"aud": "sigstore"}}
    assert (
        sign["script"][-1]
        == "cosign sign-blob oracle-gate.intoto.jsonl --bundle oracle-gate.intoto.jsonl.sigstore.json"
    )
    assert "oracle-gate.intoto.jsonl.sigstore.json" in sign["artifacts"]["paths"]
    runs(["\n".join(sign["script"])])
