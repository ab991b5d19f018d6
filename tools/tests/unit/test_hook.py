"""guard/hook.py through the command `guard install` writes: each agent's documented payloads on
stdin, the decision on stdout, as the agent's tool runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tools.oracle_gate.guard.hook import decide, render
from tools.oracle_gate.guard.install import install
from tools.oracle_gate.guard.rules import load_protection
from tools.testing.gitrepo import GitRepo

REPO_POLICY = Path(__file__).resolve().parents[3] / "oracles" / "policy.toml"


@pytest.fixture
def demo(tmp_path: Path) -> GitRepo:
    """A repository shaped like the demo: its policy, an oracle file, a blob folder, billing/ and harness/."""
    repo = GitRepo(tmp_path / "demo")
    repo.write("oracles/policy.toml", REPO_POLICY.read_bytes())
    repo.write("oracles/billing.toml", "schema = 1\n")
    repo.write("oracles/blobs/cart.json", "[]\n")
    repo.write("billing/__init__.py", "")
    repo.write("billing/BUILD.bazel", "# production targets\n")
    repo.write("billing/tax.py", "def apply_rate(a, r):\n    return a\n")
    repo.write("harness/test_x.py", "# harness\n")
    repo.commit("base")
    rules = load_protection(str(repo.path))
    install(str(repo.path), rules, rules.packages)
    return repo


def claude_hook(repo: GitRepo, payload: object, agent: str = "claude") -> tuple[int, str, str]:
    """Runs the hook command of the installed settings as the agent does: `sh -c COMMAND`, the
    payload on stdin, from another folder (the command changes into the project itself)."""
    settings = {
        "claude": (".claude/settings.json", lambda s: s["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]),
        "codex": (".codex/hooks.json", lambda s: s["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]),
        "cursor": (".cursor/hooks.json", lambda s: s["hooks"]["beforeShellExecution"][-1]["command"]),
    }[agent]
    command = settings[1](json.loads(repo.read(settings[0])))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env["CLAUDE_PROJECT_DIR"] = str(repo.path)
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = subprocess.run(
        ["sh", "-c", command], input=data, capture_output=True, env=env, cwd=str(repo.path / "harness"), check=False
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def pre_tool_use(repo: GitRepo, tool: str, tool_input: dict[str, object]) -> dict[str, object]:
    """Claude Code's PreToolUse payload (its hooks reference: common fields, tool_name, tool_input)."""
    return {
        "session_id": "s1",
        "transcript_path": "/dev/null",
        "cwd": str(repo.path),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "t1",
    }


