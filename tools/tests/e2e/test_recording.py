"""Recording and behaviour kept, end to end on a copy of this workspace: `record` observes the base
tip's committed `apply_rate` in the probe (a wrong copy in the work tree changes nothing it
records), refuses a branch off the base's history without --from, and with --write fills a new
`back_to_back` row's blob and pin; then a refactor that keeps every result passes the row with no
behaviour change reported, and the same refactor with round-half-up instead of half-to-even fails it
(exit 4) and shows the diff. It needs a nested Bazel: the probe is a sealed root with a Bazel server
of its own: a fresh one per recording and for the change's side of each check, and the base tip's
kept root (warm from the second check on); one workspace serves every case, in order.
"""

from __future__ import annotations

import json
from pathlib import Path

from tools.testing.workspace_copy import gate, git

KEPT_ROW = """schema = 1

[[invariant]]
id = "apply_rate_kept"
entry = "billing.tax:apply_rate"
kind = "back_to_back"
blob = "oracles/blobs/kept/apply_rate.json"
seed = 7

[invariant.generate]
count = 60
amount_cents = { int = [0, 2_000] }
rate = { choice = ["0.5", "0.01", "0.0825", "0.125"] }
"""
OLD = "    product = _CONTEXT.multiply(Decimal(cents), parse_rate(rate))\n"
REFACTOR = "    factor = parse_rate(rate)\n    product = _CONTEXT.multiply(Decimal(cents), factor)\n"


def test_record_reads_the_base_tip_and_refuses_a_branch_without_from(repo: Path):
    tax = repo / "billing" / "tax.py"
    committed = tax.read_text()
    tax.write_text(
        committed.replace("rounding=ROUND_HALF_EVEN", "rounding=ROUND_DOWN").replace("ROUND_HALF_EVEN,", "ROUND_DOWN,")
    )
    try:
        proc = gate(repo, "record", "tax_round_half_even", "--count", "5", "--base", "main")
    finally:
        tax.write_text(committed)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("  ")]
    assert any(line.split()[0] == "kept" for line in lines), proc.stdout
    assert not any(line.split()[0] == "changed" for line in lines), proc.stdout
    assert "nothing written" in proc.stdout

    git(repo, "checkout", "-q", "-b", "elsewhere")
    git(repo, "commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", "off the base")
    proc = gate(repo, "record", "tax_round_half_even", "--base", "main")
    assert proc.returncode == 1
    assert "is not on main's first-parent history" in proc.stderr
    proc = gate(repo, "record", "tax_round_half_even", "--base", "main", "--from", "elsewhere", "--count", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("record: recording from elsewhere (")
    git(repo, "checkout", "-q", "main")


def test_a_back_to_back_row_passes_a_refactor_and_fails_a_changed_result(repo: Path):
    (repo / "oracles" / "kept.toml").write_text(KEPT_ROW)
    proc = gate(repo, "record", "apply_rate_kept", "--count", "10", "--base", "main", "--write")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    samples = json.loads((repo / "oracles" / "blobs" / "kept" / "apply_rate.json").read_text())
    assert len(samples) >= 10 and all(set(s) == {"amount_cents", "rate"} for s in samples)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", "apply_rate keeps its behaviour")

    tax = repo / "billing" / "tax.py"
    committed = tax.read_text()
    assert OLD in committed
    git(repo, "checkout", "-q", "-b", "refactor")
    tax.write_text(committed.replace(OLD, REFACTOR))
    git(repo, "commit", "-q", "-am", "refactor", "--no-gpg-sign")
    proc = gate(repo, "check", "--base", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  ok    behaviour kept      1 row(s) return what the base tip returns" in proc.stdout
    assert "behaviour changed" not in proc.stdout

    git(repo, "checkout", "-q", "-b", "half-up", "main")
    changed = committed.replace(OLD, REFACTOR).replace("ROUND_HALF_EVEN", "ROUND_HALF_UP")
    tax.write_text(changed)
    git(repo, "commit", "-q", "-am", "round half up", "--no-gpg-sign")
    proc = gate(repo, "check", "--base", "main")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "[4] oracles/kept.toml apply_rate_kept: behaviour changed on " in proc.stdout
    assert "behaviour changed: billing.tax:apply_rate on " in proc.stdout
    git(repo, "checkout", "-q", "main")
