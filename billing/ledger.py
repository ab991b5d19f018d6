"""A ledger of captured money and the refunds against it, as an object."""

from __future__ import annotations

from collections.abc import Mapping

from billing.refunds import apply_refund, refunded_cents


class Ledger:
    """Captured money and its refunds; each refund is applied idempotently (`refunds.apply_refund`).

    Args:
        captured_cents: int >= 0, the money captured, in cents.
        refunds: refund id -> cents refunded so far (none when omitted).

    Raises:
        RefundError, NotIntegerCentsError, NegativeAmountError: as `refunds.apply_refund` for a
            malformed ledger.
    """

    def __init__(self, captured_cents: int, refunds: Mapping[str, int] | None = None) -> None:
        self._state = {"captured_cents": captured_cents, "refunds": dict(refunds or {})}
        refunded_cents(self._state)  # validates

    @property
    def captured_cents(self) -> int:
        """The money captured, in cents."""
        return int(self._state["captured_cents"])  # type: ignore[call-overload]

    def refundable_cents(self) -> int:
        """What may still be refunded, in cents: captured less refunded so far."""
        return self.captured_cents - refunded_cents(self._state)

    def refund(self, refund_id: str, amount_cents: int) -> int:
        """Applies a refund (a retried one with the same id and amount changes nothing) and returns
        what may still be refunded afterwards, in cents.

        Raises:
            RefundError, NotIntegerCentsError, NegativeAmountError: as `refunds.apply_refund`.
        """
        self._state = apply_refund(self._state, refund_id, amount_cents)
        return self.refundable_cents()
