"""SQL the console needs that the core store does not offer (yet).

Plain ``fn(conn, *args)`` functions, run through ``services.store.read`` /
``services.store.write`` like the store's own. Candidates to move into
``gateway_core.store``: sessions and settings stay console-only; the key,
channel, group and usage functions below are general.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

from gateway_core.store.connection import fetch_all, fetch_one, from_json, to_json
from gateway_core.store.keys import delete_key, normalize_network, set_key_enabled

from .migrations import SESSION_SECRET

# --- console settings and sessions ---------------------------------------------


def session_secret(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM console_settings WHERE name = ?", (SESSION_SECRET,)).fetchone()
    return row[0] if row else None


def create_session(conn: sqlite3.Connection, sid: str, user_id: int, expires_at: float, client_ip: str | None) -> None:
    now = time.time()
    conn.execute("DELETE FROM console_sessions WHERE expires_at <= ?", (now,))
    conn.execute(
        "INSERT INTO console_sessions (id, user_id, created_at, expires_at, client_ip) VALUES (?, ?, ?, ?, ?)",
        (sid, user_id, now, expires_at, client_ip),
    )


def find_session(conn: sqlite3.Connection, sid: str) -> dict[str, Any] | None:
    """The live session ``sid`` with its user, when the user is enabled."""
    row = fetch_one(
        conn,
        "SELECT s.id AS sid, s.expires_at, u.id, u.name, u.is_admin FROM console_sessions AS s "
        "JOIN users AS u ON u.id = s.user_id WHERE s.id = ? AND s.expires_at > ? AND u.enabled = 1",
        (sid, time.time()),
    )
    return dict(row) if row else None


def delete_session(conn: sqlite3.Connection, sid: str) -> None:
    conn.execute("DELETE FROM console_sessions WHERE id = ?", (sid,))


def sign_in_record(conn: sqlite3.Connection, name: str) -> tuple[int, str | None] | None:
    """``(user id, password hash)`` of an enabled user, else ``None``."""
    row = conn.execute("SELECT id, password_hash FROM users WHERE name = ? AND enabled = 1", (name,)).fetchone()
    return (row[0], row[1]) if row else None


# --- a user's own API keys ---------------------------------------------------------


def _own_key_hash(conn: sqlite3.Connection, key_id: int, user_id: int) -> str | None:
    row = conn.execute(
        "SELECT key_hash FROM api_keys WHERE id = ? AND user_id = ? AND deleted = 0", (key_id, user_id)
    ).fetchone()
    return row[0] if row else None


def change_key_state(conn: sqlite3.Connection, user_id: int, key_id: int, action: str) -> str | None:
    """Enable, disable or delete a key of ``user_id``; its hash (for the key cache),
    or ``None`` when the user has no such key."""
    key_hash = _own_key_hash(conn, key_id, user_id)
    if key_hash is None:
        return None
    if action == "delete":
        delete_key(conn, key_id)
    else:
        set_key_enabled(conn, key_id, action == "enable")
    return key_hash


def update_key(
    conn: sqlite3.Connection,
    user_id: int,
    key_id: int,
    *,
    name: str,
    quota_micros: int | None,
    expires_at: float | None,
    models: Iterable[str],
    allow_ips: Iterable[str],
) -> str | None:
    """Change a key's name and limits; its hash, or ``None`` when the user has no such key."""
    if not name.strip():
        raise ValueError("a key needs a name")
    if quota_micros is not None and quota_micros < 0:
        raise ValueError("a key's quota must not be negative")
    networks = [normalize_network(text) for text in allow_ips]
    key_hash = _own_key_hash(conn, key_id, user_id)
    if key_hash is None:
        return None
    conn.execute(
        "UPDATE api_keys SET name = ?, quota_micros = ?, expires_at = ?, models = ?, allow_ips = ? WHERE id = ?",
        (name.strip(), quota_micros, expires_at, to_json([m for m in dict.fromkeys(models) if m]), to_json(networks), key_id),
    )
    return key_hash


def key_choices(conn: sqlite3.Connection, user_id: int) -> list[dict[str, Any]]:
    """Every key of a user (deleted ones too: their logs remain), for filters."""
    sql = "SELECT id, name, prefix, deleted FROM api_keys WHERE user_id = ? ORDER BY deleted, id"
    return [dict(row) for row in fetch_all(conn, sql, (user_id,))]


# --- the usage log -------------------------------------------------------------------

