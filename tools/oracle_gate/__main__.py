"""Command-line entry point: `python3 -m tools.oracle_gate`."""

import os
import sys

# `check` must not write to the work tree, bytecode caches included.
sys.dont_write_bytecode = True

# `python3 -m` puts the current directory first on the path: run from a checkout the change wrote,
# a `textwrap.py` or `json/` at its root would shadow the standard library inside the gate. Every
# standard-library and installed module comes first; the folder holding `tools/` (this file's
# checkout, whatever the current directory) comes last, and no other current directory at all.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
_CWD = os.path.realpath(os.curdir)
sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p) not in (_ROOT, _CWD)] + [_ROOT]

from tools.oracle_gate.cli import main  # noqa: E402

raise SystemExit(main())
