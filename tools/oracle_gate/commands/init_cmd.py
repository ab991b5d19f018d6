"""`init [--package P...] [--dep LABEL...]`: adds the gate to an existing Bazel repository (init.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import exit_codes_help
from tools.oracle_gate.authoring.init import init
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "init"
DESCRIPTION = """\
Adds the gate to the Bazel repository (--repo, else the current one):
oracles/policy.toml, oracles/BUILD.bazel (one oracle test per oracle file),
oracles/example.toml.sample, the manifest, the oracle-gate dependency in
MODULE.bazel or WORKSPACE and a .bazelrc block. Writes only what is missing:
a second run changes nothing. Prints the next steps. Exits 0, or 1 when the
directory is not a Bazel repository or a file cannot be written."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `init` and its options."""
    parser = subparsers.add_parser(NAME, parents=parents, help="add the gate to an existing Bazel repository",
                                   description=DESCRIPTION, epilog=exit_codes_help(),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", action="append", default=[], metavar="P",
                        help="a production package the oracle rows may name (repeatable)")
    parser.add_argument("--dep", action="append", default=[], metavar="LABEL",
                        help="a production py_library the oracle tests load, e.g. //shop (repeatable)")


def run(args: argparse.Namespace, context: Context) -> int:
    """Runs `init` and prints what it did and what to do next; returns 0.

    Raises:
        UsageError: (exit 1) when the repository is not a Bazel repository (init.init).
        GateError: (exit 1) when a file cannot be written.
    """
    repo = context.repo()
    # This checkout: the dependency points at it (real path, also under `bazel run`).
    gate_root = str(Path(__file__).resolve().parents[3])
    result = init(repo, gate_root, args.package, args.dep)
    for rel in result.written:
        print(visible(f"init: wrote {rel}"))
    for rel in result.kept:
        print(visible(f"init: kept {rel} (already set up)"))
    if not result.written:
        print("init: nothing to do; the gate is set up")
    print("next steps:")
    print("  1. list your production packages in oracles/policy.toml and their py_library targets in oracles/BUILD.bazel")
    print("  2. write an oracle file from oracles/example.toml.sample and its blob, then run `pin --write`")
    print("  3. commit, and run `check --clean --base main` on each change (docs/ci.md)")
    return errors.OK
