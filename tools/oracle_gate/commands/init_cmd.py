"""`init [--package P...] [--dep LABEL...] [--requirements FILE] [--mode M] [--bazel N] [--gate-path P]`:
adds the gate to a repository (authoring/init.py)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tools.oracle_gate import errors
from tools.oracle_gate.authoring.init import DEBIAN_RULES, MODES, Setup, choose_mode, gate_path_for, init
from tools.oracle_gate.commands import Context, Parser
from tools.oracle_gate.errors import UsageError, exit_codes_help
from tools.oracle_gate.runs.bazel_binary import resolve
from tools.oracle_gate.text import visible

if TYPE_CHECKING:
    from tools.oracle_gate.commands import Subparsers

NAME = "init"
DESCRIPTION = """\
Adds the gate to the repository (--repo, else the current one): MODULE.bazel
or WORKSPACE when it has neither, the oracle-gate dependency in it (a path
relative to the repository), oracles/policy.toml, oracles/BUILD.bazel (one
oracle test per oracle file), oracles/example.toml.sample and the manifest,
and blocks in .bazelrc, .gitignore and .gitattributes (docs/ci.md, "What init
writes"). With --requirements, the hash-pinned requirements_lock.txt of the
production packages' third-party distributions, installed as @pypi; a
production package folder without a BUILD file gets a py_library that depends
on what its modules import. Writes only what is missing: a second run changes
no byte. Prints the next steps. Exits 0, or 1 for bad options, requirements
that cannot be locked, or a file it cannot write."""


def add_parser(subparsers: Subparsers, parents: Sequence[Parser]) -> None:
    """Adds `init` and its options."""
    parser = subparsers.add_parser(
        NAME,
        parents=parents,
        help="add the gate to an existing Bazel repository",
        description=DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_production_options(parser)
    _add_bazel_options(parser)


def _add_production_options(parser: Parser) -> None:
    """Adds what the production code is: --package, --dep, --requirements, --dist-name and --dist-version."""
    parser.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="P",
        help="a production package the oracle rows may name (repeatable)",
    )
    parser.add_argument(
        "--dep",
        action="append",
        default=[],
        metavar="LABEL",
        help="a production py_library the oracle tests load, e.g. //shop (repeatable)",
    )
    parser.add_argument(
        "--requirements",
        default=None,
        metavar="FILE",
        help="the production packages' third-party requirements (a requirements.in, or a lock with "
        "hashes; a file of the repository, a relative path read from its root): locked into "
        "requirements_lock.txt with pip's configured index and installed as "
        '@pypi (docs/adopting.md, "Third-party dependencies")',
    )
    parser.add_argument(
        "--dist-name",
        default=None,
        metavar="NAME",
        help="the distribution the production packages belong to, for importlib.metadata "
        '(default: pyproject.toml\'s project name; docs/adopting.md, "Package metadata")',
    )
    parser.add_argument(
        "--dist-version",
        default=None,
        metavar="V",
        help="its version (default: pyproject.toml's; 0.0.0 when it is computed at build time)",
    )


def _add_bazel_options(parser: Parser) -> None:
    """Adds how the Bazel files are written: --mode, --bazel and --gate-path."""
    parser.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="for a repository with neither MODULE.bazel nor WORKSPACE: which to write "
        "(default: bzlmod on Bazel 7 and later, else workspace)",
    )
    parser.add_argument(
        "--bazel",
        type=int,
        default=None,
        metavar="N",
        help="the major version of the Bazel that builds the repository, for its .bazelrc "
        "flags (default: what `bazel --version` says; Debian 12's 4.2.3 prints no version)",
    )
    parser.add_argument(
        "--gate-path",
        default=None,
        metavar="P",
        help="the oracle-gate checkout as the dependency names it, relative to the repository "
        "(default: this checkout's path relative to it)",
    )


def installed_bazel_major(environ: Mapping[str, str]) -> int:
    """The major version of the Bazel the gate would run (`bazel_binary.resolve`), from `bazel --version`:
    `bazel 7.7.1` is 7; Debian 12's bazel-bootstrap 4.2.3 prints `bazel no_version`, which counts as 4.

    Raises:
        UsageError: (exit 1) when there is no Bazel or it prints something else: pass --bazel.
    """
    try:
        proc = subprocess.run(
            [resolve(environ), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            env=dict(environ),
        )
    except (errors.GateError, OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(
            f"cannot tell which Bazel builds the repository ({exc}); pass --bazel 4 or --bazel 7"
        ) from None
    found = re.match(r"bazel (\d+)\.", proc.stdout.strip())
    if found:
        return int(found.group(1))
    if proc.stdout.strip() == "bazel no_version":
        return 4
    raise UsageError(f"`bazel --version` printed {proc.stdout.strip()[:80]!r}; pass --bazel 4 or --bazel 7")


def run(args: argparse.Namespace, context: Context) -> int:
    """Runs `init` and prints what it did and what to do next; returns 0.

    Raises:
        UsageError: (exit 1) for a bad option, or a Bazel whose version cannot be told (no --bazel).
        GateError: (exit 1) when a file cannot be written.
    """
    repo = context.repo()
    # This checkout: the dependency points at it (real path, also under `bazel run`).
    gate_root = str(Path(__file__).resolve().parents[3])
    major = args.bazel if args.bazel is not None else installed_bazel_major(os.environ)
    setup = Setup(
        choose_mode(repo, args.mode, major),
        major,
        gate_path_for(repo, gate_root, args.gate_path),
        os.path.isdir(DEBIAN_RULES),
    )
    result = init(
        repo,
        setup,
        args.package,
        args.dep,
        requirements=args.requirements,
        environ=context.environ,
        dist_name=args.dist_name,
        dist_version=args.dist_version,
    )
    for rel in result.written:
        print(visible(f"init: wrote {rel}"))
    for rel in result.kept:
        print(visible(f"init: kept {rel} (already set up)"))
    for note in result.notes:
        print(visible(f"init: note: {note}"))
    if not result.written:
        print("init: nothing to do; the gate is set up")
        return errors.OK
    print(visible(f"init: {setup.mode} mode for Bazel {setup.bazel_major}; oracle-gate at {setup.gate_path}"))
    print("next steps:")
    print(
        "  1. check each production package's py_library (init writes one, with its locked third-party deps, "
        "where a package folder has no BUILD file; docs/adopting.md, step 2)"
        + (
            ""
            if args.package
            else ", and name it in oracles/BUILD.bazel's deps and oracles/policy.toml's production_packages"
        )
    )
    print("  2. write an oracle file from oracles/example.toml.sample and its blob, then run `pin --write`")
    print(
        "  3. commit on a branch: the change that adds the gate adds protected files, so it needs the policy's "
        "label like any change to them (`check --base main --label oracle-change`); then run "
        "`check --clean --base main` on each change (docs/ci.md)"
    )
    return errors.OK
