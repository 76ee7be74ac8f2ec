"""Budgets that reset: spending caps per day, week and month on a key and on a user.

Each cap counts what its key (or user) spent in the current **window**:

- ``calendar`` windows (the default) start at midnight, on Monday at midnight and
  on the first of the month at midnight in ``[gateway] budget_timezone`` (an IANA
  name, default ``UTC``), and reset at the next such boundary;
- ``rolling`` windows start with the first spend after the previous window ended
  and last 24 hours, 7 days or 30 days.

A request's reservation is counted against every cap of its key and its user in
the same store write as the balance and the key's quota (the hold); when it
settles, the count moves to its real cost (in the window it started in). A cap
that the reservation would pass refuses the request, naming the budget and when
it resets.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import attrs

from ..records import KeyRecord

LENGTHS = {"daily": 86400.0, "weekly": 7 * 86400.0, "monthly": 30 * 86400.0}  # rolling windows
CALENDAR, ROLLING = "calendar", "rolling"


@attrs.frozen
class BudgetUse:
    """One cap a reservation is counted against.

    ``subject`` is ``k:ID`` (a key) or ``u:ID`` (a user); a stored window that
    started before ``stale_before`` is over, and the next starts at
    ``fresh_start``; a calendar window resets at ``resets_at``, a rolling one
    ``length`` seconds after it started."""

    subject: str
    period: str
    cap_micros: int
    fresh_start: float
    stale_before: float
    resets_at: float | None
    length: float

    @property
    def whose(self) -> str:
        return "This API key's" if self.subject.startswith("k:") else "Your"

    def reset_time(self, window_start: float) -> float:
        return self.resets_at if self.resets_at is not None else window_start + self.length


def budget_uses(key: KeyRecord, now: float, *, timezone: str = "UTC", window: str = CALENDAR) -> tuple[BudgetUse, ...]:
    """The caps of ``key`` and of its user, with their current windows at ``now``."""
    uses = []
    for subject, budgets in ((f"k:{key.id}", key.budgets), (f"u:{key.user_id}", key.user_budgets)):
        for period, cap in budgets.items():
            uses.append(_use(subject, period, cap, now, timezone, window))
    return tuple(uses)


def _use(subject: str, period: str, cap: int, now: float, timezone: str, window: str) -> BudgetUse:
    length = LENGTHS[period]
    if window == ROLLING:
        return BudgetUse(subject, period, cap, now, now - length + 0.001, None, length)
    start, end = calendar_window(period, now, timezone)
    return BudgetUse(subject, period, cap, start, start, end, length)


def calendar_window(period: str, now: float, timezone: str) -> tuple[float, float]:
    """The Unix times the calendar window of ``period`` holding ``now`` starts and ends."""
    zone = ZoneInfo(timezone)
    local = dt.datetime.fromtimestamp(now, zone)
    day = local.date()
    if period == "daily":
        first, after = day, day + dt.timedelta(days=1)
    elif period == "weekly":
        first = day - dt.timedelta(days=day.weekday())
        after = first + dt.timedelta(days=7)
    else:
        first = day.replace(day=1)
        after = (first + dt.timedelta(days=32)).replace(day=1)
    return _midnight(first, zone), _midnight(after, zone)


def _midnight(day: dt.date, zone: ZoneInfo) -> float:
    return dt.datetime.combine(day, dt.time(), zone).timestamp()
