"""The reference implementations run outside Bazel, for the authoring tools (`vacuity`) and tests:
the same supervisor and caller as the `OracleReference` action (`actions/observe.py`), in a process
whose Python path holds only the folder with `oracles/reference/`, and the same check of the
results (`actions/reference_check.py`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tools.oracle_gate.actions as actions_pkg
from tools.oracle_gate.actions.reference_check import reference_document
from tools.oracle_gate.errors import OracleError
from tools.oracle_gate.spec.schema import Invariant
from tools.oracle_gate.spec.views import reference_view

# Seconds the supervisor may take beyond the rows' own time limits.
SLACK_S = 30.0


def run_references(
    work: Path, root: Path, rows: Sequence[tuple[Invariant, Sequence[Mapping[str, Any]]]], generated: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, list[OracleError]]:
    """Runs the references of `rows` and returns (the reference view, problems).

    Args:
        work: a scratch folder this call writes its files into.
        root: the folder holding `oracles/reference/` (a work tree, or a copy of only that folder):
            the reference process's only Python path entry.
        rows: (row, its parsed blob samples) pairs; rows without a `reference` are left out.
        generated: the generated view of the same salt (`views.generated_view`).

    Returns:
        (None, []) when no row has a reference; else the view `judgement.judge_all` takes and one
        OracleError (exit 5) per broken reference. A supervisor that fails is one problem per row.
    """
    view = reference_view(rows)
    if not view["rows"]:
        return None, []
    work.mkdir(parents=True, exist_ok=True)
    inputs_path, generated_path = work / "reference_inputs.json", work / "reference_generated.json"
    out, log = work / "reference_observations.json", work / "reference.log"
    inputs_path.write_text(json.dumps(view), encoding="utf-8")
    generated_path.write_text(json.dumps(generated), encoding="utf-8")
    out.unlink(missing_ok=True)
    timeout = sum(float(row["timeout_s"]) for row in view["rows"]) + SLACK_S
    try:
        subprocess.run(
            [
                sys.executable,
                "-S",
                "-B",
                str(Path(actions_pkg.__file__).parent / "observe.py"),
                "--inputs",
                str(inputs_path),
                "--generated",
                str(generated_path),
                "--out",
                str(out),
                "--log",
                str(log),
            ],
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "TZ": "UTC0"},
            capture_output=True,
            check=False,
            timeout=timeout,
            cwd=work,
        )
        observations = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return None, [
            OracleError(
                f"the reference {row['entry']} could not be run: {exc}",
                path=row["source"],
                row=row["id"],
                field="reference",
            )
            for row in view["rows"]
        ]
    return reference_document(view, generated, observations)
