"""Budgets that reset: spending caps per day, week and month on a key and on a user.

What a key (or user) has spent is kept in **hourly buckets** (``budget_buckets``:
the captured cost of each UTC hour, written by the database in the same
transaction as the capture); what it is spending now is its open reservations
(``holds``). A cap counts, in its current **window**, the buckets of the window's
hours plus every open reservation:

- ``calendar`` windows (the default) start at midnight, on Monday at midnight and
  on the first of the month at midnight in ``[gateway] budget_timezone`` (an IANA
  name, default ``UTC``), and reset at the next such boundary;
- ``rolling`` windows slide: the current hour and the 23 before it (daily), the
  167 before it (weekly) or the 719 before it (monthly). A cost counts until its
  hour leaves the window, 23 to 24 hours after it was spent for a daily cap.

The granularity is the hour: a calendar window counts the hour its start falls in
(for a time zone whose offset from UTC is not a whole number of hours, up to 45
minutes before local midnight also count). A reservation a crashed process left
counts only until it is released (by the hold sweeper or the next start on its
replica): there is no counter to leave behind.

The reservation is checked against every cap of its key and of its user in the
same store transaction as the balance and the key's quota (the hold), serialized
per user, so concurrent requests never pass a cap. A cap that the reservation
would pass refuses the request, naming the budget and when it resets.
"""

from __future__ import annotations

import datetime as dt
import math
from zoneinfo import ZoneInfo

import attrs

from ..records import KeyRecord

HOUR = 3600
HOURS = {"daily": 24, "weekly": 7 * 24, "monthly": 30 * 24}  # rolling windows, in hours
KEEP_HOURS = 32 * 24  # buckets older than this are pruned (the longest calendar window is 31 days)
CALENDAR, ROLLING = "calendar", "rolling"


def hour_of(when: float) -> int:
    """The bucket (UTC hour number since the epoch) of the Unix time ``when``."""
    return math.floor(when / HOUR)


@attrs.frozen
class BudgetUse:
    """One cap a reservation is checked against.

    ``subject`` is ``k:ID`` (a key: its buckets and its reservations) or ``u:ID``
    (a user: every key's); the window counts the buckets from ``first_hour`` on. A
    calendar window resets at ``resets_at``; a rolling one frees a bucket ``hours``
    hours after the bucket's hour (``resets_at`` is ``None``)."""

    subject: str
    period: str
    cap_micros: int
    first_hour: int
    resets_at: float | None
    hours: int

    @property
    def whose(self) -> str:
        return "This API key's" if self.is_key else "Your"

    @property
    def is_key(self) -> bool:
        return self.subject.startswith("k:")

    @property
    def subject_id(self) -> int:
        return int(self.subject[2:])

    def reset_time(self, oldest_hour: int | None) -> float | None:
        """When the window frees spend: a calendar window's end, or when the oldest
        bucket with spend (``oldest_hour``) leaves a rolling one (``None``: only
        requests in progress count, and they free it as they finish)."""
        if self.resets_at is not None:
            return self.resets_at
        return None if oldest_hour is None else float((oldest_hour + self.hours) * HOUR)


def budget_uses(key: KeyRecord, now: float, *, timezone: str = "UTC", window: str = CALENDAR) -> tuple[BudgetUse, ...]:
    """The caps of ``key`` and of its user, with their current windows at ``now``."""
    uses = []
    for subject, budgets in ((f"k:{key.id}", key.budgets), (f"u:{key.user_id}", key.user_budgets)):
        for period, cap in budgets.items():
            uses.append(budget_use(subject, period, cap, now, timezone=timezone, window=window))
    return tuple(uses)


def budget_use(subject: str, period: str, cap: int, now: float, *, timezone: str = "UTC", window: str = CALENDAR) -> BudgetUse:
    hours = HOURS[period]
    if window == ROLLING:
        return BudgetUse(subject, period, cap, hour_of(now) - hours + 1, None, hours)
    start, end = calendar_window(period, now, timezone)
    return BudgetUse(subject, period, cap, hour_of(start), end, hours)


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
