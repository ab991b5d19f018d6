"""The harness procedure: load oracle rows through runfiles, call each entry, hand results to the gate.

What counts as a pass is decided by `tools.oracle_gate.verdicts` (protected code); this module only
finds the files, calls the production functions and collects what they return.
"""

from __future__ import annotations

import importlib
import json
import os
import random
from collections.abc import Callable, Mapping
from typing import Any

from runfiles import runfiles

from tools.oracle_gate import verdicts
from tools.oracle_gate.samples import check_shape, load_samples
from tools.oracle_gate.schema import Invariant, parse_oracle


class HarnessError(Exception):
    """A row cannot be run: missing runfile, unloadable oracle, unimportable entry."""


def _runfiles() -> Any:
    found = runfiles.Create()
    if found is None:
        raise HarnessError("no runfiles: run the harness with `bazel test //harness/...`")
    return found


def rlocation(repo_path: str) -> str:
    """Returns the path of a workspace file in the runfiles.

    Raises:
        HarnessError: when the runfiles do not hold it (a missing runfile is never skipped).
    """
    workspace = os.environ.get("TEST_WORKSPACE", "oracle_gate")
    path = _runfiles().Rlocation(f"{workspace}/{repo_path}")
    if path is None or not os.path.isfile(path):
        raise HarnessError(f"{repo_path} is not in the runfiles; add it to the test's data")
    return path


def load_invariants(index_path: str) -> list[Invariant]:
    """Loads every row of every oracle file the verified index lists, in a stable order (by id).

    Args:
        index_path: runfiles-relative path of the `oracle_suite` index (e.g. `oracles/oracles.index.json`).

    Raises:
        HarnessError: when a file is missing or an oracle file is invalid.
    """
    with open(rlocation(index_path), encoding="utf-8") as f:
        index = json.load(f)
    rows: list[Invariant] = []
    for oracle_path in index["oracles"]:
        with open(rlocation(oracle_path), "rb") as f:
            oracle = parse_oracle(f.read(), oracle_path)
        if oracle.problems:
            raise HarnessError(str(oracle.problems[0]))
        rows.extend(oracle.invariants)
    return sorted(rows, key=lambda inv: inv.id)


def resolve_entry(inv: Invariant) -> Callable[..., Any]:
    """Imports `package.module` and returns `function` of the row's entry."""
    try:
        module = importlib.import_module(inv.module)
        fn = getattr(module, inv.function)
    except (ImportError, AttributeError) as exc:
        raise HarnessError(f"{inv.id}: cannot load entry {inv.entry}: {exc}") from None
    if not callable(fn):
        raise HarnessError(f"{inv.id}: entry {inv.entry} is not callable")
    return fn


def load_blob(inv: Invariant) -> list[Mapping[str, Any]]:
    """Reads and parses the row's blob from the runfiles."""
    with open(rlocation(inv.blob), "rb") as f:
        samples = load_samples(f.read())
    check_shape(inv, samples)
    return samples


def run_invariant(inv: Invariant) -> list[str]:
    """Loads the row's entry and blob, then runs every sample; see `run_samples`."""
    return run_samples(inv, resolve_entry(inv), load_blob(inv))


def run_samples(inv: Invariant, fn: Callable[..., Any], samples: list[Mapping[str, Any]]) -> list[str]:
    """Runs every sample of one row; returns one failure reason per failing sample (empty: holds).

    The row's `seed` (0 when absent) seeds Python's `random` before the first sample, so a row
    that draws random numbers gives the same outcome on every runner.
    """
    random.seed(inv.seed if inv.seed is not None else 0)
    failures = []
    for number, sample in enumerate(samples):
        try:
            verdict = _judge(inv, fn, sample)
        except Exception as exc:  # the production code raising is a failed sample, not a crash
            verdict = verdicts.Verdict(False, f"raised {type(exc).__name__}: {exc}")
        if not verdict.ok:
            failures.append(f"sample {number}: {verdict.reason}")
    return failures


def _judge(inv: Invariant, fn: Callable[..., Any], sample: Mapping[str, Any]) -> verdicts.Verdict:
    if inv.kind == "bound":
        assert inv.min is not None and inv.max is not None
        return verdicts.judge_bound(fn(**sample), inv.min, inv.max)
    if inv.kind == "idempotent":
        assert inv.repeat is not None
        kwargs = {name: sample[name] for name in inv.args}
        state = sample["state"]
        states = []
        for _ in range(inv.repeat):
            state = fn(state, **kwargs)
            states.append(state)
        return verdicts.judge_idempotent(states)
    if inv.kind == "exact_table":
        return verdicts.judge_exact(fn(*sample["args"]), sample["expected"])
    return verdicts.Verdict(False, f"unknown kind {inv.kind!r}")
