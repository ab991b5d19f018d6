"""`guard install` (docs/adopting.md, "The agent-side guard"): writes, from the base tip's policy,
each agent's settings (Claude Code's `.claude/settings.json`: the PreToolUse hook and deny rules;
Codex's `.codex/hooks.json`; Cursor's `.cursor/hooks.json` and its rule), the instruction block of
AGENTS.md, CLAUDE.md and `.github/copilot-instructions.md`, and, on request, the clone's git
`pre-push` hook. What a file held besides the guard's part is kept; a second run changes no byte.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate.approval.globs import matches
from tools.oracle_gate.approval.policy import ALWAYS_PROTECTED
from tools.oracle_gate.errors import UsageError
from tools.oracle_gate.git.gitio import git_env
from tools.oracle_gate.guard import texts
from tools.oracle_gate.guard.rules import Protection

GATE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HOOK_MARK = "oracle_gate guard hook"
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
CURSOR_RULE = ".cursor/rules/oracle-gate.mdc"


@dataclass(frozen=True)
class Written:
    """One file `install` looked at: its path (repository-relative, or the hook's path in the git
    directory), whether its bytes changed, and, for a repository file, whether the policy protects it."""

    path: str
    changed: bool
    protected: bool = True


def install(
    repo: str,
    rules: Protection,
    packages: tuple[str, ...],
    *,
    pre_push: bool = False,
    check_only: bool = False,
    gate_root: str = GATE_ROOT,
) -> list[Written]:
    """Writes (or, with `check_only`, compares) every file of the guard.

    Args:
        repo: the work tree's root.
        rules: the protection in force (`rules.load_protection` at the base tip).
        packages: the policy's production packages, for the instructions.
        pre_push: also write the clone's git `pre-push` hook.
        check_only: write nothing; report which files would change.
        gate_root: the folder holding the gate's `tools/oracle_gate` that the hooks run (default:
            this gate's); written relative to `repo`.

    Raises:
        UsageError: (exit 1) when a settings file is not a JSON object, or a `pre-push` hook exists
            that the guard did not write (it is never overwritten).
    """
    gate_rel = os.path.relpath(os.path.abspath(gate_root), os.path.abspath(repo))
    globs = tuple(dict.fromkeys(rules.globs))
    block = texts.instructions(
        tuple(dict.fromkeys((*ALWAYS_PROTECTED, *rules.policy_globs))), rules.label, packages, gate_rel
    )
    edits: list[tuple[str, Callable[[bytes | None], bytes]]] = [
        (".claude/settings.json", lambda old: _claude(old, ".claude/settings.json", globs, gate_rel)),
        (".codex/hooks.json", lambda old: _hooks_json(old, ".codex/hooks.json", "codex", gate_rel)),
        (".cursor/hooks.json", lambda old: _cursor(old, gate_rel)),
        (CURSOR_RULE, lambda old: texts.cursor_rule(block).encode()),
        *((path, lambda old: _with_block(old, block)) for path in INSTRUCTION_FILES),
    ]
    out = []
    for path, edit in edits:
        full = os.path.join(repo, path)
        old = _read(full)
        new = edit(old)
        if new != old and not check_only:
            _write(full, new, 0o644)
        out.append(Written(path, new != old, matches(path, rules.policy_globs) is not None))
    if pre_push:
        out.append(_pre_push(repo, gate_rel, check_only))
    return out


def _claude(old: bytes | None, path: str, globs: tuple[str, ...], gate_rel: str) -> bytes:
    """`.claude/settings.json` with the guard's PreToolUse hook and deny rules, the rest kept."""
    settings = _hooks(_object(old, path), texts.CLAUDE_MATCHER, texts.hook_command("claude", gate_rel))
    permissions = settings.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise UsageError(f"{path}: `permissions` is not an object; fix it, then run `guard install` again")
    ours = texts.deny_rules(globs)
    kept = [rule for rule in permissions.get("deny", []) if rule not in ours]
    permissions["deny"] = [*kept, *ours]
    return _json(settings)


def _hooks_json(old: bytes | None, path: str, agent: str, gate_rel: str) -> bytes:
    """Codex's `.codex/hooks.json` (Claude Code's hooks shape) with the guard's PreToolUse hook."""
    return _json(_hooks(_object(old, path), texts.CODEX_MATCHER, texts.hook_command(agent, gate_rel)))


