"""Order totals in integer cents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from billing.errors import BillingError
from billing.money import require_cents
from billing.tax import apply_rate


def subtotal_cents(lines: Sequence[Mapping[str, object]]) -> int:
    """Returns the sum of quantity x unit_price_cents over the order lines, in cents.

    Args:
        lines: each a mapping with exactly `quantity` (int >= 0) and `unit_price_cents` (int >= 0).

    Raises:
        BillingError: a line is not a mapping or has missing or unknown keys.
        NotIntegerCentsError, NegativeAmountError: a quantity or price is not a non-negative int.
    """
    if isinstance(lines, (str, bytes)) or not isinstance(lines, Sequence):
        raise BillingError("lines must be a sequence of order lines")
    total = 0
    for index, line in enumerate(lines):
        if not isinstance(line, Mapping) or set(line) != {"quantity", "unit_price_cents"}:
            raise BillingError(f"line {index} must have exactly quantity and unit_price_cents")
        quantity = require_cents(line["quantity"], f"line {index} quantity")
        price = require_cents(line["unit_price_cents"], f"line {index} unit_price_cents")
        total += quantity * price
    return total


def grand_total_cents(lines: Sequence[Mapping[str, object]], discount_cents: int = 0, tax_rate: str = "0") -> int:
    """Returns the amount to charge, in cents: subtotal, less the discount, plus tax on the rest.

    The discount is capped at the subtotal, so a total is never negative. Tax is `tax.apply_rate`
    (round half to even) on the discounted subtotal.

    Args:
        lines: order lines, see `subtotal_cents`.
        discount_cents: non-negative int, cents.
        tax_rate: non-negative decimal string, e.g. "0.0825".

    Raises:
        BillingError and its subclasses: on any negative, non-int or malformed input.
    """
    discount = require_cents(discount_cents, "discount_cents")
    taxable = max(subtotal_cents(lines) - discount, 0)
    return taxable + apply_rate(taxable, tax_rate)
