"""Bazel test: `oracles/MANIFEST.sha256` is current for the `oracles/` files in the runfiles.

On failure it prints the differing lines and the command that regenerates the manifest.
The manifest and its checkout rewrites: docs/design.md section 4.
"""

import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.dirname(os.path.realpath(__file__))]  # noqa: E401,E501,E702,I001 - see actions/__init__.py  # fmt: skip

import difflib
from collections.abc import Mapping, Sequence

from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.git.tree import WorkTree
from tools.oracle_gate.suite.loader import load_oracles
from tools.oracle_gate.suite.manifest import MANIFEST_PATH, REWRITE_FIX, checkout_rewrites, manifest_fix, render
from tools.oracle_gate.text import visible


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ) -> int:
    """Compares the committed manifest with one generated from the runfiles; returns 0, 1 or 5."""
    del argv
    root = os.path.join(environ.get("TEST_SRCDIR", "."), environ.get("TEST_WORKSPACE", "oracle_gate"))
    tree = WorkTree(root, follow_symlinks=True)
    try:
        expected = render(tree)
    except OracleError as exc:
        print(f"[{exc.code}] {exc}")
        return exc.code
    policy = load_oracles(tree).policy
    fix = manifest_fix(policy.label if policy else None)  # the label of the policy in the runfiles
    try:
        with open(os.path.join(root, MANIFEST_PATH), encoding="utf-8", errors="replace", newline="") as f:
            actual = f.read()
    except OSError as exc:
        print(f"[5] {MANIFEST_PATH}: cannot be read ({exc.strerror}); {fix}")
        return 5
    if actual == expected:
        print(f"{MANIFEST_PATH} is current")
        return 0
    sys.stdout.writelines(
        visible(line.rstrip("\n")) + "\n"
        for line in difflib.unified_diff(
            actual.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            f"{MANIFEST_PATH} (committed)",
            f"{MANIFEST_PATH} (generated)",
        )
    )
    rewritten = checkout_rewrites(tree)
    if rewritten:
        for line in rewritten:
            print(visible(f"[5] {line}: rewritten at checkout"))
        print(
            f"[5] {MANIFEST_PATH}: does not match the files because git rewrote {len(rewritten)} committed file(s) "
            f"at checkout; {REWRITE_FIX}"
        )
        return 5
    print(f"[5] {MANIFEST_PATH}: is stale; {fix}")
    return 5


if __name__ == "__main__":
    raise SystemExit(main())
