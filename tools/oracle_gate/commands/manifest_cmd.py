"""`manifest --write|--check`: regenerate or verify `oracles/MANIFEST.sha256` in the work tree."""

from __future__ import annotations

import argparse
import os
import sys

from tools.oracle_gate import errors
from tools.oracle_gate.manifest import MANIFEST_PATH, manifest_problems, render
from tools.oracle_gate.tree import WorkTree


def run(args: argparse.Namespace, repo: str) -> int:
    """Writes (`--write`) or verifies (`--check`) the manifest of the work tree at `repo`.

    Returns:
        0 when written or current, 5 when stale or when an oracle file is invalid.
    """
    tree = WorkTree(repo)
    if args.write:
        text = render(tree)
        target = os.path.join(repo, MANIFEST_PATH)
        tmp = target + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        print(f"wrote {MANIFEST_PATH} ({text.count(chr(10))} lines)")
        return errors.OK
    problems = manifest_problems(tree)
    for problem in problems:
        print(f"[{problem.code}] {problem}", file=sys.stderr)
    if problems:
        return errors.INVALID_ORACLE
    print(f"{MANIFEST_PATH} is current")
    return errors.OK
