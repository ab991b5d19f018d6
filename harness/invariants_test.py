"""One pytest case per invariant, named `test_invariant[<id>]` (the gate reads that suffix)."""

from __future__ import annotations

import os

import pytest

from harness.adapter import load_invariants, run_invariant

INVARIANTS = load_invariants(os.environ["ORACLE_INDEX"])


@pytest.mark.parametrize("inv", INVARIANTS, ids=[inv.id for inv in INVARIANTS])
def test_invariant(inv):
    failures = run_invariant(inv)
    assert not failures, f"{inv.id} ({inv.kind}, {inv.entry}) does not hold:\n" + "\n".join(failures)
