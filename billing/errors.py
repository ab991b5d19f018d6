"""Typed errors of the billing library."""


class BillingError(ValueError):
    """Base class of every error the billing library raises on bad input."""


class NegativeAmountError(BillingError):
    """A quantity, price, discount or amount in cents is negative."""


class NotIntegerCentsError(BillingError, TypeError):
    """An amount or quantity is not an int (floats and bools are refused: cents are exact)."""


class InvalidRateError(BillingError, TypeError):
    """A tax rate is not a non-negative decimal string such as "0.0825"."""


class RefundError(BillingError):
    """A refund cannot be applied: over-refund, reused refund id with another amount, bad ledger."""
