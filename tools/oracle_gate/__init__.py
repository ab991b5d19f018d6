"""oracle-gate: a merge gate that keeps human-owned oracles apart from agent-written harnesses.

Standard library only (docs/design.md section 1). Entry point: `python3 -m tools.oracle_gate` or
`bazel run //tools:oracle_gate --`.
"""

# The gate's version, the one place it is written; `oracle_gate --version` prints it.
__version__ = "0.4.0"
