"""Runs the CI recipes under ci/ the way their platform would, on this machine.

GitHub Actions (`run_github_job`): each `run` step of the job is a bash script run with the
platform's default bash options (`bash --noprofile --norc -eo pipefail`), in GITHUB_WORKSPACE, with
the variables the runner sets (GITHUB_SHA, GITHUB_EVENT_PATH, GITHUB_ENV, GITHUB_STEP_SUMMARY,
RUNNER_TEMP, ...), the job's and the step's `env`, and what earlier steps appended to GITHUB_ENV.
A step after a failed one runs only under `if: always()`. The two actions the recipe uses are
stood in for: `actions/checkout` clones the origin with every branch (fetch-depth 0) into `path`
and checks out `ref` detached; `actions/upload-artifact` records the file its `path` names.
`${{ ... }}` expressions may be property paths into the `github`/`runner`/`env`/`vars` contexts
(an unset `vars.X` is empty, as on GitHub); anything else is an error, so a recipe that relies on
more is noticed.

GitLab CI (`run_gitlab_job`): the job's `script` lines run as one bash script under
`set -eo pipefail`, as GitLab's shell executor runs them, in CI_PROJECT_DIR (a clone of the origin
with every branch, HEAD detached at CI_COMMIT_SHA), with the job's `variables` and the
predefined variables the test passes.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tools.testing.gitrepo import GIT_ENV

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(path: Path) -> Any:
    """The recipe as plain dicts and lists (YAML 1.2: `on` stays a string key)."""
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def evaluate(text: str, contexts: Mapping[str, Any]) -> str:
    """`text` with each `${{ a.b.c }}` replaced by that property of `contexts`.

    Raises:
        ValueError: for an expression that is not a property path, or a path that is not there.
    """

    def one(match: re.Match[str]) -> str:
        expression = match.group(1)
        if not re.fullmatch(r"[a-z_]+(\.[A-Za-z0-9_-]+)*", expression):
            raise ValueError(f"unsupported expression {expression!r}")
        value: Any = contexts
        for part in expression.split("."):
            if not isinstance(value, Mapping) or part not in value:
                if expression.startswith("vars."):
                    return ""  # an unset configuration variable is the empty string
                raise ValueError(f"{expression!r} is not in the contexts")
            value = value[part]
        return str(value)

    return EXPRESSION.sub(one, text)


@dataclass
class StepResult:
    name: str
    code: int
    output: str


@dataclass
class JobResult:
    steps: list[StepResult] = field(default_factory=list)
    artifacts: list[Path] = field(default_factory=list)

    @property
    def code(self) -> int:
        """The first failed step's exit code, else 0."""
        return next((s.code for s in self.steps if s.code != 0), 0)

    @property
    def output(self) -> str:
        return "".join(f"--- {s.name} (exit {s.code})\n{s.output}" for s in self.steps)

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)


def _bash(
    script: str, cwd: Path, env: Mapping[str, str], options: list[str], scratch: Path, timeout: float
) -> tuple[int, str]:
    path = scratch / f"step-{len(list(scratch.iterdir()))}.sh"
    path.write_text(script, encoding="utf-8")
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", *options, str(path)],
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        check=False,
    )
    return proc.returncode, proc.stdout.decode(errors="replace")


def _read_env_file(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "<<" in line:
            raise ValueError(f"multi-line GITHUB_ENV values are not stood in for: {line!r}")
        if line.strip():
            name, _, value = line.partition("=")
            found[name] = value
    return found


def _clone(origin: Path, dest: Path, ref: str, env: Mapping[str, str]) -> None:
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(origin), str(dest)], env=dict(env), check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", "--detach", ref], env=dict(env), check=True)


