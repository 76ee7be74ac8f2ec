"""Redemption codes: credit a wallet once, without a payment provider.

An operator creates codes in batches; each code is random (80 bits, shown as
``RG-XXXX-XXXX-XXXX-XXXX`` in an alphabet without look-alike characters) and
stored only as its SHA-256 hash, like an API key: the plain code exists only in
the one export made when the batch is created. Codes are compared after
:func:`normalize_code` (case, spaces and dashes do not matter).
"""

from __future__ import annotations

import hashlib
import secrets

import attrs

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # 32 characters: no 0/O, 1/I
PREFIX = "RG"
GROUPS, GROUP_CHARS = 4, 4
SHOWN_CHARS = 4  # characters after the prefix shown in listings
# why a code was not credited
WRONG, USED, EXPIRED, DISABLED = "wrong", "used", "expired", "disabled"
REFUSALS = {
    WRONG: "This code does not exist: check it for typos.",
    USED: "This code has already been redeemed.",
    EXPIRED: "This code has expired.",
    DISABLED: "This code has been disabled by the gateway's operator.",
}


def new_code() -> str:
    chars = "".join(secrets.choice(ALPHABET) for _ in range(GROUPS * GROUP_CHARS))
    return "-".join([PREFIX, *(chars[n : n + GROUP_CHARS] for n in range(0, len(chars), GROUP_CHARS))])


def normalize_code(code: str) -> str:
    """The code as stored for hashing: upper case, without spaces and dashes."""
    return "".join(ch for ch in code.upper() if ch.isalnum())


def hash_code(code: str) -> str:
    return hashlib.sha256(normalize_code(code).encode("utf-8")).hexdigest()


def code_prefix(code: str) -> str:
    plain = normalize_code(code)
    return f"{PREFIX}-{plain[len(PREFIX) : len(PREFIX) + SHOWN_CHARS]}…"


@attrs.frozen
class RedemptionCode:
    """A code as listings show it (never the code itself)."""

    id: int
    batch: str
    prefix: str
    value_micros: int
    group: str | None
    expires_at: float | None
    note: str | None
    enabled: bool
    created_at: float
    redeemed_by: str | None  # the user's name
    redeemed_at: float | None

    def state(self, now: float) -> str:
        if self.redeemed_at is not None:
            return USED
        if not self.enabled:
            return DISABLED
        if self.expires_at is not None and self.expires_at <= now:
            return EXPIRED
        return "open"


@attrs.frozen
class Redeemed:
    """A code credited to a wallet: the code, its value, the balance after, the group it opened."""

    code_id: int
    value_micros: int
    balance_micros: int
    group: str | None