def edit_inputs(path: str) -> list[tuple[str, dict[str, object]]]:
    """Each file tool's documented tool_input for a write of `path` (absolute, as Claude Code sends it)."""
    return [
        ("Edit", {"file_path": path, "old_string": "a", "new_string": "b", "replace_all": False}),
        ("Write", {"file_path": path, "content": "x = 1\n"}),
        ("MultiEdit", {"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]}),
        ("NotebookEdit", {"notebook_path": path, "new_source": "x = 1", "cell_id": "c1", "edit_mode": "replace"}),
    ]


def denied(stdout: str) -> str:
    """The reason of a PreToolUse denial on stdout; fails the test for anything else."""
    out = json.loads(stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny", out
    return str(out["permissionDecisionReason"])


def test_the_issue_payloads_protected_writes_denied_with_the_reason_others_allowed(demo):
    for tool, given in edit_inputs(str(demo.path / "oracles/billing.toml")):
        code, out, _ = claude_hook(demo, pre_tool_use(demo, tool, given))
        reason = denied(out)
        assert code == 0
        assert "oracles/billing.toml" in reason and "'oracles/**'" in reason and "'oracle-change'" in reason
    for command, path in (
        ("sed -i 's/min = 0/min = -1/' oracles/billing.toml", "oracles/billing.toml"),
        ("echo '[]' > oracles/blobs/x.json", "oracles/blobs/x.json"),
    ):
        code, out, _ = claude_hook(demo, pre_tool_use(demo, "Bash", {"command": command, "description": "d"}))
        assert code == 0 and path in denied(out)
    for path in ("harness/test_x.py", "billing/tax.py"):
        for tool, given in edit_inputs(str(demo.path / path)):
            assert claude_hook(demo, pre_tool_use(demo, tool, given)) == (0, "", ""), (tool, path)


@pytest.mark.parametrize(
    "command",
    [
        "cd oracles && sed -i -e s/a/b/ billing.toml",
        "cat /dev/null | tee oracles/billing.toml",
        "rm -rf oracles",
        "rm -rf billing",  # billing/BUILD.bazel is protected
        "mv tools/x y",
        "ln -sf /tmp/evil oracles/billing.toml",
        "git checkout HEAD~1 -- oracles",
        "for f in oracles/*.toml; do sed -i s/a/b/ $f; done",
        "git ls-files oracles | xargs rm",
        "bash -c 'echo x >> .bazelrc'",
        "echo $(cp /tmp/x .claude/settings.json)",
        "F=oracles/billing.toml; echo x > $F",
        "python3 -m tools.oracle_gate pin --write",
        "dd if=/dev/zero of=oracles/blobs/cart.json count=1",
        "cp /tmp/x AGENTS.md",
        "echo x > .git/hooks/pre-push",
        'echo "$(rm -rf oracles)"',
        "cat <(rm -rf oracles)",
        "(cd /tmp); rm -f oracles/billing.toml",
        "cd /nonexistent 2>/dev/null; rm -f oracles/billing.toml",
        "env -C harness rm -f ../oracles/billing.toml",
        "git -C harness rm -q ../oracles/billing.toml",
        "rm -rf orac${x}les",
        "ls | xargs rm -rf",
        "git rm -rq :/oracles",
        "rm -f oracles/billing.tom[[:alpha:]]",
        "cp billing/tax.py -toracles",
        "cp --target-dir=oracles billing/tax.py",
        "rm -rf ora\\\ncles",
        "env -S 'rm -rf oracles'",
        "git config --unset core.hooksPath",
        "git push --no-verify",
        "git update-ref refs/remotes/origin/main HEAD~1",
        "echo '[core]' >> ~/.gitconfig",
        "printf 'rm -rf oracles' > billing/s.sh && sh billing/s.sh",
        "find billing -exec sh -c 'rm -rf oracles' \\;",
        "setsid sh -c 'rm -rf oracles'",
        "echo " + "{a,b}" * 26 + "; rm -rf oracles",
    ],
)
def test_writing_commands_on_protected_paths_are_denied(demo, command):
    payload = pre_tool_use(demo, "Bash", {"command": command})
    assert decide(payload, "claude", str(demo.path)).deny, command


@pytest.mark.parametrize(
    "command",
    [
        "cat oracles/billing.toml | grep min",
        "git diff main -- oracles/ && git log --oneline",
        "sed -n 1,5p oracles/billing.toml",
        "for f in oracles/*.toml; do echo $f; done",
        "pytest harness/ -q 2>&1 | tail",
        "sed -i s/a/b/ billing/tax.py && git add -A && git commit -m fix",
        "bazel test //oracles/... //harness/...",
        "echo x > /tmp/out.txt; ls oracles",
        "python3 -m tools.oracle_gate check --head-only --quick --format json",
        "PYTHONPATH=. python3 -P -B -s -m tools.oracle_gate check --head-only --quick --format json",
        "pip install -e . && ruff check . && ruff format billing && mypy billing",
        "python3 -m pytest billing/tests -q",
        "find . -name '*.py' | xargs grep -n foo",
        "cp oracles/billing.toml /tmp/o.toml",
        "cat > harness/test_new.py <<'EOF'\nfrom oracles import x  # see oracles/billing.toml\nEOF",
        ". .venv/bin/activate && source .venv/bin/activate",
        "git stash && git stash pop && git checkout -b topic",
    ],
)
def test_reading_and_unprotected_commands_are_allowed(demo, command):
    payload = pre_tool_use(demo, "Bash", {"command": command})
    assert not decide(payload, "claude", str(demo.path)).deny, command


def test_a_symbolic_link_into_a_protected_folder_is_followed(demo):
    os.symlink("oracles", demo.path / "claims")
    edit = pre_tool_use(demo, "Edit", {"file_path": str(demo.path / "claims/billing.toml")})
    assert "oracles/billing.toml" in decide(edit, "claude", str(demo.path)).reason
    bash = pre_tool_use(demo, "Bash", {"command": "sed -i s/a/b/ claims/billing.toml"})
    assert decide(bash, "claude", str(demo.path)).deny


def test_bad_input_is_denied_with_its_reason(demo):
    for payload, why in (
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"tool_name": "Edit"}).encode(), "lacks `tool_name` or `tool_input`"),
        (json.dumps(pre_tool_use(demo, "Edit", {"path": "x"})).encode(), "without a string `file_path`"),
        (json.dumps(pre_tool_use(demo, "Bash", {"command": 3})).encode(), "without a string `command`"),
        (json.dumps(pre_tool_use(demo, "Bash", {"command": "echo 'open"})).encode(), "cannot be read as shell words"),
        (json.dumps(pre_tool_use(demo, "Teleport", {"to": "x"})).encode(), "does not know the tool 'Teleport'"),
    ):
        code, out, _ = claude_hook(demo, payload)
        assert code == 0 and why in denied(out), why


