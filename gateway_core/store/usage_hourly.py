"""Totals of the usage log by hour (migration ``0017_usage_hourly``), kept apart
from its rows so that the dashboards' figures survive pruning (:mod:`gateway_core.base.retention`).

- ``usage_hourly``: one row per UTC hour, user, key, model, channel (id and name)
  and status, with its requests, tokens and cost. Absent values are kept as ``0``
  or ``''`` (a primary key cannot hold ``NULL`` on SQLite) and read back as ``NULL``.
- ``usage_site``: the whole site's requests, errors, tokens and cost per UTC hour
  and per UTC day (``span``), overall (``dim`` ``all``) and by model, user and
  channel (``label``): what the site's dashboard reads, a few hundred rows for a
  month whatever the traffic.

Both are filled off the request path: a rollup folds the usage rows of ids
``(rolled_id, next]`` into them, adding to the hours and days they fall in, and
moves ``usage_rollup.rolled_id`` in the same transaction, so every row is counted
exactly once however late it was written. Pruning deletes only rows whose id is
at most ``rolled_id``; the totals are never pruned.

A totals read (:func:`totals_source`) is one statement, hence one snapshot: the
whole hours (or days) of its span from the totals, and from ``usage_logs`` the
partial hours at both ends of the span and the rows not rolled up yet
(``id > rolled_id``).

Ids are handed out in commit order on SQLite (one writer at a time), not on
PostgreSQL (a transaction may take an id, then commit after a later one): there
the rollup folds only up to the largest id it saw ``margin`` seconds before
(``usage_rollup.seen_id``, ``seen_at``), by when every transaction holding a
smaller id has committed or rolled back (a settlement lives for seconds).

The statements here are written for both stores (``?`` placeholders, which the
PostgreSQL store numbers); :func:`roll_up` and :func:`prune` run them on SQLite.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from ..base.retention import Prunable, RollupStep

HOUR, DAY = 3600, 86_400
KEY_COLUMNS = ("user_id", "hour", "key_id", "model", "channel_id", "channel_name", "status")  # a user's hours: a range of the key
SUM_COLUMNS = ("requests", "input_tokens", "output_tokens", "cost_micros")

_TABLES = """
CREATE TABLE usage_hourly (
    hour {int} NOT NULL, user_id {int} NOT NULL, key_id {int} NOT NULL, model TEXT NOT NULL,
    channel_id {int} NOT NULL, channel_name TEXT NOT NULL, status {int} NOT NULL,
    requests {int} NOT NULL, input_tokens {int} NOT NULL, output_tokens {int} NOT NULL, cost_micros {int} NOT NULL,
    PRIMARY KEY (user_id, hour, key_id, model, channel_id, channel_name, status)
){rowid};
CREATE TABLE usage_site (
    span {int} NOT NULL, dim TEXT NOT NULL, start {int} NOT NULL, label TEXT NOT NULL,
    requests {int} NOT NULL, input_tokens {int} NOT NULL, output_tokens {int} NOT NULL, cost_micros {int} NOT NULL,
    errors {int} NOT NULL, PRIMARY KEY (span, dim, start, label)
){rowid};
CREATE TABLE usage_rollup (
    id {int} PRIMARY KEY CHECK (id = 1), rolled_id {int} NOT NULL, seen_id {int} NOT NULL, seen_at {real} NOT NULL
);
INSERT INTO usage_rollup (id, rolled_id, seen_id, seen_at) VALUES (1, 0, 0, 0);
"""
USAGE_HOURLY_POSTGRES = _TABLES.format(int="BIGINT", real="DOUBLE PRECISION", rowid="")


def migrate_0017_usage_hourly(db: Any) -> None:
    """``usage_hourly`` and ``usage_site`` (the usage log's totals) and ``usage_rollup`` (how far they are filled)."""
    # the totals live in their primary key's tree only (not in a rowid table and its key's index too)
    for statement in _TABLES.format(int="INTEGER", real="REAL", rowid=" WITHOUT ROWID").split(";"):
        if statement.strip():
            db.execute(statement)


def _hour_of(column: str, postgres: bool) -> str:
    return f"(floor({column} / 3600) * 3600)::bigint" if postgres else f"CAST({column} / 3600 AS INTEGER) * 3600"


def fold_sql(postgres: bool = False) -> str:
    """Add the usage rows of ids ``(?, ?]`` to their hours."""
    keys = ", ".join(KEY_COLUMNS)
    sums = ", ".join(f"{column} = usage_hourly.{column} + excluded.{column}" for column in SUM_COLUMNS)
    return (
        f"INSERT INTO usage_hourly ({keys}, {', '.join(SUM_COLUMNS)}) "
        f"SELECT coalesce(user_id, 0), {_hour_of('created_at', postgres)}, coalesce(key_id, 0), coalesce(model, ''), "
        "coalesce(channel_id, 0), coalesce(channel_name, ''), coalesce(status, 0), count(*), "
        "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cost_micros), 0) "
        "FROM usage_logs WHERE id > ? AND id <= ? GROUP BY 1, 2, 3, 4, 5, 6, 7 "
        f"ON CONFLICT ({keys}) DO UPDATE SET {sums}"
    )


SITE_DIMS = ("all", "model", "user", "channel")
SITE_SPANS = (HOUR, DAY)


def fold_site_sql(postgres: bool = False) -> str:
    """Add the usage rows of ids ``(?, ?]`` to the whole site's totals by hour and by
    UTC day, each overall (``all``) and by model, by user and by channel."""
    start = "(floor(u.created_at / s.span) * s.span)::bigint" if postgres else "CAST(u.created_at / s.span AS INTEGER) * s.span"
    sums = ", ".join(f"{column} = usage_site.{column} + excluded.{column}" for column in (*SUM_COLUMNS, "errors"))
    spans = ", ".join(f"({span})" for span in SITE_SPANS)
    dims = ", ".join(f"('{dim}')" for dim in SITE_DIMS)
    return (
        f"WITH s(span) AS (VALUES {spans}), d(dim) AS (VALUES {dims}) "
        "INSERT INTO usage_site (span, dim, start, label, requests, input_tokens, output_tokens, cost_micros, errors) "
        f"SELECT s.span, d.dim, {start}, CASE d.dim WHEN 'model' THEN coalesce(u.model, '') "
        "WHEN 'user' THEN CAST(coalesce(u.user_id, 0) AS TEXT) WHEN 'channel' THEN coalesce(u.channel_name, '') ELSE '' END, "
        "count(*), coalesce(sum(u.input_tokens), 0), coalesce(sum(u.output_tokens), 0), coalesce(sum(u.cost_micros), 0), "
        "sum(CASE WHEN u.status >= 400 THEN 1 ELSE 0 END) "
        "FROM usage_logs AS u, s, d WHERE u.id > ? AND u.id <= ? GROUP BY 1, 2, 3, 4 "
        f"ON CONFLICT (span, dim, start, label) DO UPDATE SET {sums}"
    )


STATE = "SELECT rolled_id, seen_id, seen_at FROM usage_rollup WHERE id = 1"
TOP = "SELECT coalesce(max(id), 0) FROM usage_logs"
SET_STATE = "UPDATE usage_rollup SET rolled_id = ?, seen_id = ?, seen_at = ? WHERE id = 1"
# ? before (a time), ? the most rows: the oldest rows before it that are rolled up. The row of
# the largest id always stays: SQLite gives a new row the largest id + 1 (no AUTOINCREMENT on
# usage_logs), so a log pruned empty would hand out ids at or below the mark again, and the
# rollup would skip their rows
PRUNE = (
    "DELETE FROM usage_logs WHERE id IN (SELECT id FROM usage_logs{index} WHERE created_at < ? "
    "AND id <= (SELECT rolled_id FROM usage_rollup WHERE id = 1) AND id < (SELECT max(id) FROM usage_logs) "
    "ORDER BY created_at LIMIT ?)"
)
# ? before: rows a prune would delete (rolled up) and would not yet (not rolled up), with their span
PRUNABLE = (
    "SELECT count(*) FILTER (WHERE u.id <= r.rolled_id AND u.id < m.top), count(*) FILTER (WHERE u.id > r.rolled_id), "
    "min(u.created_at) FILTER (WHERE u.id <= r.rolled_id AND u.id < m.top), "
    "max(u.created_at) FILTER (WHERE u.id <= r.rolled_id AND u.id < m.top), r.rolled_id "
    "FROM usage_rollup AS r CROSS JOIN (SELECT max(id) AS top FROM usage_logs) AS m "
    "LEFT JOIN usage_logs AS u ON u.created_at < ? WHERE r.id = 1 GROUP BY r.rolled_id"
)


def next_step(state: tuple[int, int, float], top: int, now: float, batch: int, margin: float) -> RollupStep:
    """The next step from ``state`` (``rolled_id, seen_id, seen_at``) with ``top``
    the largest id written: ids up to ``seen_id`` are folded once ``margin``
    seconds have passed since it was seen; once they are, ``top`` is the next mark."""
    rolled, seen, seen_at = int(state[0]), int(state[1]), float(state[2])
    ripe = now - seen_at >= margin
    safe = seen if ripe else rolled
    end = max(rolled, min(safe, rolled + batch))
    if end >= seen and ripe and top > seen:
        seen, seen_at = top, now
    return RollupStep(rolled, end, seen, seen_at)


def roll_up(conn: sqlite3.Connection, batch: int, margin: float, now: float) -> RollupStep:
    """One rollup transaction on SQLite (through the writer: one at a time)."""
    step = next_step(conn.execute(STATE).fetchone(), conn.execute(TOP).fetchone()[0], now, batch, margin)
    if step.folded:
        conn.execute(fold_sql(), (step.rolled_id, step.end))
        conn.execute(fold_site_sql(), (step.rolled_id, step.end))
    conn.execute(SET_STATE, (step.end, step.seen_id, step.seen_at))
    return step


def prune(conn: sqlite3.Connection, before: float, batch: int) -> int:
    """Delete at most ``batch`` of the oldest rolled-up rows created before ``before``; how many."""
    return conn.execute(PRUNE.format(index=" INDEXED BY idx_usage_logs_created_at"), (before, batch)).rowcount


def prunable_of(row: Any) -> Prunable:
    count, waiting, oldest, newest, rolled = tuple(row)
    return Prunable(int(count), int(waiting), oldest, newest, int(rolled))


def prunable(conn: sqlite3.Connection, before: float) -> Prunable:
    """The rows created before ``before``: rolled up (what a prune deletes) and not yet."""
    return prunable_of(conn.execute(PRUNABLE, (before,)).fetchone())


# --- reading totals ---------------------------------------------------------------------

_RAW = (
    "SELECT created_at AS t, user_id, key_id, model, channel_name, CASE WHEN status >= 400 THEN 1 ELSE 0 END AS errors, "
    "1 AS requests, input_tokens, output_tokens, cost_micros FROM usage_logs"
)
_HOURLY = (
    "SELECT CAST(hour AS {real}) AS t, nullif(user_id, 0) AS user_id, nullif(key_id, 0) AS key_id, "
    "nullif(model, '') AS model, nullif(channel_name, '') AS channel_name, "
    "CASE WHEN status >= 400 THEN requests ELSE 0 END AS errors, requests, input_tokens, output_tokens, cost_micros FROM usage_hourly"
)
_SITE = (
    "SELECT CAST(start AS {real}) AS t, {user} AS user_id, CAST(NULL AS {int}) AS key_id, {model} AS model, "
    "{channel} AS channel_name, errors, requests, input_tokens, output_tokens, cost_micros FROM usage_site"
)
_NOT_ROLLED = "id > (SELECT rolled_id FROM usage_rollup WHERE id = 1)"


def _site_select(dim: str, postgres: bool) -> str:
    integer, real = ("BIGINT", "DOUBLE PRECISION") if postgres else ("INTEGER", "REAL")
    none_int, none_text = f"CAST(NULL AS {integer})", "CAST(NULL AS TEXT)"
    return _SITE.format(
        real=real, int=integer,
        user=f"nullif(CAST(label AS {integer}), 0)" if dim == "user" else none_int,
        model="nullif(label, '')" if dim == "model" else none_text,
        channel="nullif(label, '')" if dim == "channel" else none_text,
    )  # fmt: skip


def totals_source(
    since: float, until: float | None, user_id: int | None, *, postgres: bool = False, hourly: bool = True,
    site: str | None = None, days: bool = False,
) -> tuple[str, list[Any]]:
    """A subquery (and its parameters) of the usage rows from ``since`` to
    ``until`` (of one user, or everyone's), each with the columns ``t`` (its
    time), ``user_id``, ``key_id``, ``model``, ``channel_name`` and the sums
    ``requests``, ``errors``, ``input_tokens``, ``output_tokens``, ``cost_micros``:
    whole hours from ``usage_hourly``, the rest from the log (module docstring).

    ``site`` (everyone's only) names the one dimension the figure groups by
    (``all``, ``model``, ``user``, ``channel``; the others are ``NULL``): whole
    hours then come from ``usage_site``, and with ``days`` whole UTC days too.
    ``hourly=False``: every row from the log, as before the rollup existed."""
    first = math.ceil(since / HOUR) * HOUR
    last = math.floor(until / HOUR) * HOUR if until is not None else None
    parts: list[tuple[str, list[Any]]] = []

    def part(select: str, where: list[str], params: list[Any]) -> None:
        if user_id is not None:
            where.append("user_id = ?")
            params.append(user_id)
        parts.append((f"{select} WHERE {' AND '.join(where)}", params))

    def between(column: str, start: float, end: float | None) -> tuple[list[str], list[Any]]:
        return [f"{column} >= ?", *([f"{column} < ?"] if end is not None else [])], [start, *([end] if end is not None else [])]

    if not hourly or (last is not None and first >= last):
        part(_RAW, *between("created_at", since, until))
        return parts[0]
    if since < first:
        part(_RAW, *between("created_at", since, float(first)))
    if last is not None and until is not None and last < until:
        part(_RAW, *between("created_at", float(last), until))
    # rows not rolled up yet: everyone's are a short range of the primary key while the rollup
    # keeps up (SQLite: NOT INDEXED keeps the scan to the rowid's range), one user's are
    # their rows in the span (their index, as before the rollup: bounded however far behind it is)
    where, params = between("created_at", float(first), None if last is None else float(last))
    index = "" if postgres else " NOT INDEXED" if user_id is None else " INDEXED BY idx_usage_logs_user_id_created_at"
    part(_RAW + index, [_NOT_ROLLED, *where], params)
    if site is None:
        part(_HOURLY.format(real="DOUBLE PRECISION" if postgres else "REAL"), *between("hour", first, last))
    else:
        day_first = math.ceil(first / DAY) * DAY
        day_last = math.floor(last / DAY) * DAY if last is not None else None
        select = _site_select(site, postgres)
        spans = [(HOUR, first, last)]
        if days and (day_last is None or day_first < day_last):
            spans = [(HOUR, first, day_first), (DAY, day_first, day_last)]
            if day_last is not None and last is not None and day_last < last:
                spans.append((HOUR, day_last, last))
        for span, start, end in spans:
            if end is None or start < end:
                where, params = between("start", start, end)
                part(select, ["span = ?", "dim = ?", *where], [span, site, *params])
    return " UNION ALL ".join(sql for sql, _ in parts), [value for _, params in parts for value in params]


def buckets_fit(since: float, bucket: float | None, span: int = HOUR) -> bool:
    """Whether buckets of ``bucket`` seconds from ``since`` each hold whole spans
    (hours or days; else totals by time read every row of the log, or hours)."""
    return bucket is not None and since % span == 0 and bucket % span == 0
