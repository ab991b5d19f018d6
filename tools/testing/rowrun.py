"""Test support: runs oracle rows through the real row runner (supervisor, caller, judge), no Bazel.

`run_rows` writes a production package into a temporary directory, builds the inputs and
expectations views exactly as the pin-check action does, runs `actions/observe.py` in a subprocess
whose Python path holds only that package (as the `OracleCall` action does), then judges the
observations with `spec/judgement.py`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tools.oracle_gate.actions as actions_pkg
from tools.oracle_gate.authoring.reference_local import run_references
from tools.oracle_gate.spec import judgement
from tools.oracle_gate.spec.samples import load_samples
from tools.oracle_gate.spec.schema import parse_oracle
from tools.oracle_gate.spec.views import generated_view, split
from tools.testing.gitrepo import oracle_toml

ACTIONS_DIR = Path(actions_pkg.__file__).parent


@dataclass
class RowRun:
    """What one run of the row runner produced."""

    judged: dict[str, judgement.Judgement]
    notes: list[str]
    log: str
    observations: dict[str, Any]
    salt: str


def write_package(root: Path, modules: dict[str, str]) -> None:
    """Writes `{"pkg/mod.py": source}` files under `root` (sources are dedented)."""
    for rel, source in modules.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


def run_tree(tree: Path, tmp: Path, package: str, salt: str = "") -> dict[str, judgement.Judgement]:
    """Runs every row of a checked-out tree's `oracles/*.toml` on the tree's own production code,
    through the real caller and judge (no Bazel): what the oracle test of that tree would report.

    Args:
        tree: a tree with `oracles/` and the production package at its root.
        tmp: a scratch directory (its `prod/` and views are replaced).
        package: the production package's folder name, copied alone onto the caller's Python path.
        salt: the run salt for generated samples.
    """
    tomls = {
        f"oracles/{p.name}": p.read_bytes()
        for p in sorted((tree / "oracles").glob("*.toml"))
        if p.name != "policy.toml"
    }
    prod = tmp / "prod"
    shutil.rmtree(prod, ignore_errors=True)
    shutil.copytree(tree / package, prod / package)
    return _observe_and_judge(
        tmp, prod, tomls, lambda inv: (tree / inv.blob).read_bytes(), salt, reference_root=tree
    ).judged


def run_rows(
    tmp: Path,
    rows: list[dict[str, Any]],
    blobs: dict[str, list[Any]],
    modules: dict[str, str],
    salt: str = "",
    env: dict[str, str] | None = None,
    wrap: list[str] | None = None,
    packages: list[str] | None = None,
    references: dict[str, str] | None = None,
) -> RowRun:
    """Runs `rows` (oracle row dicts, without blob_sha256) on the package `modules`.

    Args:
        tmp: a scratch directory.
        rows: oracle rows; `blob_sha256` is filled in.
        blobs: blob path -> samples.
        modules: production sources, e.g. {"shop/__init__.py": "", "shop/calc.py": "..."}.
        salt: the run salt for generated samples.
        env: extra environment variables of the caller (e.g. TZ).
        wrap: a command the supervisor runs under (e.g. `unshare --user --map-root-user`, where
            the process limit holds as in a sandboxed action).
        packages: the policy's production packages, for the inputs view (as the pin check gives
            them); None writes a view without them, as a pin check without a policy does.
        references: reference sources, e.g. {"oracles/reference/ref.py": "..."}, written to a folder
            of their own: the reference process's only Python path entry.

    Raises:
        ReferenceBroken: when a row's reference is broken.
    """
    prod = tmp / "prod"
    write_package(prod, modules)
    reference_root = tmp / "refroot"
    write_package(reference_root, {"oracles/reference/__init__.py": "", **(references or {})})
    toml = oracle_toml([dict(row, blob_sha256="0" * 64) for row in rows]).encode()
    return _observe_and_judge(
        tmp,
        prod,
        {"oracles/shop.toml": toml},
        lambda inv: json.dumps(blobs[inv.blob]).encode(),
        salt,
        env,
        wrap,
        packages,
        reference_root,
    )


class ReferenceBroken(AssertionError):
    """A row's reference could not give its expected values (the check exits 5); args[0] holds
    the problems' lines."""


def _observe_and_judge(
    tmp: Path,
    prod: Path,
    tomls: dict[str, bytes],
    blob: Callable[[Any], bytes],
    salt: str,
    env: dict[str, str] | None = None,
    wrap: list[str] | None = None,
    packages: list[str] | None = None,
    reference_root: Path | None = None,
) -> RowRun:
    """Builds the views of the oracle files `tomls` (path -> bytes; `blob(row)` gives a row's blob
    bytes) in `tmp/views`, runs `actions/observe.py` with only `prod` on its Python path, and judges."""
    pairs = []
    for path, data in tomls.items():
        oracle = parse_oracle(data, path)
        assert not oracle.problems, [str(p) for p in oracle.problems]
        pairs += [(inv, load_samples(blob(inv))) for inv in oracle.invariants]
    inputs, expectations = split(pairs, packages)
    generated, problems = generated_view(tomls, salt)
    assert not problems
    views = tmp / "views"
    views.mkdir(exist_ok=True)
    for name, doc in (("inputs", inputs), ("generated", generated), ("expectations", expectations)):
        (views / f"{name}.json").write_text(json.dumps(doc))
    out, log = views / "observations.json", views / "caller.log"
    caller_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(prod), **(env or {})}
    proc = subprocess.run(
        [
            *(wrap or []),
            sys.executable,
            "-S",
            str(ACTIONS_DIR / "observe.py"),
            "--inputs",
            str(views / "inputs.json"),
            "--generated",
            str(views / "generated.json"),
            "--out",
            str(out),
            "--log",
            str(log),
        ],
        env=caller_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr
    observations = json.loads(out.read_text())
    reference, problems = run_references(tmp / "reference", reference_root or prod, pairs, generated)
    if problems:
        raise ReferenceBroken([str(p) for p in problems])
    judged, salt_seen, notes = judgement.judge_all(expectations, load_samples(out.read_bytes()), reference, generated)
    assert salt_seen == salt
    return RowRun({j.id: j for j in judged}, notes, log.read_text(errors="replace"), observations, salt_seen)


# Rows and blobs shared by the row-runner tests: one per kind, on the package `shop.calc`.
TABLE = [{"id": "add_table", "entry": "shop.calc:add", "kind": "exact_table", "blob": "oracles/blobs/t.json"}]
TABLE_BLOB = {"oracles/blobs/t.json": [{"args": [1, 2], "expected": 3}, {"args": [2, 2], "expected": 4}]}
BOUND = [
    {
        "id": "sum_in_range",
        "entry": "shop.calc:total",
        "kind": "bound",
        "min": 0,
        "max": 10,
        "blob": "oracles/blobs/b.json",
    }
]
BOUND_BLOB = {"oracles/blobs/b.json": [{"a": 1, "b": 2}]}
IDEM = [
    {
        "id": "norm_is_idempotent",
        "entry": "shop.calc:norm",
        "kind": "idempotent",
        "args": ["k"],
        "repeat": 3,
        "blob": "oracles/blobs/i.json",
    }
]
IDEM_BLOB = {"oracles/blobs/i.json": [{"state": {"n": 1}, "k": "x"}]}


def calc(body: str) -> dict[str, str]:
    """The production package `shop` with `body` as `shop/calc.py`."""
    return {"shop/__init__.py": "", "shop/calc.py": body}