def run_github_job(
    recipe: Path,
    origin: Path,
    event: Mapping[str, Any],
    base_sha: str,
    root: Path,
    base_env: Mapping[str, str],
    timeout: float = 1800,
    variables: Mapping[str, str] | None = None,
    job_name: str = "oracle-gate",
) -> JobResult:
    """Runs the recipe's job `job_name` for a `pull_request_target` event.

    Args:
        recipe: the workflow file.
        origin: the repository the pull request belongs to (a bare repository).
        event: the webhook payload (written to GITHUB_EVENT_PATH).
        base_sha: GITHUB_SHA, the base branch's commit for `pull_request_target`.
        root: an empty folder for the workspace, the runner's temp folder and the event file.
        base_env: the environment every step starts from (PATH, HOME, ...).
        timeout: seconds each step may take.
        variables: the repository's configuration variables (the `vars` context).
        job_name: the job's key.
    """
    workflow = load(recipe)
    job = workflow["jobs"][job_name]
    workspace, temp, scratch = root / "workspace", root / "runner-temp", root / "scripts"
    for folder in (workspace, temp, scratch):
        folder.mkdir(parents=True)
    event_path, env_file, summary = root / "event.json", temp / "github_env", temp / "step_summary.md"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    env_file.touch()
    summary.touch()
    runner = {
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "GITHUB_EVENT_NAME": "pull_request_target",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_SHA": base_sha,
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ENV": str(env_file),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(temp),
    }
    contexts: dict[str, Any] = {
        "github": {"event": event, "sha": base_sha, "workspace": str(workspace)},
        "runner": {"temp": str(temp)},
        "vars": dict(variables or {}),
    }
    job_env = {k: evaluate(str(v), contexts) for k, v in (job.get("env") or {}).items()}
    result = JobResult()
    failed = False
    for index, step in enumerate(job["steps"]):
        name = step.get("name", f"step {index + 1}")
        condition = step.get("if")
        if failed and condition != "always()":
            continue
        if condition not in (None, "always()"):
            raise ValueError(f"step {name!r}: condition {condition!r} is not stood in for")
        env = {**base_env, **runner, **job_env, **_read_env_file(env_file)}
        contexts["env"] = env
        env.update({k: evaluate(str(v), contexts) for k, v in (step.get("env") or {}).items()})
        with_ = {k: evaluate(str(v), contexts) for k, v in (step.get("with") or {}).items()}
        if "run" in step:
            code, output = _bash(step["run"], workspace, env, ["-eo", "pipefail"], scratch, timeout)
        elif step["uses"].startswith("actions/checkout@"):
            if with_.get("fetch-depth") != "0":
                raise ValueError("the stand-in checkout fetches every branch: the recipe must ask for fetch-depth 0")
            _clone(origin, workspace / with_.get("path", ""), with_["ref"], {**base_env, **GIT_ENV})
            code, output = 0, f"checked out {with_['ref']}\n"
        elif step["uses"].startswith("actions/upload-artifact@"):
            path = Path(with_["path"])
            if path.exists():
                result.artifacts.append(path)
            code, output = 0, f"artifact {path} ({'found' if path.exists() else 'missing'})\n"
        else:
            raise ValueError(f"step {name!r}: action {step['uses']!r} is not stood in for")
        result.steps.append(StepResult(name, code, output))
        failed = failed or code != 0
    return result


def run_gitlab_job(
    recipe: Path,
    job_name: str,
    origin: Path,
    predefined: Mapping[str, str],
    root: Path,
    base_env: Mapping[str, str],
    timeout: float = 1800,
) -> JobResult:
    """Runs one job's `script` of a GitLab CI file, as one bash script under `set -eo pipefail`.

    Args:
        recipe: the CI file.
        job_name: the job's key.
        origin: the project's repository (a bare repository); cloned with every branch.
        predefined: GitLab's predefined variables for the pipeline (CI_COMMIT_SHA, CI_MERGE_REQUEST_*,
            CI_API_V4_URL, ...) and CI/CD variables such as a token; CI_PROJECT_DIR is set here.
        root: an empty folder for the clone.
        base_env: the environment the job starts from (PATH, HOME, ...).
        timeout: seconds the script may take.
    """
    job = load(recipe)[job_name]
    project = root / "project"
    _clone(origin, project, predefined["CI_COMMIT_SHA"], {**base_env, **GIT_ENV})
    scratch = root / "scripts"
    scratch.mkdir()
    env = {
        **base_env,
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_PROJECT_DIR": str(project),
        **{k: str(v) for k, v in (job.get("variables") or {}).items()},
        **predefined,
    }
    code, output = _bash("\n".join(job["script"]) + "\n", project, env, ["-eo", "pipefail"], scratch, timeout)
    result = JobResult([StepResult("script", code, output)])
    artifacts = job.get("artifacts", {})
    for path in (artifacts.get("reports", {}).get("junit"), *artifacts.get("paths", [])):
        if path and (project / path).exists():
            result.artifacts.append(project / path)
    return result
