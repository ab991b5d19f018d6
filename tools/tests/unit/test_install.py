"""guard/install.py and guard/texts.py through `guard install`: what it writes, that it keeps the
rest of each file, that a second run changes no byte, and what it refuses."""

from __future__ import annotations

import json
import os

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