def test_a_policy_the_hook_cannot_read_denies_every_write(demo):
    (demo.path / "oracles/policy.toml").write_text("schema = 2\n")
    code, out, _ = claude_hook(demo, pre_tool_use(demo, "Write", {"file_path": str(demo.path / "billing/tax.py")}))
    reason = denied(out)
    assert "cannot read oracles/policy.toml" in reason and "schema" in reason


def test_the_hook_reads_the_policy_on_every_call(demo):
    """A glob the work tree's policy adds is enforced at once: no copy of the policy drifts."""
    edit = pre_tool_use(demo, "Edit", {"file_path": str(demo.path / "billing/tax.py")})
    assert claude_hook(demo, edit)[1] == ""
    policy = (
        (demo.path / "oracles/policy.toml")
        .read_text()
        .replace('  "oracles/**",', '  "oracles/**",\n  "billing/tax.py",')
    )
    (demo.path / "oracles/policy.toml").write_text(policy)
    assert "'billing/tax.py'" in denied(claude_hook(demo, edit)[1])


def test_a_hook_that_cannot_run_blocks_the_call(demo):
    """Exit 2 is Claude Code's blocking error: a missing gate never lets a call through."""
    settings = json.loads(demo.read(".claude/settings.json"))
    command = re.sub(
        r"PYTHONPATH=\S+", "PYTHONPATH=/nowhere", settings["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]
    )
    proc = subprocess.run(
        ["sh", "-c", command],
        input=b"{}",
        capture_output=True,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(demo.path)},
        check=False,
    )
    assert proc.returncode == 2 and b"the hook could not run" in proc.stderr


def test_codex_patches_and_cursor_shell_commands(demo):
    patch = "*** Begin Patch\n*** Update File: oracles/billing.toml\n@@\n-a\n+b\n*** End Patch\n"
    code, out, _ = claude_hook(demo, pre_tool_use(demo, "apply_patch", {"command": patch}), "codex")
    assert code == 0 and "a patch of oracles/billing.toml" in denied(out)
    fine = patch.replace("oracles/billing.toml", "billing/tax.py")
    assert claude_hook(demo, pre_tool_use(demo, "apply_patch", {"command": fine}), "codex") == (0, "", "")
    cursor = {"hook_event_name": "beforeShellExecution", "command": "rm oracles/billing.toml", "cwd": str(demo.path)}
    code, out, _ = claude_hook(demo, cursor, "cursor")
    answer = json.loads(out)
    assert code == 0 and answer["permission"] == "deny" and "oracles/billing.toml" in answer["agentMessage"]
    cursor["command"] = "pytest harness"
    assert json.loads(claude_hook(demo, cursor, "cursor")[1]) == {"permission": "allow"}


