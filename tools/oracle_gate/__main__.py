"""Command-line entry point: `python3 -m tools.oracle_gate`."""

import sys

# `check` must not write to the work tree, bytecode caches included.
sys.dont_write_bytecode = True

from tools.oracle_gate.cli import main  # noqa: E402

raise SystemExit(main())
