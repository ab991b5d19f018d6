"""guard/install.py and guard/texts.py through `guard install`: what it writes, that it keeps the
rest of each file, that a second run changes no byte, and what it refuses."""

from __future__ import annotations

import json
import os
import subprocess

from tools.oracle_gate.guard import texts
from tools.oracle_gate.guard.install import INSTRUCTION_FILES


def test_install_writes_every_agents_files_and_a_second_run_changes_nothing(project, gate):
    project.write("AGENTS.md", "# Our agents\n\nBe kind.\n")
    project.write(".claude/settings.json", json.dumps({"model": "x", "permissions": {"deny": ["Read(/secrets/**)"]}}))
    code, out, err = gate("--repo", str(project.path), "guard", "install", "--pre-push")
    assert code == 0, err
    assert "wrote .claude/settings.json" in out and "wrote .git/hooks/pre-push" in out
    settings = json.loads(project.read(".claude/settings.json"))
    assert settings["model"] == "x"
    assert settings["permissions"]["deny"][0] == "Read(/secrets/**)"
    assert "Edit(/oracles/**)" in settings["permissions"]["deny"]
    hook = settings["hooks"]["PreToolUse"][0]
    assert hook["matcher"] == "Edit|Write|MultiEdit|NotebookEdit|Bash"
    assert "guard hook --agent claude" in hook["hooks"][0]["command"]
    assert project.read("AGENTS.md").startswith(b"# Our agents\n\nBe kind.\n\n" + texts.BEGIN.encode())
    for path in INSTRUCTION_FILES:
        assert b"`oracles/**`" in project.read(path) and b"check --head-only --quick" in project.read(path)
    assert b"alwaysApply: true" in project.read(".cursor/rules/oracle-gate.mdc")
    assert "beforeShellExecution" in json.loads(project.read(".cursor/hooks.json"))["hooks"]
    assert os.access(project.path / ".git/hooks/pre-push", os.X_OK)
    before = {p: project.read(p) for p in (".claude/settings.json", "AGENTS.md", ".codex/hooks.json")}
    code, out, _ = gate("--repo", str(project.path), "guard", "install", "--pre-push", "--check")
    assert code == 0 and "would change" not in out
    code, out, _ = gate("--repo", str(project.path), "guard", "install", "--pre-push")
    assert code == 0 and "wrote" not in out
    assert {p: project.read(p) for p in before} == before


def test_check_reports_drift_from_the_policy(project, gate):
    assert gate("--repo", str(project.path), "guard", "install")[0] == 0
    project.write(
        "oracles/policy.toml",
        project.read("oracles/policy.toml").decode().replace('"oracles/**"', '"oracles/**", "shop/x.py"'),
    )
    code, out, err = gate("--repo", str(project.path), "guard", "install", "--check")
    assert code == 1 and "would change .claude/settings.json" in out and "run it" in err


def test_files_the_policy_does_not_protect_are_named(project, gate):
    code, out, _ = gate("--repo", str(project.path), "guard", "install")
    assert code == 0
    assert "note: AGENTS.md is not protected by oracles/policy.toml at refs/heads/main" in out


def test_bad_settings_and_a_foreign_pre_push_hook_are_refused(project, gate):
    project.write(".codex/hooks.json", "[1]")
    code, _, err = gate("--repo", str(project.path), "guard", "install")
    assert code == 1 and ".codex/hooks.json is not a JSON object" in err
    os.remove(project.path / ".codex/hooks.json")
    project.write(".git/hooks/pre-push", "#!/bin/sh\nmake lint\n")
    code, _, err = gate("--repo", str(project.path), "guard", "install", "--pre-push")
    assert code == 1 and "exists and is not the guard's" in err
    assert project.read(".git/hooks/pre-push") == b"#!/bin/sh\nmake lint\n"


def test_the_pre_push_hook_checks_what_is_pushed_as_committed(project, gate, tmp_path):
    assert gate("--repo", str(project.path), "guard", "install", "--pre-push")[0] == 0
    remote = tmp_path / "remote.git"
    project.git("init", "-q", "--bare", str(remote))
    project.write("harness/test_shop.py", "# another example\n")
    project.commit("harness only")

    def push(*refs: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
        return subprocess.run(
            ["git", "-C", str(project.path), "push", "-q", str(remote), *refs],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    pushed = push("change")
    assert pushed.returncode == 0, pushed.stderr
    refused = push("main")
    assert refused.returncode != 0 and "refs/heads/main is not HEAD" in refused.stderr
    project.write("harness/test_shop.py", "# not committed\n")
    refused = push("change")
    assert refused.returncode != 0 and "the work tree differs from HEAD" in refused.stderr


def test_gate_path_names_where_the_hooks_find_the_gate(project, gate, tmp_path):
    code, _, err = gate("--repo", str(project.path), "guard", "install", "--gate-path", "../nowhere")
    assert code == 1 and "--gate-path ../nowhere: no tools/oracle_gate there" in err
    (tmp_path / "oracle-gate" / "tools" / "oracle_gate").mkdir(parents=True)
    (tmp_path / "oracle-gate" / "tools" / "oracle_gate" / "__init__.py").write_text("")
    assert gate("--repo", str(project.path), "guard", "install", "--gate-path", "../oracle-gate")[0] == 0
    command = json.loads(project.read(".claude/settings.json"))["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert "PYTHONPATH=../oracle-gate python3 -P" in command
    assert b"PYTHONPATH=../oracle-gate python3 -P" in project.read("AGENTS.md")