def test_render_allows_with_empty_output_so_the_tools_own_permissions_still_apply():
    from tools.oracle_gate.guard.hook import Decision

    assert render(Decision(False), "claude") == ""
    assert json.loads(render(Decision(True, "why"), "codex"))["hookSpecificOutput"]["permissionDecisionReason"] == "why"


def test_a_repository_the_agent_makes_inside_the_project_does_not_change_the_policy(demo):
    """The project is where the hook runs (the settings change into it); the payload's folder only
    places relative words."""
    nested = demo.path / "harness" / "sub"
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    for payload in (
        {"tool_name": "Bash", "tool_input": {"command": "echo x > ../../oracles/billing.toml"}, "cwd": str(nested)},
        {
            "tool_name": "Write",
            "tool_input": {"file_path": str(demo.path / "oracles/billing.toml")},
            "cwd": str(nested),
        },
    ):
        assert "oracles/billing.toml" in denied(claude_hook(demo, payload)[1])


def test_codex_patches_through_the_shell_tool_and_patch_files_are_read(demo, tmp_path):
    patch = "*** Begin Patch\n*** Add File: oracles/x.toml\n+x\n*** End Patch"
    call = pre_tool_use(demo, "shell", {"command": ["apply_patch", patch]})
    assert "oracles/x.toml" in denied(claude_hook(demo, call, "codex")[1])
    diff = tmp_path / "p.diff"
    diff.write_text(
        "diff --git a/oracles/billing.toml b/oracles/billing.toml\n"
        "--- a/oracles/billing.toml\n+++ b/oracles/billing.toml\n"
    )
    for command in (f"git apply {diff}", f"patch -p1 < {diff}"):
        assert "oracles/billing.toml" in denied(claude_hook(demo, pre_tool_use(demo, "Bash", {"command": command}))[1])
    assert "cannot read" in denied(
        claude_hook(demo, pre_tool_use(demo, "Bash", {"command": f"cat {diff} | git apply"}))[1]
    )
    diff.write_text("--- a/billing/tax.py\n+++ b/billing/tax.py\n")
    assert claude_hook(demo, pre_tool_use(demo, "Bash", {"command": f"git apply {diff}"}))[1] == ""


def test_a_revision_that_changes_protected_paths_is_not_checked_out(demo):
    """A revision whose claims differ from HEAD's and the base tip's is refused; bringing in the
    base tip itself is not a change's own edit."""
    demo.git("checkout", "-q", "-b", "evil")
    demo.write("oracles/billing.toml", "schema = 1\n# weaker\n")
    demo.git("commit", "-q", "--no-gpg-sign", "-m", "weaker claims", "--", "oracles/billing.toml")
    demo.git("checkout", "-q", "-b", "work", "main")
    for command in ("git checkout evil", "git reset --hard evil", "git merge evil", "git rebase evil"):
        reason = denied(claude_hook(demo, pre_tool_use(demo, "Bash", {"command": command}))[1])
        assert "oracles/billing.toml" in reason, command
    for command in ("git checkout -b other", "git merge main", "git checkout main"):
        assert claude_hook(demo, pre_tool_use(demo, "Bash", {"command": command}))[1] == "", command


def test_a_policy_that_is_not_a_small_regular_file_is_unreadable(demo):
    policy = demo.path / "oracles/policy.toml"
    policy.unlink()
    policy.symlink_to("/dev/zero")
    call = pre_tool_use(demo, "Write", {"file_path": str(demo.path / "billing/tax.py")})
    assert "not a regular file" in denied(claude_hook(demo, call)[1])
