"""Extra worked examples of the billing library, beside the oracles (which the gate runs itself)."""

from __future__ import annotations

import pytest

from billing.refunds import apply_refund
from billing.tax import apply_rate
from billing.totals import grand_total_cents


@pytest.mark.parametrize(("amount", "rate", "expected"), [(25, "0.1", 2), (35, "0.1", 4), (1999, "0.0825", 165)])
def test_tax_examples(amount, rate, expected):
    assert apply_rate(amount, rate) == expected


def test_a_cart_with_a_discount():
    lines = [{"quantity": 3, "unit_price_cents": 250}]
    assert grand_total_cents(lines, discount_cents=50, tax_rate="0.1") == 770


def test_retrying_a_refund_changes_nothing():
    ledger = {"captured_cents": 1000, "refunds": {}}
    once = apply_refund(ledger, "r1", 400)
    assert apply_refund(once, "r1", 400) == once