LOG_COLUMNS = (
    "id, request_id, created_at, user_id, key_id, key_name, model, input_tokens, output_tokens, "
    "cached_tokens, cost_micros, estimated, duration_ms, status, stream, error_type"
)


def query_logs(conn: sqlite3.Connection, filters: Mapping[str, Any], *, limit: int = 50) -> tuple[list[dict], bool]:
    """One page of usage rows, newest first, and whether there are more in the
    paging direction. ``filters``: ``user_id``, ``key_id``, ``model``,
    ``status`` (a code, or ``"errors"`` for 400 and above), ``since``/``until``
    (Unix times) and one of ``before``/``after`` (row ids: keyset paging)."""
    where: list[str] = []
    params: list[Any] = []
    for column in ("user_id", "key_id", "model"):
        if filters.get(column) is not None:
            where.append(f"{column} = ?")
            params.append(filters[column])
    status = filters.get("status")
    if status == "errors":
        where.append("status >= 400")
    elif status is not None:
        where.append("status = ?")
        params.append(int(status))
    if filters.get("since") is not None:
        where.append("created_at >= ?")
        params.append(filters["since"])
    if filters.get("until") is not None:
        where.append("created_at < ?")
        params.append(filters["until"])
    after = filters.get("after")
    if after is not None:
        where.append("id > ?")
        params.append(after)
    elif filters.get("before") is not None:
        where.append("id < ?")
        params.append(filters["before"])
    sql = f"SELECT {LOG_COLUMNS} FROM usage_logs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY id {'ASC' if after is not None else 'DESC'} LIMIT ?"
    params.append(limit + 1)
    rows = [dict(row) for row in fetch_all(conn, sql, params)]
    more = len(rows) > limit
    rows = rows[:limit]
    if after is not None:
        rows.reverse()
    return rows, more


def log_detail(conn: sqlite3.Connection, log_id: int, user_id: int | None) -> dict[str, Any] | None:
    """One usage row; only the owner's when ``user_id`` is given."""
    sql, params = "SELECT * FROM usage_logs WHERE id = ?", [log_id]
    if user_id is not None:
        sql += " AND user_id = ?"
        params.append(user_id)
    row = fetch_one(conn, sql, params)
    if row is None:
        return None
    item = dict(row)
    item["attempts"] = from_json(item["attempts"], [])
    return item


def daily_spending(conn: sqlite3.Connection, since: float, user_id: int | None = None) -> list[dict[str, Any]]:
    """Cost and requests per UTC day and model since ``since`` (all users when ``user_id`` is None)."""
    sql = (
        "SELECT date(created_at, 'unixepoch') AS day, coalesce(model, '?') AS model, "
        "sum(cost_micros) AS cost, count(*) AS requests, sum(status >= 400) AS errors "
        "FROM usage_logs WHERE created_at >= ?"
    )
    params: list[Any] = [since]
    if user_id is not None:
        sql += " AND user_id = ?"
        params.append(user_id)
    sql += " GROUP BY day, model ORDER BY day"
    return [dict(row) for row in fetch_all(conn, sql, params)]


def usage_by(conn: sqlite3.Connection, column: str, since: float, limit: int = 50) -> list[dict[str, Any]]:
    """Site-wide totals since ``since`` grouped by ``model``, ``user`` or ``channel``, costliest first."""
    group = {"model": "u.model", "user": "u.user_id", "channel": "u.channel_name"}[column]
    label = {"model": "u.model", "user": "coalesce(us.name, '-')", "channel": "u.channel_name"}[column]
    sql = (
        f"SELECT {label} AS label, count(*) AS requests, sum(u.input_tokens) AS input_tokens, "
        "sum(u.output_tokens) AS output_tokens, sum(u.cost_micros) AS cost, sum(u.status >= 400) AS errors "
        "FROM usage_logs AS u LEFT JOIN users AS us ON us.id = u.user_id "
        f"WHERE u.created_at >= ? GROUP BY {group} ORDER BY cost DESC, requests DESC LIMIT ?"
    )
    return [dict(row) for row in fetch_all(conn, sql, (since, limit))]


