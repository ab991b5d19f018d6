"""Sales tax on integer cents with round-half-to-even."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Context, Decimal

from billing.errors import InvalidRateError
from billing.money import require_cents

_RATE = re.compile(r"(?:0|[1-9][0-9]{0,5})(?:\.[0-9]{1,12})?")
# Enough digits that no product of an amount (< 10**30 cents) and a rate is ever rounded early.
_CONTEXT = Context(prec=80)


def parse_rate(rate: object) -> Decimal:
    """Parses a tax rate given as a decimal string ("0.0825" is 8.25 %).

    Raises:
        InvalidRateError: for a float (binary floats cannot hold most decimal rates exactly), any
            other non-string, or a string that is not a plain non-negative decimal.
    """
    if type(rate) is not str:
        raise InvalidRateError(f"rate must be a decimal string such as '0.0825', got {type(rate).__name__}")
    if not _RATE.fullmatch(rate):
        raise InvalidRateError(f"rate {rate!r} is not a non-negative decimal string such as '0.0825'")
    return Decimal(rate)


def apply_rate(amount_cents: int, rate: str) -> int:
    """Returns the tax on `amount_cents` at `rate`, in whole cents, rounded half to even.

    Rounding follows the roundTiesToEven rule of IEEE 754-2008 section 4.3.1 (also called banker's
    rounding; `decimal.ROUND_HALF_EVEN` in the General Decimal Arithmetic specification): an exact
    half cent goes to the even neighbour, so 0.5 -> 0, 1.5 -> 2, 2.5 -> 2. The product is computed
    exactly in decimal, never in binary floating point.

    Args:
        amount_cents: non-negative int, cents.
        rate: non-negative decimal string, e.g. "0.0825".

    Raises:
        NotIntegerCentsError: amount is not an int.
        NegativeAmountError: amount is negative.
        InvalidRateError: rate is a float, not a string, or not a plain decimal.
    """
    cents = require_cents(amount_cents, "amount_cents")
    product = _CONTEXT.multiply(Decimal(cents), parse_rate(rate))
    return int(product.quantize(Decimal(1), rounding=ROUND_HALF_EVEN, context=_CONTEXT))
