"""Integer-cent amounts: validation, and their decimal text form."""

from __future__ import annotations

import re

from billing.errors import BillingError, NegativeAmountError, NotIntegerCentsError

# What `format_cents` writes: units without leading zeros, a point, two digits.
_AMOUNT = re.compile(r"(?:0|[1-9][0-9]*)\.[0-9]{2}")


def require_cents(value: object, name: str) -> int:
    """Returns `value` when it is a non-negative int (cents, or a count).

    Raises:
        NotIntegerCentsError: for anything but an int (bool and float included).
        NegativeAmountError: for a negative int.
    """
    if type(value) is not int:
        raise NotIntegerCentsError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise NegativeAmountError(f"{name} must not be negative, got {value}")
    return value


def format_cents(amount_cents: int) -> str:
    """Returns a non-negative amount of cents as a decimal string of currency units: 123456 ->
    "1234.56", 5 -> "0.05" (always two digits after the point, no sign, no grouping).

    Raises:
        NotIntegerCentsError, NegativeAmountError: as `require_cents`.
    """
    cents = require_cents(amount_cents, "amount_cents")
    units, rest = divmod(cents, 100)
    return f"{units}.{rest:02d}"


def parse_cents(text: str) -> int:
    """Returns the cents of a decimal string `format_cents` writes ("1234.56" -> 123456): digits,
    a point and exactly two digits; no sign, spaces or grouping.

    Raises:
        BillingError: for anything else.
    """
    if type(text) is not str or not _AMOUNT.fullmatch(text):
        raise BillingError(f"amount {text!r} is not a decimal string such as '1234.56'")
    units, _, rest = text.partition(".")
    return int(units) * 100 + int(rest)
