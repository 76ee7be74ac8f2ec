"""The usage log: one row per request, read newest first with keyset paging."""

from __future__ import annotations

import operator
import sqlite3
from typing import Any

from ..records import ChannelTraffic, Cursor, DailySpending, UsageRow, UsageTotal
from .connection import fetch_all, from_json, inserted_id, to_json
from .usage_hourly import DAY, buckets_fit, totals_source

_COLUMNS = (
    "request_id", "created_at", "user_id", "key_id", "key_name", "protocol", "endpoint", "model",
    "upstream_model", "channel_id", "channel_name", "stream", "input_tokens", "output_tokens",
    "cached_tokens", "cache_write_tokens", "cost_micros", "held_micros", "overrun_micros", "estimated", "duration_ms", "first_token_ms", "status", "end_reason",
    "error_type", "error_message", "upstream_status", "upstream_error", "client_ip", "client_request_id",
    "attempts", "cost_detail", "served_model", "team_id",
)  # fmt: skip
_INSERT = (
    f"INSERT INTO usage_logs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})"
)
# the most rows one read returns: the admin layer's largest page (1,000) and the one
# row past it that tells its pager more rows follow; below that, a full page would
# look like the last one
MAX_READ = 1001


def insert_usage(conn: sqlite3.Connection, row: UsageRow, overrun_micros: int | None = None) -> int:
    """Store a request's row (``started_at`` becomes ``created_at``; ``overrun_micros``,
    when given, instead of the row's); return its id."""
    values = usage_values(row)
    if overrun_micros is not None:
        values[OVERRUN_INDEX] = overrun_micros
    return inserted_id(conn.execute(_INSERT, values))


# the row's attributes in the order of ``_COLUMNS`` (``created_at`` is ``started_at``), read in one call
_ROW_VALUES = operator.attrgetter(*("started_at" if name == "created_at" else name for name in _COLUMNS))
_STREAM, _ESTIMATED, _ATTEMPTS, _COST_DETAIL, OVERRUN_INDEX = (
    _COLUMNS.index(name) for name in ("stream", "estimated", "attempts", "cost_detail", "overrun_micros")
)


def usage_values(row: UsageRow) -> list[Any]:
    """A request's row as both stores keep it, in the order of ``_COLUMNS``
    (``started_at`` becomes ``created_at``, flags 0 or 1, attempts JSON text)."""
    values = list(_ROW_VALUES(row))
    values[_STREAM] = int(row.stream)
    values[_ESTIMATED] = int(row.estimated)
    values[_ATTEMPTS] = to_json(row.attempts or [])
    if row.cost_detail is not None:
        values[_COST_DETAIL] = to_json(row.cost_detail)
    return values


def query_usage(
    conn: sqlite3.Connection,
    *,
    key_id: int | None = None,
    model: str | None = None,
    status: int | None = None,
    user_id: int | None = None,
    errors: bool = False,
    since: float | None = None,
    until: float | None = None,
    before: Cursor | None = None,
    after: Cursor | None = None,
    limit: int = 50,
    team_id: int | None = None,
) -> list[dict[str, Any]]:
    """Rows matching every given filter, newest first (by ``created_at``, then ``id``).

    ``errors`` keeps statuses of 400 and above; ``since`` keeps rows created at
    or after that Unix time, ``until`` before it. Page backwards with keyset
    pagination: pass the last row of a page as ``before=(row["created_at"],
    row["id"])`` (:func:`gateway_core.admin.usage.cursor_of`); page forwards (newer rows) with the
    first row of a page as ``after``. Each filter has an index ending in
    ``created_at``, so a page is one bounded index range scan whatever the size
    of the table.
    """
    sql, params = usage_query(
        key_id=key_id, model=model, status=status, user_id=user_id, errors=errors, since=since, until=until,
        before=before, after=after, limit=limit, team_id=team_id,
    )  # fmt: skip
    rows = [usage_dict(row) for row in fetch_all(conn, sql, params)]
    return rows[::-1] if after is not None else rows


