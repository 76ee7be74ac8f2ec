"""The usage log exported: every row of a filter, streamed, as CSV or JSON lines.

One writer for every front (``relaygate logs export``, the management API's
``/usage.csv``, ``/usage.jsonl``, ``/logs.csv``, ``/logs.jsonl`` and the console's
Export buttons). It walks the log with the usage pager's keyset cursor a full
page at a time, so memory stays one page whatever the range, and a page that
is exactly full still knows whether more rows follow (the pager reads one row
past it). Rows written while an export runs are newer than its first page and
are left to the next export; no row that existed when it started is skipped or
repeated.

A row's times are ISO 8601 in UTC to the millisecond, durations are
milliseconds to two places, money is both the decimal USD text and the exact
integer micro-USD; an operator's export names the user of each row.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import AsyncIterator
from typing import Any

import orjson

from ..money import format_usd
from ..records import Cursor, UsageFilter
from . import usage, users
from .context import Admin
from .errors import Invalid

FORMATS = {"csv": "text/csv", "jsonl": "application/x-ndjson"}

# what an operator's export carries; a user's own leaves out the operator's side of
# a request (:data:`usage.OPERATOR_FIELDS`) and the user, who is the reader
COLUMNS = (
    "id", "request_id", "created_at", "user_id", "user", "team_id", "key_id", "key_name", "protocol", "endpoint", "model",
    "served_model", "channel_name", "stream", "status", "end_reason", "error_type", "input_tokens", "output_tokens",
    "cached_tokens", "cache_write_tokens", "cost", "cost_micros", "estimated", "duration_ms", "first_token_ms",
    "client_ip", "client_request_id",
)  # fmt: skip
OWNER_COLUMNS = tuple(name for name in COLUMNS if name not in (*usage.OPERATOR_FIELDS, "user_id", "user", "team_id"))


def media_type(fmt: str) -> str:
    """The HTTP media type of an export format; :class:`Invalid` for an unknown one."""
    try:
        return FORMATS[fmt]
    except KeyError:
        raise Invalid(f"must be one of {', '.join(FORMATS)}, not {fmt!r}", "format") from None


async def export_rows(
    admin: Admin, filters: UsageFilter, *, before: Cursor | None = None, most: int | None = None
) -> AsyncIterator[list[dict[str, Any]]]:
    """Every row ``filters`` match (older than ``before``; at most ``most``), newest
    first, a page at a time."""
    cursor, sent = before, 0
    while most is None or sent < most:
        size = usage.MAX_PAGE if most is None else min(usage.MAX_PAGE, most - sent)
        found = await usage.page_usage(admin, filters, before=cursor, limit=size)
        if found.rows:
            yield found.rows
            sent += len(found.rows)
        if not found.more or not found.rows:
            return
        cursor = usage.cursor_of(found.rows[-1])


async def export_usage(
    admin: Admin, filters: UsageFilter, fmt: str, *, owner: bool = False, before: Cursor | None = None,
    most: int | None = None,
) -> AsyncIterator[str]:
    """The export of every row ``filters`` match in ``fmt`` (``"csv"``: with its header
    line; ``"jsonl"``: one object a line), a page of text at a time. ``owner``: the
    columns a user is shown of their own rows."""
    media_type(fmt)
    columns = OWNER_COLUMNS if owner else COLUMNS
    names = _UserNames(admin)
    if fmt == "csv":
        yield csv_text([columns])
    async for rows in export_rows(admin, filters, before=before, most=most):
        shown = [export_row(row, columns, await names.of(row, columns)) for row in rows]
        yield csv_text([list(row.values()) for row in shown]) if fmt == "csv" else jsonl_text(shown)


async def export_found(admin: Admin, rows: list[dict[str, Any]], fmt: str, *, owner: bool = False) -> str:
    """``rows`` (a search's, at most a few) as a whole export in ``fmt``."""
    media_type(fmt)
    columns = OWNER_COLUMNS if owner else COLUMNS
    names = _UserNames(admin)
    shown = [export_row(row, columns, await names.of(row, columns)) for row in rows]
    if fmt == "jsonl":
        return jsonl_text(shown)
    return csv_text([columns, *(list(row.values()) for row in shown)])


def export_row(row: dict[str, Any], columns: tuple[str, ...], user: str | None = None) -> dict[str, Any]:
    """One usage row as exports show it, in ``columns``' order."""
    shown: dict[str, Any] = {}
    for name in columns:
        value = row.get(name)
        if name == "user":
            value = user
        elif name == "cost":
            value = format_usd(row.get("cost_micros") or 0)
        elif name == "cost_micros":
            value = value or 0
        elif name.endswith("_at") and value is not None:
            value = iso_time(value)
        elif name.endswith("_ms") and value is not None:
            value = round(float(value), 2)
        elif name in ("stream", "estimated"):
            value = bool(value)
        shown[name] = value
    return shown


def iso_time(unix: float) -> str:
    """Unix seconds as ISO 8601 in UTC to the millisecond: ``2026-11-29T00:12:34.567Z``."""
    return dt.datetime.fromtimestamp(unix, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def csv_text(rows: list[Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerows([["" if value is None else _csv_value(value) for value in row] for row in rows])
    return out.getvalue()


def _csv_value(value: Any) -> Any:
    return ("true" if value else "false") if isinstance(value, bool) else value


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    return "".join(orjson.dumps(row).decode() + "\n" for row in rows)


class _UserNames:
    """The names of the users an export's rows belong to, each looked up once."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self.names: dict[int, str | None] = {}

    async def of(self, row: dict[str, Any], columns: tuple[str, ...]) -> str | None:
        user_id = row.get("user_id")
        if user_id is None or "user" not in columns:
            return None
        if user_id not in self.names:
            found = await self.admin.store.get_user(int(user_id))
            self.names[user_id] = found.name if found is not None else None
        return self.names[user_id]
