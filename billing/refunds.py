"""Idempotent refunds against a ledger of captured money."""

from __future__ import annotations

import re
from collections.abc import Mapping

from billing.errors import RefundError
from billing.money import require_cents

_REFUND_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


def _read_ledger(ledger: object) -> tuple[int, dict[str, int]]:
    if not isinstance(ledger, Mapping) or set(ledger) != {"captured_cents", "refunds"}:
        raise RefundError("ledger must have exactly captured_cents and refunds")
    captured = require_cents(ledger["captured_cents"], "captured_cents")
    refunds = ledger["refunds"]
    if not isinstance(refunds, Mapping):
        raise RefundError("ledger refunds must map refund id to cents")
    out: dict[str, int] = {}
    for key, value in refunds.items():
        if type(key) is not str:
            raise RefundError("ledger refund ids must be strings")
        out[key] = require_cents(value, f"refund {key}")
    if sum(out.values()) > captured:
        raise RefundError("ledger already refunds more than was captured")
    return captured, out


def refunded_cents(ledger: Mapping[str, object]) -> int:
    """Returns the total refunded so far in a ledger, in cents."""
    return sum(_read_ledger(ledger)[1].values())


def apply_refund(ledger: Mapping[str, object], refund_id: str, amount_cents: int) -> dict[str, object]:
    """Returns a new ledger with the refund applied; the input ledger is not modified.

    A ledger is `{"captured_cents": int, "refunds": {refund_id: cents}}`. Applying a refund whose id
    the ledger already holds with the same amount returns an equal ledger (idempotent), so a retried
    request never refunds twice.

    Args:
        ledger: the current ledger.
        refund_id: caller-chosen idempotency key, 1-128 characters of [A-Za-z0-9_.:-].
        amount_cents: int > 0, cents.

    Raises:
        RefundError: malformed ledger or id, a zero amount, the id reused with a different amount,
            or a refund that would exceed the captured amount.
        NotIntegerCentsError, NegativeAmountError: amount is not a non-negative int.
    """
    captured, refunds = _read_ledger(ledger)
    if type(refund_id) is not str or not _REFUND_ID.fullmatch(refund_id):
        raise RefundError("refund_id must be 1-128 characters of letters, digits and _.:-")
    amount = require_cents(amount_cents, "amount_cents")
    if amount == 0:
        raise RefundError("amount_cents must be positive")
    if refund_id in refunds:
        if refunds[refund_id] != amount:
            raise RefundError(
                f"refund {refund_id} was applied with {refunds[refund_id]} cents; it cannot be reused for {amount}"
            )
        return {"captured_cents": captured, "refunds": dict(refunds)}
    if sum(refunds.values()) + amount > captured:
        raise RefundError(
            f"refund of {amount} cents exceeds the {captured - sum(refunds.values())} cents still refundable"
        )
    new_refunds = dict(refunds)
    new_refunds[refund_id] = amount
    return {"captured_cents": captured, "refunds": new_refunds}