def usage_query(
    *,
    key_id: int | None = None,
    model: str | None = None,
    status: int | None = None,
    user_id: int | None = None,
    errors: bool = False,
    since: float | None = None,
    until: float | None = None,
    before: Cursor | None = None,
    after: Cursor | None = None,
    limit: int = 50,
    indexed: bool = True,
    team_id: int | None = None,
) -> tuple[str, list[Any]]:
    """The SQL and parameters :func:`query_usage` runs (``EXPLAIN`` it to see the plan).
    ``indexed=False`` leaves out SQLite's ``INDEXED BY`` (PostgreSQL's planner picks
    the same index: each ends in ``created_at, id``, the order of a page)."""
    where, params, index = _filter_where(key_id, model, status, user_id, errors, since, until, team_id)
    if before is not None:
        created_at, row_id = before
        where.append("created_at <= ? AND (created_at < ? OR id < ?)")
        params.extend((created_at, created_at, row_id))
    if after is not None:
        created_at, row_id = after
        where.append("created_at >= ? AND (created_at > ? OR id > ?)")
        params.extend((created_at, created_at, row_id))
    sql = "SELECT * FROM usage_logs"
    if index is None and where:
        index = "idx_usage_logs_created_at"
    if index is not None and indexed:
        sql += f" INDEXED BY {index}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    direction = "ASC" if after is not None else "DESC"
    sql += f" ORDER BY created_at {direction}, id {direction} LIMIT ?"
    params.append(max(1, min(int(limit), MAX_READ)))
    return sql, params


