"""The usage log: one row per request, read newest first with keyset paging."""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from ..records import UsageRow
from .connection import fetch_all, from_json, inserted_id, to_json

_COLUMNS = (
    "request_id", "created_at", "user_id", "key_id", "key_name", "protocol", "endpoint", "model",
    "upstream_model", "channel_id", "channel_name", "stream", "input_tokens", "output_tokens",
    "cached_tokens", "cache_write_tokens", "cost_micros", "held_micros", "overrun_micros", "estimated", "duration_ms", "first_token_ms", "status", "end_reason",
    "error_type", "error_message", "upstream_status", "upstream_error", "client_ip", "client_request_id",
    "attempts",
)  # fmt: skip
_INSERT = (
    f"INSERT INTO usage_logs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})"
)
MAX_PAGE = 1000


def insert_usage(conn: sqlite3.Connection, row: UsageRow) -> int:
    """Store a request's row (``started_at`` becomes ``created_at``); return its id."""
    values = attrs.asdict(row, recurse=False)
    values["created_at"] = row.started_at
    values["stream"] = int(row.stream)
    values["estimated"] = int(row.estimated)
    values["attempts"] = to_json(row.attempts or [])
    cursor = conn.execute(_INSERT, [values[name] for name in _COLUMNS])
    return inserted_id(cursor)


def query_usage(
    conn: sqlite3.Connection,
    *,
    key_id: int | None = None,
    model: str | None = None,
    status: int | None = None,
    user_id: int | None = None,
    since: float | None = None,
    until: float | None = None,
    before: tuple[float, int] | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Rows matching every given filter, newest first (by ``created_at``, then ``id``).

    ``since`` keeps rows created at or after that Unix time, ``until`` before it.
    Page backwards with keyset pagination: pass the last row of a page as
    ``before=(row["created_at"], row["id"])`` (see :func:`page_cursor`). Each
    filter has an index ending in ``created_at``, so a page is one bounded index
    range scan whatever the size of the table.
    """
    sql, params = usage_query(
        key_id=key_id, model=model, status=status, user_id=user_id, since=since, until=until, before=before, limit=limit
    )
    return [_usage(row) for row in fetch_all(conn, sql, params)]


def usage_query(
    *,
    key_id: int | None = None,
    model: str | None = None,
    status: int | None = None,
    user_id: int | None = None,
    since: float | None = None,
    until: float | None = None,
    before: tuple[float, int] | None = None,
    limit: int = 50,
) -> tuple[str, list[Any]]:
    """The SQL and parameters :func:`query_usage` runs (``EXPLAIN`` it to see the plan)."""
    where: list[str] = []
    params: list[Any] = []
    index = None
    # the most selective filter picks the index (a key's requests are fewer than its
    # user's, a user's fewer than a model's, a model's fewer than a status'): fixed,
    # so that a page never depends on the planner's guess between two equal-looking
    # indexes; the other filters are checked on the rows that index yields
    for column, value in (("key_id", key_id), ("user_id", user_id), ("model", model), ("status", status)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
            index = index or f"idx_usage_logs_{column}_created_at"
    if since is not None:
        where.append("created_at >= ?")
        params.append(since)
    if until is not None:
        where.append("created_at < ?")
        params.append(until)
    if before is not None:
        created_at, row_id = before
        where.append("created_at <= ? AND (created_at < ? OR id < ?)")
        params.extend((created_at, created_at, row_id))
    sql = "SELECT * FROM usage_logs"
    if index is None and where:
        index = "idx_usage_logs_created_at"
    if index is not None:
        sql += f" INDEXED BY {index}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
    params.append(max(1, min(int(limit), MAX_PAGE)))
    return sql, params


def page_cursor(row: dict[str, Any]) -> str:
    """The cursor of the page after ``row`` (the last of a page), as text."""
    return f"{row['created_at']!r}:{row['id']}"


def parse_cursor(text: str) -> tuple[float, int]:
    """``page_cursor``'s text back to ``(created_at, id)``; ``ValueError`` when malformed."""
    created_at, sep, row_id = text.strip().rpartition(":")
    try:
        if not sep:
            raise ValueError
        return float(created_at), int(row_id)
    except ValueError:
        raise ValueError(f"not a page cursor: {text!r} (use the one printed under a page)") from None


def get_usage(conn: sqlite3.Connection, request_id: str) -> dict[str, Any] | None:
    """The row of one request, by the gateway's request id."""
    rows = fetch_all(conn, "SELECT * FROM usage_logs WHERE request_id = ?", (request_id,))
    return _usage(rows[0]) if rows else None


def _usage(row: sqlite3.Row) -> dict[str, Any]:
    item = dict(row)
    item["stream"] = bool(item["stream"])
    item["estimated"] = bool(item["estimated"])
    item["attempts"] = from_json(item["attempts"], [])
    return item
