"""API keys: created here with their secret shown once, found by hash on each request."""

from __future__ import annotations

import ipaddress
import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..records import Budgets, KeyRecord, RateLimits
from ..secrets import hash_key, key_prefix, new_api_key
from .connection import atomic, fetch_all, fetch_one, from_json, inserted_id, to_json
from .limits import LimitChanges, check_limit_changes, set_key_limits

_SELECT = (
    "SELECT k.id, k.name, k.user_id, u.name AS user_name, "
    # a team member's key stops with the member: disabled, removed or made a viewer (docs/teams.md)
    "u.enabled * coalesce(m.enabled, 1) * (CASE WHEN k.member_id IS NULL OR tm.role IN ('admin', 'member') "
    "THEN 1 ELSE 0 END) AS user_enabled, t.id AS team_id, k.member_id, "
    "k.group_name, k.prefix, k.enabled, k.deleted, k.expires_at, k.quota_micros, k.used_micros, "
    "k.models, k.allow_ips, k.created_at, k.last_used_at, "
    "k.rpm, k.tpm, k.concurrency, "
    "coalesce(u.rpm, g.rpm) AS user_rpm, coalesce(u.tpm, g.tpm) AS user_tpm, "
    "coalesce(u.concurrency, g.concurrency) AS user_concurrency, "
    "k.daily_budget_micros, k.weekly_budget_micros, k.monthly_budget_micros, "
    "u.daily_budget_micros AS user_daily_budget_micros, u.weekly_budget_micros AS user_weekly_budget_micros, "
    "u.monthly_budget_micros AS user_monthly_budget_micros, k.cost_header "
    'FROM api_keys AS k JOIN users AS u ON u.id = k.user_id LEFT JOIN "groups" AS g ON g.name = k.group_name '
    "LEFT JOIN teams AS t ON t.account_id = k.user_id LEFT JOIN users AS m ON m.id = k.member_id "
    "LEFT JOIN team_members AS tm ON tm.team_id = t.id AND tm.user_id = k.member_id"
)


def create_key(
    conn: sqlite3.Connection,
    user_id: int,
    *,
    name: str,
    group: str,
    quota_micros: int | None = None,
    expires_at: float | None = None,
    models: Iterable[str] = (),
    allow_ips: Iterable[str] = (),
    limits: LimitChanges | None = None,
) -> tuple[int, str]:
    """Create a key for a user in one of the groups opened to them.

    Returns ``(id, secret)``: the secret is not stored (only its hash) and
    cannot be shown again. ``limits`` sets the key's own rate limits
    (``{"rpm": 60}``, see :mod:`gateway_core.store.limits`). Raises
    ``ValueError`` for an unknown user, a group not opened to the user, a
    negative quota or limit, or an invalid IP network.
    """
    name, networks, model_names = _checked(name, quota_micros, models, allow_ips)
    limit_values = check_limit_changes(limits or {})
    with atomic(conn):
        user = conn.execute("SELECT name FROM users WHERE id = ?", (user_id,)).fetchone()
        if user is None:
            raise ValueError(f"no user with id {user_id}")
        opened = [row[0] for row in conn.execute("SELECT group_name FROM user_groups WHERE user_id = ?", (user_id,))]
        if group not in opened:
            have = ", ".join(sorted(opened)) or "none"
            raise ValueError(f"group {group!r} is not open to user {user[0]!r} (open groups: {have})")
        secret = new_api_key()
        cursor = conn.execute(
            "INSERT INTO api_keys (user_id, name, key_hash, prefix, group_name, quota_micros, used_micros, "
            "expires_at, models, allow_ips, enabled, deleted, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, 1, 0, ?)",
            (
                user_id,
                name,
                hash_key(secret),
                key_prefix(secret),
                group,
                quota_micros,
                expires_at,
                to_json(model_names),
                to_json(networks),
                time.time(),
            ),
        )
        key_id = inserted_id(cursor)
        if limit_values:
            set_key_limits(conn, key_id, limit_values)
    return key_id, secret


def find_key(conn: sqlite3.Connection, key_hash: str) -> KeyRecord | None:
    """The key with this hash and its owner, deleted keys included (``deleted=True``)."""
    row = fetch_one(conn, f"{_SELECT} WHERE k.key_hash = ?", (key_hash,))
    return _key(row) if row else None


def get_key(conn: sqlite3.Connection, key_id: int) -> KeyRecord | None:
    row = fetch_one(conn, f"{_SELECT} WHERE k.id = ?", (key_id,))
    return _key(row) if row else None


def list_keys(conn: sqlite3.Connection, user_id: int, *, include_deleted: bool = False) -> list[KeyRecord]:
    """A user's keys, oldest first; deleted ones only when asked."""
    where = "k.user_id = ?" if include_deleted else "k.user_id = ? AND k.deleted = 0"
    return [_key(row) for row in fetch_all(conn, f"{_SELECT} WHERE {where} ORDER BY k.id", (user_id,))]


