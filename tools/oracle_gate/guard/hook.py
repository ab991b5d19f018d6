"""`guard hook`'s decision on one tool call of a coding agent (docs/design.md section 13).

The agent's tool sends its payload as JSON on stdin; the hook answers with that tool's decision:

- `claude` (Claude Code's PreToolUse; also Codex's, which has the same shape): `Edit`, `Write`,
  `MultiEdit` (`file_path`), `NotebookEdit` (`notebook_path`), `Bash` (`command`), and Codex's
  `apply_patch` (the patch in `command`: its `*** Add/Update/Delete File:` and `*** Move to:`
  lines). A denial is `{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "deny", "permissionDecisionReason": ...}}`; no objection is empty
  stdout, so the tool's own permission rules and prompts still apply.
- `cursor` (Cursor's beforeShellExecution: `command`, `cwd`): `{"permission": "deny" | "allow",
  "userMessage": ..., "agentMessage": ...}`. Cursor gives no decision before a file edit.

A write to a protected path is denied with the glob, the policy it comes from and how to ask for
the label. A payload the hook does not understand, a tool it does not know, and a policy it cannot
read are denied with the reason: the hook never allows what it cannot judge.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tools.oracle_gate.errors import GitError
from tools.oracle_gate.git.gitio import git, toplevel
from tools.oracle_gate.guard.rules import PolicyUnreadable, Protection, load_protection
from tools.oracle_gate.guard.shell import Words, command_words

AGENTS = ("claude", "codex", "cursor")
FILE_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command"})
PATCH_TOOLS = frozenset({"apply_patch"})
# Tools that change no file, for payloads a wider matcher sends.
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "Task", "BashOutput"})
_PATCH_PATH = re.compile(r"^[ \t]*\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)[ \t\r]*$", re.MULTILINE)
# The paths a unified or git diff names, and Codex's patch lines.
_PATCH_LINE = re.compile(
    r"^(?:diff --git a/(\S+) b/(\S+)|(?:\+\+\+|---) (?!/dev/null)(\S+)|rename (?:from|to) (.+)|"
    r"\*\*\* (?:Add File|Update File|Delete File|Move to): (.+))$",
    re.MULTILINE,
)
# The largest patch file the guard reads (bytes); a larger one counts as unreadable.
MAX_PATCH = 4 * 1024 * 1024
# The gate's own commands that write protected files (oracles/ and the guard's files).
_GATE_WRITERS = frozenset({"--write", "init", "lock", "install", "add"})


@dataclass(frozen=True)
class Decision:
    """The hook's answer: `deny` with the reason shown to the agent, or no objection."""

    deny: bool
    reason: str = ""


def decide(payload: Any, agent: str, repo_hint: str) -> Decision:
    """The decision on one tool call.

    Args:
        payload: the parsed JSON the tool sent (any value: a wrong shape is denied).
        agent: one of AGENTS.
        repo_hint: the folder to find the repository from when the payload names none (the hook's
            working directory).

    Raises nothing: every problem is a denial with its reason.
    """
    if not isinstance(payload, dict):
        return Decision(True, "oracle-gate guard: the tool's payload is not a JSON object; nothing is allowed unjudged")
    cwd = _cwd(payload, repo_hint)
    # The project is the hook's own folder (the settings run it from the project's root); the
    # payload's folder only places relative words: a repository the agent made inside the project,
    # or any other, does not change whose policy applies.
    repo = _toplevel(repo_hint) or _toplevel(cwd)
    if repo is None:
        return Decision(True, f"oracle-gate guard: {cwd} is not in a git work tree, so no policy can be read; refused")
    try:
        rules = load_protection(repo)
    except PolicyUnreadable as exc:
        return Decision(True, f"oracle-gate guard: {exc}; every write is refused until a human fixes the policy")
    if agent == "cursor":
        command = payload.get("command")
        if not isinstance(command, str):
            return Decision(True, "oracle-gate guard: the beforeShellExecution payload has no string `command`")
        return _shell(command, cwd, rules)
    return _tool_call(payload, cwd, rules)


