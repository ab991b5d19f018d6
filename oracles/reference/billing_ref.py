"""Reference implementations of billing rules, written apart from `billing/` and from its method.

Each function takes a row's sample as plain JSON, as the row's `reference` is called
(docs/oracles.md, "Reference rows"), and returns plain JSON.
"""

from fractions import Fraction


def apply_rate(amount_cents: int, rate: str) -> int:
    """Tax on `amount_cents` (int cents) at `rate` (a decimal string such as "0.0825"), in whole
    cents rounded half to even (IEEE 754-2008 section 4.3.1, roundTiesToEven): the product is an
    exact fraction, and `round` of a Fraction rounds a tie to the even integer."""
    return round(Fraction(amount_cents) * Fraction(rate))


def refund(receiver: dict, refund_id: str, amount_cents: int) -> int:
    """What may still be refunded after refunding `amount_cents` under `refund_id` from a ledger
    built from `receiver` (`{"captured_cents": int, "refunds": {id: cents}}`), in cents: a refund
    whose id is already there with that amount changes nothing."""
    refunds = dict(receiver.get("refunds", {}))
    if refunds.get(refund_id) != amount_cents:
        refunds[refund_id] = refunds.get(refund_id, 0) + amount_cents
    return receiver["captured_cents"] - sum(refunds.values())