def update_key(
    conn: sqlite3.Connection,
    key_id: int,
    *,
    name: str,
    quota_micros: int | None,
    expires_at: float | None,
    models: Iterable[str],
    allow_ips: Iterable[str],
    group: str | None = None,
) -> bool:
    """Change a live key's name, quota, expiry, models and allowed networks, and its
    group when one is given (validated as :func:`create_key` does; the admin layer
    checks the group is open to the key's user); ``False`` when there is no such key."""
    name, networks, model_names = _checked(name, quota_micros, models, allow_ips)
    cursor = conn.execute(
        'UPDATE api_keys SET name = ?, quota_micros = ?, expires_at = ?, models = ?, allow_ips = ?, group_name = coalesce(?, group_name) '
        "WHERE id = ? AND deleted = 0",
        (name, quota_micros, expires_at, to_json(model_names), to_json(networks), group, key_id),
    )
    return cursor.rowcount > 0


def set_key_enabled(conn: sqlite3.Connection, key_id: int, enabled: bool) -> bool:
    """Enable or disable a key that is not deleted; ``False`` when there is none."""
    cursor = conn.execute(
        "UPDATE api_keys SET enabled = ? WHERE id = ? AND deleted = 0", (int(bool(enabled)), key_id)
    )
    return cursor.rowcount > 0


def delete_key(conn: sqlite3.Connection, key_id: int) -> bool:
    """Soft-delete a key (it stays for the usage log); ``False`` when there is none."""
    cursor = conn.execute("UPDATE api_keys SET deleted = 1, enabled = 0 WHERE id = ? AND deleted = 0", (key_id,))
    return cursor.rowcount > 0


def touch_keys(conn: sqlite3.Connection, last_used: Mapping[int, float]) -> None:
    """Record when keys were last used (never moving a time backwards)."""
    conn.executemany(
        "UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?",
        [(when, key_id) for key_id, when in last_used.items()],
    )


def normalize_network(text: str) -> str:
    """``10.0.0.1`` → ``10.0.0.1/32``; ``ValueError`` for anything not an IP network."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=False))
    except ValueError:
        raise ValueError(f"not an IP address or CIDR network: {text!r}") from None


def _checked(
    name: str, quota_micros: int | None, models: Iterable[str], allow_ips: Iterable[str]
) -> tuple[str, list[str], list[str]]:
    """A key's name, networks and models as stored; ``ValueError`` for what cannot be."""
    if not name or not name.strip():
        raise ValueError("a key needs a name")
    if quota_micros is not None and quota_micros < 0:
        raise ValueError("a key's quota must not be negative")
    return name.strip(), [normalize_network(text) for text in allow_ips], [m for m in dict.fromkeys(models) if m]


def _key(row: sqlite3.Row) -> KeyRecord:
    return KeyRecord(
        id=row["id"],
        name=row["name"],
        user_id=row["user_id"],
        user_name=row["user_name"],
        user_enabled=bool(row["user_enabled"]),
        group=row["group_name"],
        prefix=row["prefix"],
        enabled=bool(row["enabled"]),
        deleted=bool(row["deleted"]),
        expires_at=row["expires_at"],
        quota_micros=row["quota_micros"],
        used_micros=row["used_micros"],
        models=tuple(from_json(row["models"], [])),
        allow_ips=tuple(from_json(row["allow_ips"], [])),
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        limits=RateLimits.of(row["rpm"], row["tpm"], row["concurrency"]),
        user_limits=RateLimits.of(row["user_rpm"], row["user_tpm"], row["user_concurrency"]),
        budgets=Budgets(row["daily_budget_micros"], row["weekly_budget_micros"], row["monthly_budget_micros"]),
        user_budgets=Budgets(row["user_daily_budget_micros"], row["user_weekly_budget_micros"], row["user_monthly_budget_micros"]),
        cost_header=bool(row["cost_header"]),
        team_id=row["team_id"],
        member_id=row["member_id"],
    )


def get_key_locks(conn: sqlite3.Connection, key_id: int) -> dict[str, Any]:
    """The limits of a key its operator set (empty: none, or no such key)."""
    row = conn.execute("SELECT locks FROM api_keys WHERE id = ?", (key_id,)).fetchone()
    return parse_locks(row[0] if row else None)


def set_key_locks(conn: sqlite3.Connection, key_id: int, locks: Mapping[str, Any]) -> None:
    conn.execute("UPDATE api_keys SET locks = ? WHERE id = ?", (orjson.dumps(dict(locks)).decode(), key_id))


def parse_locks(text: str | None) -> dict[str, Any]:
    """``api_keys.locks`` as a dict (anything else stored there: no locks)."""
    try:
        value = orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def set_key_cost_header(conn: sqlite3.Connection, key_id: int, on: bool) -> bool:
    return conn.execute("UPDATE api_keys SET cost_header = ? WHERE id = ? AND deleted = 0", (int(on), key_id)).rowcount > 0