def channel_health(conn: sqlite3.Connection, since: float) -> dict[int, dict[str, Any]]:
    """Per channel since ``since``: requests, errors, mean latency, the last error."""
    rows = fetch_all(
        conn,
        "SELECT channel_id, count(*) AS requests, sum(status >= 500 OR upstream_status IS NOT NULL) AS errors, "
        "avg(duration_ms) AS mean_ms, max(created_at) AS last_at FROM usage_logs "
        "WHERE created_at >= ? AND channel_id IS NOT NULL GROUP BY channel_id",
        (since,),
    )
    health = {row["channel_id"]: dict(row) for row in rows}
    errors = fetch_all(
        conn,
        "SELECT channel_id, max(created_at) AS at, error_message FROM usage_logs "
        "WHERE created_at >= ? AND channel_id IS NOT NULL AND status >= 500 GROUP BY channel_id",
        (since,),
    )
    for row in errors:
        if row["channel_id"] in health:
            health[row["channel_id"]]["last_error"] = row["error_message"]
            health[row["channel_id"]]["last_error_at"] = row["at"]
    return health


# --- operator: channels, users, groups ---------------------------------------------------------


def update_channel(conn: sqlite3.Connection, channel_id: int, fields: Mapping[str, Any]) -> bool:
    """Change a channel's fields (those of ``add_channel``); ``False`` when there is none."""
    columns = {
        "name": str, "type": str, "base_url": str, "api_keys": list, "models": list, "model_map": dict,
        "groups": list, "priority": int, "weight": int, "enabled": bool,
    }  # fmt: skip
    sets, params = [], []
    for name, value in fields.items():
        kind = columns[name]
        sets.append(f"{name} = ?")
        params.append(to_json(value) if kind in (list, dict) else int(value) if kind is bool else value)
    if not sets:
        return conn.execute("SELECT 1 FROM channels WHERE id = ?", (channel_id,)).fetchone() is not None
    return conn.execute(f"UPDATE channels SET {', '.join(sets)} WHERE id = ?", (*params, channel_id)).rowcount > 0


def delete_channel(conn: sqlite3.Connection, channel_id: int) -> bool:
    return conn.execute("DELETE FROM channels WHERE id = ?", (channel_id,)).rowcount > 0


def list_users(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every user with their groups and number of live keys, in one query."""
    rows = fetch_all(
        conn,
        "SELECT u.id, u.name, u.is_admin, u.enabled, u.balance_micros, u.created_at, u.password_hash IS NOT NULL "
        "AS has_password, (SELECT group_concat(group_name, ',') FROM user_groups AS g WHERE g.user_id = u.id) "
        "AS groups, (SELECT count(*) FROM api_keys AS k WHERE k.user_id = u.id AND k.deleted = 0) AS keys "
        "FROM users AS u ORDER BY u.id",
    )
    return [{**dict(row), "groups": (row["groups"] or "").split(",") if row["groups"] else []} for row in rows]


def set_user_admin(conn: sqlite3.Connection, user_id: int, is_admin: bool) -> bool:
    return conn.execute("UPDATE users SET is_admin = ? WHERE id = ?", (int(is_admin), user_id)).rowcount > 0


def close_group(conn: sqlite3.Connection, user_id: int, group: str) -> None:
    conn.execute("DELETE FROM user_groups WHERE user_id = ? AND group_name = ?", (user_id, group))


def group_columns(conn: sqlite3.Connection) -> set[str]:
    """The columns of ``groups`` (rate-limit columns arrive with the keys issue)."""
    return {row[1] for row in conn.execute('PRAGMA table_info("groups")')}


def list_groups(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every group with its members and keys counted, whatever columns the table has."""
    rows = fetch_all(
        conn,
        'SELECT g.*, (SELECT count(*) FROM user_groups AS ug WHERE ug.group_name = g.name) AS members, '
        '(SELECT count(*) FROM api_keys AS k WHERE k.group_name = g.name AND k.deleted = 0) AS keys '
        'FROM "groups" AS g ORDER BY g.name',
    )
    return [dict(row) for row in rows]


LIMIT_COLUMNS = ("rpm", "tpm", "concurrency")


def save_group(conn: sqlite3.Connection, name: str, ratio_ppm: int, limits: Mapping[str, int | None]) -> None:
    """Create or update a group: its price ratio and, where the columns exist, its rate limits."""
    from gateway_core.store.groups import set_group_ratio

    set_group_ratio(conn, name, ratio_ppm)
    present = group_columns(conn)
    changes = {column: value for column, value in limits.items() if column in LIMIT_COLUMNS and column in present}
    if changes:
        assignments = ", ".join(f"{column} = ?" for column in changes)
        conn.execute(f'UPDATE "groups" SET {assignments} WHERE name = ?', (*changes.values(), name))
