"""`guard install` and `guard hook`: the agent-side guard, from the same policy as the merge gate
(docs/design.md section 13; docs/adopting.md, "The agent-side guard")."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import GateError, UsageError
from tools.oracle_gate.guard.hook import AGENTS, Decision, decide, render
from tools.oracle_gate.guard.install import GATE_ROOT, install
from tools.oracle_gate.guard.rules import load_protection

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "guard"
DESCRIPTION = """\
The agent-side guard, from the base tip's oracles/policy.toml.

install: writes each coding agent's settings (Claude Code's .claude/settings.json:
a PreToolUse hook on Edit, Write, MultiEdit, NotebookEdit and Bash, and deny
rules; Codex's .codex/hooks.json; Cursor's .cursor/hooks.json and rule), the
instruction block of AGENTS.md, CLAUDE.md and .github/copilot-instructions.md,
and with --pre-push the clone's pre-push hook (check --head-only --quick).
A second run changes no byte; --check writes nothing and exits 1 when a file
would change.

hook: reads one tool call's JSON on stdin and prints the tool's decision:
a denial, with the reason, of any write to a protected path, of a payload it
does not understand, and of every write when the policy cannot be read."""
# The largest payload the hook reads (bytes); a larger one is denied unread.
MAX_PAYLOAD = 16 * 1024 * 1024


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `guard install` and `guard hook`."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="the agent-side guard: install its settings, or decide one tool call",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="guard_action", required=True, parser_class=Parser)
    add = actions.add_parser("install", parents=parents, help="write the agents' settings and instructions")
    add.add_argument("--base", help="the revision whose policy is in force (default: origin/main, else main)")
    add.add_argument("--pre-push", action="store_true", help="also write the clone's git pre-push hook")
    add.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    add.add_argument(
        "--gate-path",
        metavar="P",
        help="where the hooks find the gate (a folder holding tools/oracle_gate), as the repository "
        "reaches it: relative to the repository (default: this gate's folder, written relative to it)",
    )
    hook = actions.add_parser("hook", parents=parents, help="decide one tool call (JSON on stdin)")
    hook.add_argument("--agent", choices=AGENTS, default="claude", help="whose payload and decision (default: claude)")


def run(args: argparse.Namespace, context: Context) -> int:
    """Runs `guard install` or `guard hook`; returns the exit code.

    Raises:
        UsageError: (exit 1) from `install` (a settings file that is not a JSON object, a pre-push
            hook the guard did not write, a file it cannot write).
        PolicyUnreadable: (exit 1) when `install` cannot read the policy.
    """
    if args.guard_action == "hook":
        return _hook(args.agent)
    repo = context.repo()
    rules = load_protection(repo, args.base)
    gate_root = GATE_ROOT
    if args.gate_path is not None:
        gate_root = os.path.join(repo, args.gate_path)
        if not os.path.isfile(os.path.join(gate_root, "tools", "oracle_gate", "__init__.py")):
            raise UsageError(f"--gate-path {args.gate_path}: no tools/oracle_gate there, as seen from {repo}")
    found = install(repo, rules, rules.packages, pre_push=args.pre_push, check_only=args.check, gate_root=gate_root)
    if rules.source.startswith("the gate's default policy"):
        print(
            "note: there is no oracles/policy.toml at the base tip or in the work tree: the files hold the gate's "
            "default policy; run guard install again once the change that adds the gate is merged"
        )
    for item in found:
        word = ("would change" if args.check else "wrote") if item.changed else "unchanged"
        print(f"{word} {item.path}")
        if not item.protected:
            print(
                f"note: {item.path} is not protected by {rules.source}; add a glob for it to `protected` "
                "there (in a change labelled " + rules.label + "), or an agent can switch the guard off"
            )
    print(
        "note: Cursor has no hook that decides before a file edit: its edits meet the rule in "
        ".cursor/rules/oracle-gate.mdc and the gate in CI, not the hook (its shell commands meet the hook)"
    )
    if args.check and any(item.changed for item in found):
        raise UsageError("the guard's files are not what `guard install` writes from the policy; run it")
    return 0


def _hook(agent: str) -> int:
    """Decides the tool call on stdin and prints the decision; always exit 0 (the decision is in
    the JSON). Anything unexpected is a denial naming it."""
    try:
        raw = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
        if len(raw) > MAX_PAYLOAD:
            decision = Decision(
                True, f"oracle-gate guard: the payload is larger than {MAX_PAYLOAD} bytes; refused unread"
            )
        else:
            try:
                payload = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                decision = Decision(True, f"oracle-gate guard: the payload is not JSON ({type(exc).__name__}); refused")
            else:
                decision = decide(payload, agent, os.getcwd())
    except (GateError, OSError, Exception) as exc:  # noqa: BLE001 - never allow what was not judged
        decision = Decision(
            True, f"oracle-gate guard: it could not judge this call ({type(exc).__name__}: {exc}); refused"
        )
    out = render(decision, agent)
    if out:
        sys.stdout.write(out + "\n")
    return 0
