"""The adapter hands production results to the gate's verdicts and never lets a lie through."""

from __future__ import annotations

import os

import pytest

from harness.adapter import HarnessError, load_invariants, rlocation, run_samples
from tools.oracle_gate.schema import Invariant


class AlwaysYes:
    def __eq__(self, other):
        return True

    def __le__(self, other):
        return True

    __ge__ = __lt__ = __gt__ = __le__
    __hash__ = object.__hash__


def row(kind: str, **extra) -> Invariant:
    return Invariant(id="x", entry="billing.tax:apply_rate", kind=kind, blob="oracles/blobs/x.json",
                     blob_sha256="0" * 64, source="oracles/x.toml", **extra)


CASES = [
    (row("bound", min=0, max=10), [{"a": 1}]),
    (row("idempotent", args=("k",), repeat=3), [{"state": {"n": 1}, "k": 1}]),
    (row("exact_table"), [{"args": [1], "expected": 1}]),
]


@pytest.mark.parametrize(("inv", "samples"), CASES, ids=[f"kind-{c[0].kind}" for c in CASES])
def test_an_object_that_claims_everything_fails_every_kind(inv, samples):
    failures = run_samples(inv, lambda *a, **k: AlwaysYes(), samples)
    assert failures and ("not a plain JSON-typed value" in failures[0] or "got AlwaysYes" in failures[0]), failures


@pytest.mark.parametrize(("inv", "samples"), CASES, ids=[f"kind-{c[0].kind}" for c in CASES])
def test_honest_results_pass_every_kind(inv, samples):
    def fn(*args, **kwargs):
        if inv.kind == "idempotent":
            return {"n": 1}
        return 1

    assert run_samples(inv, fn, samples) == []


def test_a_raising_entry_is_a_failed_sample():
    inv, samples = CASES[2]

    def fn(*_):
        raise ValueError("nope")

    assert run_samples(inv, fn, samples) == ["sample 0: raised ValueError: nope"]


def test_the_seed_is_applied_before_the_samples():
    import random

    seen = []
    inv = row("exact_table", seed=42)
    run_samples(inv, lambda: seen.append(random.random()) or 1, [{"args": [], "expected": 1}])
    random.seed(42)
    assert seen == [random.random()]


def test_a_missing_runfile_raises_instead_of_skipping():
    with pytest.raises(HarnessError, match="oracles/blobs/does_not_exist.json is not in the runfiles"):
        rlocation("oracles/blobs/does_not_exist.json")


def test_rows_come_in_a_stable_order():
    ids = [inv.id for inv in load_invariants(os.environ["ORACLE_INDEX"])]
    assert ids == sorted(ids) and len(ids) == len(set(ids)) >= 3
