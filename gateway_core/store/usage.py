"""The usage log: one row per request, read newest first with keyset paging."""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from ..records import UsageRow
from .connection import fetch_all, from_json, to_json

_COLUMNS = (
    "request_id", "created_at", "user_id", "key_id", "key_name", "protocol", "endpoint", "model",
    "upstream_model", "channel_id", "channel_name", "stream", "input_tokens", "output_tokens",
    "cached_tokens", "cost_micros", "estimated", "duration_ms", "first_token_ms", "status", "end_reason",
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
    return int(cursor.lastrowid)


def query_usage(
    conn: sqlite3.Connection,
    *,
    key_id: int | None = None,
    model: str | None = None,
    status: int | None = None,
    user_id: int | None = None,
    since: float | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Rows matching every given filter, newest first.

    Page backwards by passing the smallest ``id`` of a page as ``before_id``.
    ``since`` keeps rows created at or after that Unix time.
    """
    where: list[str] = []
    params: list[Any] = []
    for column, value in (("key_id", key_id), ("model", model), ("status", status), ("user_id", user_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        where.append("created_at >= ?")
        params.append(since)
    if before_id is not None:
        where.append("id < ?")
        params.append(before_id)
    sql = "SELECT * FROM usage_logs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC LIMIT ?"
    params.append(max(1, min(int(limit), MAX_PAGE)))
    return [_usage(row) for row in fetch_all(conn, sql, params)]


def _usage(row: sqlite3.Row) -> dict[str, Any]:
    item = dict(row)
    item["stream"] = bool(item["stream"])
    item["estimated"] = bool(item["estimated"])
    item["attempts"] = from_json(item["attempts"], [])
    return item
