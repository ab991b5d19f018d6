"""Command-line entry point: `python3 -m tools.oracle_gate`."""

from tools.oracle_gate.cli import main

raise SystemExit(main())