def _tool_call(payload: Mapping[str, Any], cwd: str, rules: Protection) -> Decision:
    """A Claude Code or Codex PreToolUse payload."""
    tool, given = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(given, dict):
        return Decision(True, "oracle-gate guard: the payload lacks `tool_name` or `tool_input`; refused unjudged")
    if tool in READ_TOOLS:
        return Decision(False)
    if tool in FILE_TOOLS:
        path = given.get(FILE_TOOLS[tool])
        if not isinstance(path, str) or not path or "\0" in path:
            return Decision(True, f"oracle-gate guard: {tool} without a string `{FILE_TOOLS[tool]}`; refused unjudged")
        return _paths([(path, cwd)], rules, f"{tool} of", deep=True)
    if tool in SHELL_TOOLS:
        command = given.get("command", given.get("cmd"))
        if isinstance(command, list) and all(isinstance(w, str) for w in command):
            command = " ".join(shlex.quote(w) for w in command)
        if not isinstance(command, str):
            return Decision(True, f"oracle-gate guard: {tool} without a string `command`; refused unjudged")
        if "*** Begin Patch" in command:  # Codex's apply_patch through its shell tool
            patched = _paths([(p.strip(), cwd) for p in _PATCH_PATH.findall(command)], rules, "a patch of")
            if patched.deny:
                return patched
        return _shell(command, cwd, rules)
    if tool in PATCH_TOOLS:
        patch = given.get("command", given.get("input", given.get("patch")))
        if isinstance(patch, list):
            patch = "\n".join(str(w) for w in patch)
        if not isinstance(patch, str):
            return Decision(True, "oracle-gate guard: apply_patch without its patch text; refused unjudged")
        return _paths([(p.strip(), cwd) for p in _PATCH_PATH.findall(patch)], rules, "a patch of", deep=True)
    return Decision(True, f"oracle-gate guard: it does not know the tool {tool!r}, so it cannot tell what it writes")


def _shell(command: str, cwd: str, rules: Protection) -> Decision:
    """A shell command: its written words, the words it gives a program that may write, and, for
    a command that computes its targets, every path it names (guard/shell.py)."""
    try:
        words = command_words(command, cwd)
    except ValueError as exc:
        return Decision(True, f"oracle-gate guard: the command cannot be read as shell words ({exc}); refused unjudged")
    if _gate_writer(words):
        return Decision(
            True,
            "oracle-gate guard: this runs one of the gate's own commands that write oracles/ or the guard's "
            f"files; those are a human's to run, in a change labelled {rules.label}",
        )
    if words.unjudged and (words.writes or words.scripted or words.indirect):
        return Decision(
            True, f"oracle-gate guard: {words.unjudged}; the guard cannot tell what it writes, so it refuses"
        )
    if words.git_refs:
        return Decision(
            True,
            "oracle-gate guard: the command moves a git ref by hand (update-ref, a fetch into a named "
            "ref, branch -f); the guard reads the policy of the base ref, so it refuses",
        )
    if words.unknown_cwd and words.writes:
        return Decision(
            True,
            "oracle-gate guard: the command changes to a folder it computes (`cd $X`, `cd -`) and "
            "then writes; the guard cannot tell where, so it refuses",
        )
    if words.git_config and rules.protecting(".git/config"):
        return Decision(
            True, _reason(".git/config", rules.protecting(".git/config") or "", "the command writes", rules)
        )
    for pairs, how, deep in (
        (words.written, "the command writes", True),
        (words.deep, "the command changes", True),
        (words.given, "the command passes to a program that may write", False),
        (
            words.named if words.computes_targets else [],
            "the command computes its targets (a loop, xargs, eval, an interpreter or $) and names",
            True,
        ),
        (_patched(words, rules), "the command applies a patch to", True),
        (_checked_out(words, rules), "the command checks out a revision that changes", False),
    ):
        decision = _paths(pairs, rules, how, deep=deep, origin=cwd)
        if decision.deny:
            return decision
    if words.patches and not _patched(words, rules):
        return Decision(
            True,
            "oracle-gate guard: the command applies a patch the guard cannot read (stdin, or a "
            "file that is not there); write the patch to a file first",
        )
    return Decision(False)


def _patched(words: Words, rules: Protection) -> list[tuple[str, str]]:
    """The (path, cwd) pairs the patches a command applies name (`Words.patches`, each a readable
    regular file of at most MAX_PATCH bytes): `diff --git`, `---`/`+++`, `rename from/to` and
    Codex's `*** ... File:` lines, as written and relative to the repository's root."""
    out: list[tuple[str, str]] = []
    for word, cwd in words.patches:
        path = word if os.path.isabs(word) else os.path.join(cwd, word)
        try:
            if not os.path.isfile(path) or os.path.getsize(path) > MAX_PATCH:
                continue
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        for found in _PATCH_LINE.findall(text):
            name = next(g for g in found if g).strip()
            name = name[2:] if name[:2] in ("a/", "b/") else name
            out.extend([(name, cwd), (name, rules.repo)])
    return out


