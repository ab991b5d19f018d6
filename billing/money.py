"""Shared validation of integer-cent amounts."""

from __future__ import annotations

from billing.errors import NegativeAmountError, NotIntegerCentsError


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