def _hooks(settings: dict[str, Any], matcher: str, command: str) -> dict[str, Any]:
    """`settings` with its `hooks.PreToolUse` entry of the guard replaced by one running `command`."""
    hooks = settings.setdefault("hooks", {})
    entries = hooks.get("PreToolUse", []) if isinstance(hooks, dict) else None
    if not isinstance(entries, list):
        raise UsageError("a settings file's `hooks.PreToolUse` is not a list; fix it, then run `guard install` again")
    kept = [e for e in entries if HOOK_MARK not in json.dumps(e)]
    entry = {"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": texts.HOOK_TIMEOUT}]}
    hooks["PreToolUse"] = [*kept, entry]
    return settings


def _cursor(old: bytes | None, gate_rel: str) -> bytes:
    """`.cursor/hooks.json` with the guard's beforeShellExecution hook (Cursor has no hook that
    decides before a file edit), the rest kept."""
    settings = _object(old, ".cursor/hooks.json")
    settings.setdefault("version", 1)
    hooks = settings.setdefault("hooks", {})
    entries = hooks.get("beforeShellExecution", []) if isinstance(hooks, dict) else None
    if not isinstance(entries, list):
        raise UsageError(".cursor/hooks.json: `hooks.beforeShellExecution` is not a list; fix it, then run again")
    kept = [e for e in entries if HOOK_MARK not in json.dumps(e)]
    hooks["beforeShellExecution"] = [*kept, {"command": texts.hook_command("cursor", gate_rel)}]
    return _json(settings)


def _with_block(old: bytes | None, block: str) -> bytes:
    """A markdown file with the guard's block replaced (or appended), the rest kept."""
    text = (old or b"").decode("utf-8", "surrogateescape")
    start, end = text.find(texts.BEGIN), text.find(texts.END)
    if start >= 0 and end > start:
        tail = text[end + len(texts.END) :]
        text = text[:start] + block + tail.removeprefix("\n")
    else:
        text = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + block
    return text.encode("utf-8", "surrogateescape")


def _pre_push(repo: str, gate_rel: str, check_only: bool) -> Written:
    """The clone's `pre-push` hook (`git rev-parse --git-path hooks/pre-push`, so `core.hooksPath`
    counts).

    Raises:
        UsageError: when a hook exists there that the guard did not write.
    """
    proc = subprocess.run(
        ["git", "-C", repo, "rev-parse", "--git-path", "hooks/pre-push"],
        capture_output=True,
        env=git_env(os.environ),
        check=False,
    )
    if proc.returncode != 0:
        raise UsageError(f"{repo}: git cannot name the pre-push hook's path; is it a git work tree?")
    path = os.path.join(repo, proc.stdout.decode().strip())
    old, new = _read(path), texts.pre_push(gate_rel).encode()
    if old is not None and texts.PRE_PUSH_MARK.encode() not in old:
        raise UsageError(
            f"{path} exists and is not the guard's; add the line `{texts.gate_python(gate_rel)} check --head-only "
            "--quick` to it yourself, or remove it and run `guard install --pre-push` again"
        )
    if new != old and not check_only:
        _write(path, new, 0o755)
    return Written(os.path.relpath(path, repo), new != old)


def _object(old: bytes | None, path: str) -> dict[str, Any]:
    """The JSON object a settings file holds ({} when there is none).

    Raises:
        UsageError: when the file is not a JSON object.
    """
    if old is None:
        return {}
    try:
        value = json.loads(old.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        value = None
    if not isinstance(value, dict):
        raise UsageError(f"{path} is not a JSON object; fix it (or remove it), then run `guard install` again")
    return value


def _json(value: dict[str, Any]) -> bytes:
    """A settings file's bytes: JSON indented by 2, with a newline."""
    return (json.dumps(value, indent=2) + "\n").encode("utf-8")


def _read(path: str) -> bytes | None:
    """The bytes of `path`, or None when it does not exist.

    Raises:
        UsageError: when it exists but is a symbolic link, not a regular file, or unreadable.
    """
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) or not os.path.isfile(path):
        raise UsageError(f"{path} is a symbolic link or not a regular file; the guard writes only regular files")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _write(path: str, data: bytes, mode: int) -> None:
    """Writes `path` (its folder made as needed) through a temporary file renamed over it.

    Raises:
        UsageError: when it cannot be written.
    """
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.oracle-gate-tmp"
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
