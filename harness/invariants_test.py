"""One pytest case per invariant, named `test_invariant[<id>]` (the gate reads that suffix).

The row's entry and blob are loaded in a fixture, so a missing runfile or an unimportable entry is
an *error* outcome for that id, never a skip.
"""

from __future__ import annotations

import os

import pytest

from harness.adapter import load_blob, load_invariants, resolve_entry, run_samples

# Sorted by id, so the case order and names are the same on every run and every runner.
INVARIANTS = load_invariants(os.environ["ORACLE_INDEX"])


@pytest.fixture
def loaded(request):
    inv = request.param
    return inv, resolve_entry(inv), load_blob(inv)


@pytest.mark.parametrize("loaded", INVARIANTS, ids=[inv.id for inv in INVARIANTS], indirect=True)
def test_invariant(loaded):
    inv, fn, samples = loaded
    failures = run_samples(inv, fn, samples)
    assert not failures, f"{inv.id} ({inv.kind}, {inv.entry}) does not hold:\n" + "\n".join(failures)
