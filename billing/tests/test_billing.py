"""Unit tests of the billing library (the oracles judge it too; these pin its error behaviour)."""

from __future__ import annotations

import pytest

from billing.errors import BillingError, InvalidRateError, NegativeAmountError, NotIntegerCentsError, RefundError
from billing.refunds import apply_refund, refunded_cents
from billing.tax import apply_rate
from billing.totals import grand_total_cents, subtotal_cents


@pytest.mark.parametrize(
    ("amount", "rate", "expected"),
    [
        (50, "0.01", 0),
        (150, "0.01", 2),
        (250, "0.01", 2),
        (1000, "0.0825", 82),
        (606, "0.0825", 50),
        (0, "0.5", 0),
    ],
)
def test_apply_rate_rounds_half_to_even(amount, rate, expected):
    assert apply_rate(amount, rate) == expected


@pytest.mark.parametrize("rate", [0.0825, 1, None, True])
def test_apply_rate_rejects_non_string_rates(rate):
    with pytest.raises(InvalidRateError):
        apply_rate(100, rate)


@pytest.mark.parametrize("rate", ["-0.1", "NaN", "Infinity", "1e-2", " 0.1", "0.", ".5", ""])
def test_apply_rate_rejects_malformed_rates(rate):
    with pytest.raises(InvalidRateError):
        apply_rate(100, rate)


@pytest.mark.parametrize(
    ("amount", "error"), [(-1, NegativeAmountError), (1.0, NotIntegerCentsError), (True, NotIntegerCentsError)]
)
def test_apply_rate_rejects_bad_amounts(amount, error):
    with pytest.raises(error):
        apply_rate(amount, "0.1")


def test_grand_total():
    lines = [{"quantity": 2, "unit_price_cents": 1999}, {"quantity": 1, "unit_price_cents": 500}]
    assert subtotal_cents(lines) == 4498
    assert grand_total_cents(lines, discount_cents=498, tax_rate="0.0825") == 4000 + 330
    assert grand_total_cents(lines, discount_cents=10**9, tax_rate="0.0825") == 0


@pytest.mark.parametrize(
    "line",
    [
        {"quantity": -1, "unit_price_cents": 1},
        {"quantity": 1, "unit_price_cents": -1},
        {"quantity": 1.5, "unit_price_cents": 1},
        {"quantity": 1},
        {"quantity": 1, "unit_price_cents": 1, "x": 0},
    ],
)
def test_grand_total_rejects_bad_lines(line):
    with pytest.raises(BillingError):
        grand_total_cents([line])


def test_grand_total_rejects_negative_discount():
    with pytest.raises(NegativeAmountError):
        grand_total_cents([], discount_cents=-1)


def test_refund_is_idempotent_and_pure():
    ledger = {"captured_cents": 1000, "refunds": {}}
    once = apply_refund(ledger, "r1", 300)
    assert ledger == {"captured_cents": 1000, "refunds": {}}
    assert apply_refund(once, "r1", 300) == once == {"captured_cents": 1000, "refunds": {"r1": 300}}
    assert refunded_cents(once) == 300


def test_refund_never_exceeds_capture():
    ledger = apply_refund({"captured_cents": 1000, "refunds": {}}, "r1", 600)
    with pytest.raises(RefundError, match="exceeds the 400 cents still refundable"):
        apply_refund(ledger, "r2", 401)
    assert apply_refund(ledger, "r2", 400)["refunds"] == {"r1": 600, "r2": 400}


def test_refund_id_reused_with_another_amount():
    ledger = apply_refund({"captured_cents": 1000, "refunds": {}}, "r1", 100)
    with pytest.raises(RefundError, match="cannot be reused for 200"):
        apply_refund(ledger, "r1", 200)


@pytest.mark.parametrize(
    ("ledger", "rid", "amount"),
    [
        ({"captured_cents": 10, "refunds": {}}, "", 1),
        ({"captured_cents": 10, "refunds": {}}, "r", 0),
        ({"captured_cents": 10}, "r", 1),
        ({"captured_cents": 10, "refunds": {"a": 11}}, "r", 1),
        ({"captured_cents": 10, "refunds": []}, "r", 1),
    ],
)
def test_refund_rejects_bad_input(ledger, rid, amount):
    with pytest.raises(BillingError):
        apply_refund(ledger, rid, amount)