def _filter_where(
    key_id: int | None, model: str | None, status: int | None, user_id: int | None, errors: bool,
    since: float | None, until: float | None, team_id: int | None = None,
) -> tuple[list[str], list[Any], str | None]:
    """The conditions of a usage filter, their parameters and the index a page reads."""
    where: list[str] = []
    params: list[Any] = []
    index = None
    # the most selective filter picks the index (a key's requests are fewer than its
    # user's, a user's fewer than a model's, a model's fewer than a status'): fixed,
    # so that a page never depends on the planner's guess between two equal-looking
    # indexes; the other filters are checked on the rows that index yields
    for column, value in (("key_id", key_id), ("team_id", team_id), ("user_id", user_id), ("model", model), ("status", status)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
            index = index or f"idx_usage_logs_{column}_created_at"
    if errors:  # a range of statuses: checked on the rows the index yields
        where.append("status >= 400")
    if since is not None:
        where.append("created_at >= ?")
        params.append(since)
    if until is not None:
        where.append("created_at < ?")
        params.append(until)
    return where, params, index


def filter_totals_query(
    *,
    key_id: int | None = None,
    model: str | None = None,
    status: int | None = None,
    user_id: int | None = None,
    errors: bool = False,
    since: float | None = None,
    until: float | None = None,
    team_id: int | None = None,
) -> tuple[str, list[Any]]:
    """The SQL (``?`` placeholders, both stores) of the totals of every row a usage
    filter matches: requests, input and output tokens, cost, errors."""
    where, params, _ = _filter_where(key_id, model, status, user_id, errors, since, until, team_id)
    sql = (
        "SELECT NULL AS label, count(*) AS requests, coalesce(sum(input_tokens), 0) AS input_tokens, "
        "coalesce(sum(output_tokens), 0) AS output_tokens, coalesce(sum(cost_micros), 0) AS cost_micros, "
        "coalesce(sum(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS errors FROM usage_logs"
    )
    return sql + (" WHERE " + " AND ".join(where) if where else ""), params


def filter_totals(conn: sqlite3.Connection, **filters: Any) -> UsageTotal:
    """The totals of every row matching the usage filter ``filters``."""
    sql, params = filter_totals_query(**filters)
    return UsageTotal(**dict(fetch_all(conn, sql, params)[0]))


def get_usage(conn: sqlite3.Connection, request: str | int) -> dict[str, Any] | None:
    """The row of one request, by the gateway's request id (a str) or the row's id (an int)."""
    column = "id" if isinstance(request, int) else "request_id"
    rows = fetch_all(conn, f"SELECT * FROM usage_logs WHERE {column} = ?", (request,))
    return usage_dict(rows[0]) if rows else None


# --- totals ---------------------------------------------------------------------------


def daily_query(since: float, user_id: int | None = None, *, postgres: bool = False) -> tuple[str, list[Any]]:
    """The SQL (``?`` placeholders) and parameters of :func:`daily_spending`, for both
    stores: whole UTC days and hours from the totals (the site's, or the user's hours), the rest from the log."""
    source, params = totals_source(since, None, user_id, postgres=postgres, site="model" if user_id is None else None, days=True)
    day = "to_char(to_timestamp(u.t) AT TIME ZONE 'UTC', 'YYYY-MM-DD')" if postgres else "date(u.t, 'unixepoch')"
    sql = (
        f"SELECT {day} AS day, coalesce(u.model, '?') AS model, CAST(coalesce(sum(u.cost_micros), 0) AS BIGINT) AS cost_micros, "
        f"{_REQUESTS_AND_ERRORS} FROM ({source}) AS u GROUP BY 1, 2 ORDER BY 1, 2"
    )
    return sql, params


def daily_spending(conn: sqlite3.Connection, since: float, user_id: int | None = None) -> list[DailySpending]:
    """Cost and requests per UTC day and model since ``since`` (everyone's when ``user_id`` is None)."""
    sql, params = daily_query(since, user_id)
    return [DailySpending(**dict(row)) for row in fetch_all(conn, sql, params)]


_REQUESTS_AND_ERRORS = (
    "CAST(coalesce(sum(u.requests), 0) AS BIGINT) AS requests, "
    "CAST(coalesce(sum(u.errors), 0) AS BIGINT) AS errors"
)
_TOTALS_BY = {  # what usage_totals groups by, the label it shows, and the join that label needs
    "model": ("u.model", "u.model", ""),
    "user": ("u.user_id, us.name", "coalesce(us.name, '-')", "LEFT JOIN users AS us ON us.id = u.user_id"),
    "channel": ("u.channel_name", "u.channel_name", ""),
    "key": ("u.key_id, k.name", "coalesce(k.name, '-')", "LEFT JOIN api_keys AS k ON k.id = u.key_id"),
    # a team's rows by the member whose key made them (the label is NULL for the team's service keys)
    "member": ("k.member_id, mu.name", "mu.name", "LEFT JOIN api_keys AS k ON k.id = u.key_id LEFT JOIN users AS mu ON mu.id = k.member_id"),
}
_SITE_DIMS = {"time": "all", "model": "model", "user": "user", "channel": "channel"}  # usage_site's dimension of each
TOTALS_SPANS = ("time",)  # usage_totals by time: one row per ``bucket`` seconds from ``since``


def totals_query(
    by: str, since: float, limit: int = 50, *, until: float | None = None, user_id: int | None = None,
    bucket: float | None = None, postgres: bool = False, hourly: bool = True,
) -> tuple[str, list[Any]]:
    """The SQL (``?`` placeholders) and parameters of :func:`usage_totals`, for both stores.

    By ``"time"``, the label is the bucket's number (``"0"`` from ``since`` to
    ``since + bucket``, ...) and rows come in no particular order. Whole hours
    are read from the totals (everyone's by time, model, user or channel from
    ``usage_site``, with whole UTC days where the buckets allow; the rest from
    ``usage_hourly``), the rest of the span from the log
    (:func:`~.usage_hourly.totals_source`); buckets that do not hold whole hours
    read every row from the log (``hourly=False`` always does: the figures as
    they were before the totals)."""
    params: list[Any] = []
    if by == "time":
        if not bucket or bucket <= 0:
            raise ValueError("totals by time need a bucket of seconds")
        span = "floor((u.t - ?) / ?)::bigint::text" if postgres else "CAST(CAST((u.t - ?) / ? AS INTEGER) AS TEXT)"
        group, label, join = "1", span, ""
        params += [since, bucket]
        hourly = hourly and buckets_fit(since, bucket)
    else:
        group, label, join = _TOTALS_BY[by]
    # everyone's figures by one dimension read the site's totals (by UTC day where the buckets allow)
    site = _SITE_DIMS.get(by) if user_id is None else None
    days = by != "time" or buckets_fit(since, bucket, DAY)
    source, source_params = totals_source(since, until, user_id, postgres=postgres, hourly=hourly, site=site, days=days)
    params += source_params
    sql = (
        f"SELECT {label} AS label, CAST(coalesce(sum(u.requests), 0) AS BIGINT) AS requests, "
        "CAST(coalesce(sum(u.input_tokens), 0) AS BIGINT) AS input_tokens, "
        "CAST(coalesce(sum(u.output_tokens), 0) AS BIGINT) AS output_tokens, "
        "CAST(coalesce(sum(u.cost_micros), 0) AS BIGINT) AS cost_micros, "
        "CAST(coalesce(sum(u.errors), 0) AS BIGINT) AS errors "
        f"FROM ({source}) AS u {join} GROUP BY {group}"
    )
    if by != "time":
        sql += " ORDER BY cost_micros DESC, requests DESC, label"
    sql += " LIMIT ?"
    params.append(limit)
    return sql, params


def usage_totals(
    conn: sqlite3.Connection, by: str, since: float, limit: int = 50, *, until: float | None = None,
    user_id: int | None = None, bucket: float | None = None, hourly: bool = True,
) -> list[UsageTotal]:
    """Totals since ``since`` (until ``until``; of one user, or everyone's) by
    ``"model"``, ``"user"``, ``"channel"``, ``"key"`` or ``"member"`` (a team key's
    member), costliest first; or by
    ``"time"`` in buckets of ``bucket`` seconds (:func:`totals_query`)."""
    sql, params = totals_query(by, since, limit, until=until, user_id=user_id, bucket=bucket, hourly=hourly)
    return [UsageTotal(**dict(row)) for row in fetch_all(conn, sql, params)]


def channel_traffic(conn: sqlite3.Connection, since: float) -> list[ChannelTraffic]:
    """Per channel since ``since``: requests, errors (5xx or an upstream error), mean latency, the last 5xx."""
    rows = fetch_all(
        conn,
        "SELECT channel_id, count(*) AS requests, sum(status >= 500 OR upstream_status IS NOT NULL) AS errors, "
        "avg(duration_ms) AS mean_ms, max(created_at) AS last_at FROM usage_logs "
        "WHERE created_at >= ? AND channel_id IS NOT NULL GROUP BY channel_id",
        (since,),
    )
    last_errors = {
        row["channel_id"]: (row["error_message"], row["at"])
        for row in fetch_all(
            conn,
            "SELECT channel_id, max(created_at) AS at, error_message FROM usage_logs "
            "WHERE created_at >= ? AND channel_id IS NOT NULL AND status >= 500 GROUP BY channel_id",
            (since,),
        )
    }
    traffic = []
    for row in rows:
        message, at = last_errors.get(row["channel_id"], (None, None))
        traffic.append(ChannelTraffic(**dict(row), last_error=message, last_error_at=at))
    return traffic


def usage_dict(row: Any) -> dict[str, Any]:
    """A usage row as the admin layer reads it (flags as bools, attempts decoded)."""
    item = dict(row)
    item["stream"] = bool(item["stream"])
    item["estimated"] = bool(item["estimated"])
    item["attempts"] = from_json(item["attempts"], [])
    item["cost_detail"] = from_json(item.get("cost_detail"), None)
    return item
