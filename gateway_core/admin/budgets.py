"""Where a user's budgets stand: each cap of the user and of their keys, what its
current window has counted, and when it resets (see :mod:`gateway_core.billing.budgets`)."""

from __future__ import annotations

import time

import attrs

from ..billing.budgets import BudgetUse, budget_uses
from ..records import KeyRecord
from .context import Admin
from .keys import list_keys
from .users import get_user


@attrs.frozen
class BudgetStatus:
    """One cap: whose (``"user"`` or the key's name and id), its period, the cap, what
    the current window counted (reservations in progress included) and its reset."""

    whose: str
    key_id: int | None
    period: str
    cap_micros: int
    spent_micros: int
    resets_at: float | None  # None: a rolling window not opened yet


async def budget_status(
    admin: Admin, user_id: int, *, timezone: str = "UTC", window: str = "calendar", now: float | None = None
) -> list[BudgetStatus]:
    """The user's caps and their keys' caps, with their current windows."""
    await get_user(admin, user_id)
    now = time.time() if now is None else now
    keys = await list_keys(admin, user_id)
    uses: list[tuple[BudgetUse, KeyRecord]] = []
    for key in keys:
        for use in budget_uses(key, now, timezone=timezone, window=window):
            if use.subject.startswith("k:") or not any(u.subject == use.subject and u.period == use.period for u, _ in uses):
                uses.append((use, key))
    if not keys:
        return []
    spending = await admin.store.budget_spending(sorted({use.subject for use, _ in uses}))
    statuses = []
    for use, key in uses:
        start, spent = spending.get((use.subject, use.period), (None, 0))
        current = start is not None and start >= use.stale_before
        resets = use.reset_time(start) if current and start is not None else use.resets_at
        mine = use.subject.startswith("k:")
        statuses.append(BudgetStatus(
            "key " + key.name if mine else "user", key.id if mine else None, use.period, use.cap_micros,
            spent if current else 0, resets,
        ))  # fmt: skip
    return statuses
