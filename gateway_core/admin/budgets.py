"""Budgets: where a user's caps and their keys' caps stand (what the current
window counts and when it resets), and setting them (see
:mod:`gateway_core.billing.budgets`)."""

from __future__ import annotations

import time
from collections.abc import Mapping

import attrs

from ..billing.budgets import BudgetUse, budget_use
from ..records import Budgets
from .context import Admin
from .keys import get_key, list_keys
from .users import get_user, user_limits

PERIODS = ("daily", "weekly", "monthly")


@attrs.frozen
class BudgetStatus:
    """One cap: whose (``"user"`` or the key's name and id), its period, the cap, what
    the current window counts (reservations in progress included) and when it resets
    (a rolling window: when its oldest counted hour leaves it; ``None``: nothing
    captured in it yet)."""

    whose: str
    key_id: int | None
    period: str
    cap_micros: int
    spent_micros: int
    resets_at: float | None


async def budget_status(
    admin: Admin, user_id: int, *, timezone: str = "UTC", window: str = "calendar", now: float | None = None, key_id: int | None = None
) -> list[BudgetStatus]:
    """The user's caps and their keys' caps (only the key ``key_id``'s and the
    user's when given), with their current windows."""
    user = await get_user(admin, user_id)
    limits = await user_limits(admin, user)
    now = time.time() if now is None else now
    keys = [await get_key(admin, key_id, owner=user_id)] if key_id is not None else await list_keys(admin, user_id)
    wanted: list[tuple[BudgetUse, str, int | None]] = []
    for period, cap in budgets_of(limits).items():
        wanted.append((budget_use(f"u:{user.id}", period, cap, now, timezone=timezone, window=window), "user", None))
    for key in keys:
        for period, cap in key.budgets.items():
            wanted.append((budget_use(f"k:{key.id}", period, cap, now, timezone=timezone, window=window), "key " + key.name, key.id))
    if not wanted:
        return []
    spending = await admin.store.budget_spending([use for use, _, _ in wanted])
    return [
        BudgetStatus(whose, key, use.period, use.cap_micros, spent, use.reset_time(oldest))
        for (use, whose, key), (spent, oldest) in zip(wanted, spending)
    ]


def budgets_of(limits: Mapping[str, int | None]) -> Budgets:
    """The budgets among stored limit columns (``daily_budget_micros``, …)."""
    return Budgets(*(limits.get(f"{period}_budget_micros") for period in PERIODS))
