"""Money at the edges: decimal strings in, integer micro-USD inside.

The gateway counts money as an integer number of micro-USD (1 USD =
1,000,000 micros) everywhere; these helpers are the only place text becomes
money and back, with :class:`decimal.Decimal` and never a float.
"""

from __future__ import annotations

import re
from decimal import Decimal

MICROS_PER_USD = 1_000_000
MAX_MICROS = 2**63 - 1  # what an SQLite INTEGER holds
_DECIMAL = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)")


def parse_usd(text: str) -> int:
    """Micro-USD from a decimal string such as ``"12.5"`` or ``"0.000001"``.

    Raises ``ValueError`` for negative, non-numeric, NaN/infinite values and for
    values finer than one micro-USD (more than 6 significant decimal places).
    """
    return _parse_micros(text, "amount")


def parse_price_per_mtok(text: str) -> int:
    """A price in USD per million tokens (``"2.50"``) as integer micro-USD per
    million tokens (``2_500_000``)."""
    return _parse_micros(text, "price per million tokens")


def format_usd(micros: int) -> str:
    """``12_500_000`` → ``"12.50"``: at least two decimals, more only when needed."""
    sign = "-" if micros < 0 else ""
    whole, frac = divmod(abs(int(micros)), MICROS_PER_USD)
    decimals = f"{frac:06d}".rstrip("0").ljust(2, "0")
    return f"{sign}{whole}.{decimals}"


def not_a_decimal(what: str, value: object) -> str:
    """The one message for money that is not a decimal number, in every front."""
    if isinstance(value, str):
        return f"{what} must be a decimal number like 12.50, got {value!r}"
    return f'{what} must be a decimal number in a string, like "12.50", got {value!r}'


def show_usd(micros: int) -> str:
    """Money for people, the same on every page: :func:`format_usd`'s digits (exact
    to the micro-USD: at least two decimals, up to six) with thousands separators
    (``1_234_567_891`` → ``"1,234.567891"``, ``100`` → ``"0.0001"``)."""
    text = format_usd(micros)
    sign = "-" if text.startswith("-") else ""
    whole, _, decimals = text.removeprefix("-").partition(".")
    return f"{sign}{int(whole):,}.{decimals}"


def _parse_micros(text: str, what: str) -> int:
    if not isinstance(text, str):
        raise ValueError(not_a_decimal(what, text))
    cleaned = text.strip()
    if cleaned.startswith("-"):
        raise ValueError(f"{what} must not be negative: {text!r}")
    if not _DECIMAL.fullmatch(cleaned):
        raise ValueError(not_a_decimal(what, text))
    micros = Decimal(cleaned) * MICROS_PER_USD
    if micros != micros.to_integral_value():
        raise ValueError(f"{what} {text!r} has more than 6 decimal places (the smallest unit is 0.000001 USD)")
    if micros > MAX_MICROS:
        raise ValueError(f"{what} {text!r} is too large")
    return int(micros)
