"""What `guard install` writes (docs/adopting.md, "The agent-side guard"): the hook commands of each
agent's settings, the deny rules, the instruction block and the pre-push hook."""

from __future__ import annotations

import shlex

# The markers around the instruction block in AGENTS.md, CLAUDE.md and
# .github/copilot-instructions.md; what lies between them is the guard's, the rest the file owner's.
BEGIN = "<!-- oracle-gate guard: begin (written by `guard install`; change oracles/policy.toml, then run it again) -->"
END = "<!-- oracle-gate guard: end -->"
# The first line after the shebang of the pre-push hook the guard writes; a hook without it is not the guard's.
PRE_PUSH_MARK = "# oracle-gate guard: the gate's quick check before a push (written by `guard install --pre-push`)."
# Claude Code's tools that write files or run commands (its PreToolUse matcher).
CLAUDE_MATCHER = "Edit|Write|MultiEdit|NotebookEdit|Bash"
# Codex's: its shell tool and apply_patch, which carries every file edit.
CODEX_MATCHER = "Bash|shell|apply_patch|Edit|Write"
# Seconds an agent waits for the hook (it reads the policy with git; well under a second).
HOOK_TIMEOUT = 30


def gate_python(gate_rel: str) -> str:
    """The command that runs the gate from the repository's root: its package found at `gate_rel`
    (relative to the root, `.` when the gate is in the repository), with the working folder kept
    out of the import path (`-P`: a `tools/` the change writes cannot stand in for the gate)."""
    return f"PYTHONPATH={shlex.quote(gate_rel)} python3 -P -B -s -m tools.oracle_gate"


def hook_command(agent: str, gate_rel: str) -> str:
    """The shell command an agent's settings run for `guard hook --agent AGENT`: from the
    repository's root (Claude Code's `$CLAUDE_PROJECT_DIR`, else git's top level); if the hook
    cannot run at all, exit 2, which the tools read as a refusal, never as an allowance."""
    root = '"$CLAUDE_PROJECT_DIR"' if agent == "claude" else '"$(git rev-parse --show-toplevel)"'
    return (
        f"cd {root} && {gate_python(gate_rel)} guard hook --agent {agent} || "
        '{ echo "oracle-gate guard: the hook could not run (it needs python3 3.11 or later and the gate at '
        f'{gate_rel}); refused" >&2; exit 2; }}'
    )


def deny_rules(globs: tuple[str, ...]) -> list[str]:
    """Claude Code `permissions.deny` rules for the globs: `Edit(/GLOB)` (anchored at the project
    root; an Edit rule also covers Write and NotebookEdit)."""
    return [f"Edit(/{glob})" for glob in globs]


def instructions(globs: tuple[str, ...], label: str, packages: tuple[str, ...], gate_rel: str) -> str:
    """The instruction block (with its markers) for AGENTS.md, CLAUDE.md, Copilot's instructions and
    the Cursor rule."""
    protected = "\n".join(f"  - `{glob}`" for glob in globs)
    production = ", ".join(f"`{p}/`" for p in packages) or "the production packages"
    command = f"{gate_python(gate_rel)} check --head-only --quick --format json"
    return f"""{BEGIN}
## oracle-gate: what a change may touch

Humans own the claims this repository's code is judged by; a merge gate checks every change
against them.

- **You may change** every path the globs below do not match: the production code
  ({production}, its `.py` files), its tests, the documentation, and `harness/` where the
  repository has one.
- **You may not change** these paths (the globs every policy protects and the `protected` list of
  `oracles/policy.toml`):
{protected}
  A change to them needs a human: the label `{label}` on the pull request. Do not work around
  it (no copies, links or scripts that write them); ask. The guard hook refuses these writes.
- **Before you push**, run from the repository's root:

      {command}

  It runs the commit checks and the oracle rows your change reached, in the work tree, in a
  few seconds when warm. Exit 0: they hold. Exit 2: a protected path changed. Exit 4: a claim
  failed; its `violations` name the row and the sample. Fix the production code, never the
  claim. CI runs the whole gate (`check --clean`) on the merge result and has the last word.
{END}
"""


def cursor_rule(block: str) -> str:
    """The Cursor project rule `.cursor/rules/oracle-gate.mdc`: always applied, holding the block."""
    return f"""---
description: oracle-gate, the paths a change may touch and the local check
alwaysApply: true
---
{block}"""


def pre_push(gate_rel: str) -> str:
    """The git `pre-push` hook: the quick check of HEAD, when what is pushed is HEAD and the work
    tree holds HEAD (git gives the pushed refs on stdin: `<local ref> <local sha> <remote ref>
    <remote sha>`, githooks(5)); exit non-zero stops the push."""
    return f"""#!/bin/sh
{PRE_PUSH_MARK}
# It checks HEAD as committed, so it refuses a push of another commit and a work tree that differs
# from HEAD. A labelled change (protected paths a human approved) fails it: push that with
# `git push --no-verify`; the merge gate in CI runs either way.
cd "$(git rev-parse --show-toplevel)" || exit 1
head="$(git rev-parse HEAD)" || exit 1
while read -r local_ref local_sha remote_ref remote_sha; do
  case "$local_sha" in
    *[!0]*) ;;
    *) continue ;;  # a deletion pushes no commit
  esac
  if [ "$local_sha" != "$head" ]; then
    echo "oracle-gate pre-push: $local_ref is not HEAD; check it out and push again (or git push --no-verify)" >&2
    exit 1
  fi
done
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "oracle-gate pre-push: the work tree differs from HEAD, and the push sends HEAD; commit or stash first" >&2
  exit 1
fi
{gate_python(gate_rel)} check --head-only --quick
"""
