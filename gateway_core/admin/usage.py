"""The usage log: one pager for every front, and totals for reports.

A page is one bounded index range scan whatever the size of the log (the plan
benchmarked at ten million rows, docs/performance.md): newest first, paged
backwards with the cursor of a page's last row (``before``) or forwards with
its first row's (``after``).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from ..records import Cursor, DailySpending, UsageFilter, UsageTotal
from .context import Admin
from .errors import Invalid, NotFound

MAX_PAGE = 1000
TOTALS_BY = ("model", "user", "channel")  # the site report's totals; a user's are by model and by "key"
OWN_TOTALS_BY = ("key", "member")  # of one account: by key, and (a team's) by the member whose key it is
MAX_BUCKETS = 1000


@attrs.frozen
class UsagePage:
    """Rows newest first; ``more``: rows follow beyond the page in the paging direction."""

    rows: list[dict[str, Any]]
    more: bool

    def first_cursor(self) -> Cursor | None:
        return cursor_of(self.rows[0]) if self.rows else None

    def last_cursor(self) -> Cursor | None:
        return cursor_of(self.rows[-1]) if self.rows else None


async def page_usage(
    admin: Admin, filters: UsageFilter, *, before: Cursor | None = None, after: Cursor | None = None, limit: int = 50
) -> UsagePage:
    """``limit`` rows matching ``filters``, older than ``before`` or newer than ``after``."""
    limit = max(1, min(int(limit), MAX_PAGE))
    rows = await admin.store.page_usage(filters, before, limit + 1, after=after)
    more = len(rows) > limit
    return UsagePage(rows[1:] if after is not None and more else rows[:limit], more)


async def get_usage(admin: Admin, log_id: int, *, owner: int | None = None) -> dict[str, Any]:
    """One usage row by its id; with ``owner``, only that user's."""
    row = await admin.store.get_usage(log_id)
    if row is None or (owner is not None and row["user_id"] != owner):
        raise NotFound(f"no request with id {log_id}")
    return row


async def filter_totals(admin: Admin, filters: UsageFilter) -> UsageTotal:
    """Requests, tokens, cost and errors of every row ``filters`` match (``label`` is ``None``)."""
    return await admin.store.usage_filter_totals(filters)


async def daily_spending(admin: Admin, since: float, user_id: int | None = None) -> list[DailySpending]:
    """Cost and requests per UTC day and model since ``since`` (everyone's when ``user_id`` is ``None``)."""
    return await admin.store.daily_spending(since, user_id)


async def usage_totals(
    admin: Admin, by: str, since: float, limit: int = 50, *, until: float | None = None, user_id: int | None = None
) -> list[UsageTotal]:
    """Totals from ``since`` to ``until`` (everyone's, or one user's) by ``"model"``,
    ``"user"``, ``"channel"``, ``"key"`` or ``"member"`` (a team's keys' members;
    ``None`` labels its service keys), costliest first."""
    if by not in (*TOTALS_BY, *OWN_TOTALS_BY):
        raise Invalid(f"must be one of {', '.join((*TOTALS_BY, *OWN_TOTALS_BY))}, not {by!r}", "by")
    return await admin.store.usage_totals(by, since, limit, until=until, user_id=user_id)


async def usage_series(
    admin: Admin, since: float, until: float, bucket: float, *, user_id: int | None = None
) -> list[tuple[float, UsageTotal]]:
    """The same totals over time: one ``(start, totals)`` per ``bucket`` seconds
    from ``since`` to ``until``, empty buckets included, oldest first."""
    if bucket <= 0 or until <= since:
        raise Invalid("the span must end after it starts, in buckets of more than 0 seconds", "bucket")
    count = math.ceil((until - since) / bucket)
    if count > MAX_BUCKETS:
        raise Invalid(f"at most {MAX_BUCKETS} buckets: choose a shorter span or larger buckets", "bucket")
    found = await admin.store.usage_totals("time", since, count, until=until, user_id=user_id, bucket=bucket)
    by_index = {int(total.label or 0): total for total in found}
    empty = UsageTotal(None, 0, 0, 0, 0, 0)
    return [(since + i * bucket, by_index.get(i, empty)) for i in range(count)]


def cursor_of(row: dict[str, Any]) -> Cursor:
    return (row["created_at"], row["id"])


def page_cursor(row: dict[str, Any]) -> str:
    """The cursor of the page after ``row`` (the last of a page), as text."""
    return format_cursor(cursor_of(row))


def format_cursor(cursor: Cursor) -> str:
    return f"{cursor[0]!r}:{cursor[1]}"


def parse_cursor(text: str) -> Cursor:
    """:func:`format_cursor`'s text back to ``(created_at, id)``; ``ValueError`` when malformed."""
    created_at, sep, row_id = text.strip().rpartition(":")
    try:
        if not sep:
            raise ValueError
        return float(created_at), int(row_id)
    except ValueError:
        raise ValueError(f"not a page cursor: {text!r} (use the one printed under a page)") from None


async def find_request(admin: Admin, request_id: str, *, owner: int | None = None) -> dict[str, Any] | None:
    """The usage row of the request with this id (``X-Request-Id``); with ``owner``, only that user's."""
    row = await admin.store.find_request(request_id)
    return None if row is None or (owner is not None and row["user_id"] != owner) else row


# --- what a user is shown of their own rows ---------------------------------------------

# the operator's side of a request: which channel served it, what the upstream said, the
# routing attempts (an upstream's error text can name the operator's provider account)
OPERATOR_FIELDS = ("channel_id", "channel_name", "upstream_status", "upstream_error", "error_message", "attempts")


def for_owner(row: dict[str, Any]) -> dict[str, Any]:
    """A usage row as its owner (not an admin) is shown it: without the operator's
    fields, with :func:`safe_summary` of a failure instead."""
    shown = {name: value for name, value in row.items() if name not in OPERATOR_FIELDS}
    shown["error_summary"] = safe_summary(row)
    return shown


def safe_summary(row: dict[str, Any]) -> str | None:
    """What a user is told of a failed request: its status and kind in the
    gateway's words, never the upstream's text (it can name the operator's
    provider account) nor the channel."""
    status = row.get("status") or 0
    if status < 400 and not row.get("error_type"):
        return None
    kind = str(row.get("error_type") or "error").replace("_", " ")
    if row.get("upstream_status") or status >= 500:
        return (f"The request failed with status {status} ({kind}): the upstream provider or the gateway could not "
                "answer it. Quote the request id to the gateway's operator for the details.")  # fmt: skip
    return f"The request was refused with status {status} ({kind}). The answer your client received says why."