def _checked_out(words: Words, rules: Protection) -> list[tuple[str, str]]:
    """The (path, root) pairs that differ between HEAD and each revision a `git checkout`, `reset`,
    `merge`, ... names (`Words.revisions`; a word that is not a commit is skipped)."""
    out: list[tuple[str, str]] = []
    for word, _cwd in words.revisions[:16]:
        try:
            commit = git(rules.repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{word}^{{commit}}")
            changed = _names(rules.repo, "HEAD", commit.decode().strip())
            # What the revision brings that the base tip has too is the base's, not a change's own.
            if rules.base:
                changed &= _names(rules.repo, rules.base, commit.decode().strip())
        except GitError:
            continue
        out.extend((name, rules.repo) for name in sorted(changed))
    return out


def _names(repo: str, a: str, b: str) -> set[str]:
    """The paths that differ between the commits `a` and `b`.

    Raises:
        GitError: when git cannot compare them.
    """
    raw = git(repo, "diff", "--name-only", "-z", "--no-renames", a, b)
    return {name.decode("utf-8", "surrogateescape") for name in raw.split(b"\0") if name}


def _gate_writer(words: Words) -> bool:
    """True when the command runs the gate (`tools.oracle_gate`, `//tools:oracle_gate`) with a
    command that writes (`--write`, `init`, `lock`, `guard install`, `hidden add`)."""
    named = [w for w, _ in words.named]
    return any(w.endswith("oracle_gate") for w in named) and bool(_GATE_WRITERS & set(named))


def _paths(
    pairs: list[tuple[str, str]], rules: Protection, how: str, *, deep: bool = False, origin: str = ""
) -> Decision:
    """Denies when a word of `pairs` ((word, cwd); cwd "" for the root) names a protected path of
    the repository (with `deep`, also a folder holding one: `Protection.protecting`), read from its
    own folder and from `origin` (the call's folder: a `cd` that failed, or ran in a subshell, moved
    nothing), or the user's git configuration (`~/.gitconfig`, `~/.config/git/config`)."""
    for word, cwd in pairs:
        if _user_git_config(word, cwd or rules.repo):
            return Decision(
                True,
                f"oracle-gate guard: {how} the user's git configuration ({word}), which can switch "
                "the pre-push hook off",
            )
        folders = dict.fromkeys([cwd or rules.repo, *([origin] if origin else [])])
        for rel in (r for folder in folders for r in repo_paths(word, folder, rules.repo)):
            glob = rules.protecting(rel, deep=deep)
            if glob is not None:
                return Decision(True, _reason(rel, glob, how, rules))
    return Decision(False)


def _user_git_config(word: str, cwd: str) -> bool:
    """True when `word` from `cwd` names the user's git configuration file."""
    if not word or "\0" in word:
        return False
    path = os.path.normpath(os.path.join(cwd, os.path.expanduser(word)))
    home = os.path.expanduser("~")
    return path in (os.path.join(home, ".gitconfig"), os.path.join(home, ".config", "git", "config"))


def repo_paths(word: str, cwd: str, repo: str) -> list[str]:
    """The repository-relative paths (`/`-separated, normalized) a word names from `cwd`: as
    written, and through every symbolic link on its way; [] for a word outside the repository
    (or starting with `~`, or empty). `repo` is a real path. Raises nothing."""
    if not word or word.startswith("~") or "\0" in word:
        return []
    lexical = os.path.normpath(word if os.path.isabs(word) else os.path.join(cwd, word))
    out = []
    for path in (lexical, os.path.realpath(lexical)):
        for root in (repo, os.path.realpath(repo)):
            rel = os.path.relpath(path, root)
            if rel != ".." and not rel.startswith("../") and rel not in out:
                out.append(rel)
    return out


def _reason(rel: str, glob: str, how: str, rules: Protection) -> str:
    """The denial's reason, as the agent and the user read it."""
    folder = os.path.isdir(os.path.join(rules.repo, rel)) and not os.path.islink(os.path.join(rules.repo, rel))
    what = (
        f"the folder {rel}, which holds files the glob {glob!r} protects"
        if folder
        else f"{rel}, which the glob {glob!r} protects"
    )
    return (
        f"oracle-gate guard: {how} {what} ({rules.source}). "
        f"Protected paths hold the human-owned claims and the gate; change production code or harness/ "
        f"instead, or ask a human to make this change in a pull request labelled {rules.label!r}."
    )


def _cwd(payload: Mapping[str, Any], hint: str) -> str:
    """The folder the tool call runs in: the payload's `cwd`, else its first workspace root, else `hint`."""
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd):
        return cwd
    roots = payload.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and os.path.isabs(roots[0]):
        return roots[0]
    return os.path.abspath(hint)


def _toplevel(folder: str) -> str | None:
    """The root of the work tree that holds `folder`, or None outside one."""
    try:
        return toplevel(folder)
    except GitError:
        return None


def render(decision: Decision, agent: str) -> str:
    """The hook's stdout for `decision`: the tool's JSON (module docstring), or "" for no objection
    where the tool reads empty output as that. Raises nothing."""
    if agent == "cursor":
        if decision.deny:
            return json.dumps({"permission": "deny", "userMessage": decision.reason, "agentMessage": decision.reason})
        return json.dumps({"permission": "allow"})
    if not decision.deny:
        return ""
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": decision.reason,
            }
        }
    )
