"""Test support: the probe (tools/oracle_gate/runs/probe.py) without Bazel or a sealed root.

`local_probe` writes the commit's tree with the probe's `oracles/` exactly as the probe does
(`write_probe_tree`), builds the inputs view of its oracle files as the pin check does, and runs
the gate's supervisor and caller (`actions/observe.py`) with only the production packages' folder on
the Python path; it returns the replies as the probe reads them from bazel-bin.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tools.oracle_gate.actions as actions_pkg
from tools.oracle_gate.runs.probe import write_probe_tree
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import is_oracle_path, parse_oracle
from tools.oracle_gate.spec.views import generated_view, split

ACTIONS_DIR = Path(actions_pkg.__file__).parent


def local_probe(
    repo: str,
    commit: str,
    files: Mapping[str, bytes],
    environ: Mapping[str, str],
    side: str = "",
    *,
    extra: Mapping[str, bytes] | None = None,
) -> dict[str, Any]:
    """The replies of the probe's rows on `commit` (see the module docstring); `environ` and
    `side` (the behaviour phase's "base" or "judged") unused."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        write_probe_tree(repo, commit, files, extra or {}, str(tree))
        pairs = []
        for path, data in sorted(files.items()):
            if is_oracle_path(path):
                oracle = parse_oracle(data, path)
                assert not oracle.problems, [str(p) for p in oracle.problems]
                pairs += [(inv, load_samples(files[inv.blob])) for inv in oracle.invariants]
        inputs, _ = split(pairs)
        generated, problems = generated_view({p: d for p, d in files.items() if is_oracle_path(p)}, "")
        assert not problems
        views = Path(scratch) / "views"
        views.mkdir()
        (views / "inputs.json").write_text(json.dumps(inputs))
        (views / "generated.json").write_text(json.dumps(generated))
        out = views / "observations.json"
        proc = subprocess.run(
            [sys.executable, "-S", str(ACTIONS_DIR / "observe.py"), "--inputs", str(views / "inputs.json")]
            + ["--generated", str(views / "generated.json"), "--out", str(out), "--log", str(views / "log")],
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            cwd=scratch,
        )
        assert proc.returncode == 0, proc.stderr
        rows = json.loads(out.read_text())["rows"]
        return {row["id"]: row for row in rows}
