"""Wallets: crediting and correcting balances, reading the ledger, checking the books."""

from __future__ import annotations

import attrs

from ..records import AuditReport, HoldRecord, LedgerEntry, UserRecord
from .context import Admin
from .errors import Invalid
from .rules import check_amount
from .users import get_user


@attrs.frozen
class Wallet:
    """A user's balance (the sum of their ledger: money that moved), the open
    reservations of their requests in flight (``holds``, oldest first: kept
    apart from the ledger), and a page of the ledger (newest first; ``more``:
    older rows follow). The user may still spend ``available_micros``."""

    user: UserRecord
    holds: list[HoldRecord]
    ledger: list[LedgerEntry]
    more: bool

    @property
    def held_micros(self) -> int:
        return sum(hold.amount_micros for hold in self.holds)

    @property
    def open_holds(self) -> int:
        return len(self.holds)

    @property
    def available_micros(self) -> int:
        return self.user.balance_micros - self.held_micros


async def topup(admin: Admin, user_id: int, amount_micros: int, note: str | None = None) -> int:
    """Credit a user (a ``topup`` ledger row with ``note``); the new balance."""
    check_amount(amount_micros, "amount")
    await get_user(admin, user_id)
    return await admin.store.topup(user_id, amount_micros, note)


async def adjust(admin: Admin, user_id: int, amount_micros: int, note: str) -> int:
    """Correct a balance by a signed amount (an ``adjustment`` ledger row saying
    why); the new balance."""
    check_amount(amount_micros, "amount", signed=True)
    if not note or not note.strip():
        raise Invalid("must say why", "note")
    await get_user(admin, user_id)
    return await admin.store.adjust(user_id, amount_micros, note)


async def wallet(admin: Admin, user_id: int, *, before_id: int | None = None, limit: int = 20) -> Wallet:
    """The user's balance, open reservations and ``limit`` ledger rows older than ``before_id``."""
    user = await get_user(admin, user_id)
    holds = await admin.store.list_holds(user_id)
    ledger = await admin.store.list_ledger(user_id, before_id=before_id, limit=limit + 1)
    return Wallet(user, holds, ledger[:limit], len(ledger) > limit)


async def request_ledger(admin: Admin, request_id: str, *, owner: int | None = None) -> list[LedgerEntry]:
    """The ledger rows of one request (its charge, a refund); with ``owner``, only that user's."""
    rows = await admin.store.ledger_of_request(request_id)
    return [row for row in rows if owner is None or row.user_id == owner]


async def check_ledger(admin: Admin) -> AuditReport:
    """Check the money invariants (see :mod:`gateway_core.store.audit`)."""
    return await admin.store.check_ledger()

