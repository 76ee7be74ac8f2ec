"""Users: who owns keys and a balance, and which groups are opened to them."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

from ..records import UserOverview, UserRecord
from .connection import atomic, fetch_all, fetch_one, inserted_id
from .groups import ensure_groups

_SELECT = "SELECT id, name, is_admin, enabled, balance_micros, deleted_at FROM users"
# what deleting a person ends in teams, on both stores (the user's id as the one parameter)
LEAVE_TEAMS = (
    "UPDATE api_keys SET deleted = 1, enabled = 0 WHERE member_id = ? AND deleted = 0",
    "DELETE FROM team_members WHERE user_id = ?",
)


def add_user(
    conn: sqlite3.Connection,
    name: str,
    *,
    is_admin: bool = False,
    password_hash: str | None = None,
    groups: Iterable[str] = ("default",),
) -> int:
    """Create a user opened to ``groups`` (missing groups are created, ratio 1); return its id.

    A duplicate name raises ``sqlite3.IntegrityError``.
    """
    check_user_name(name)
    group_names = list(dict.fromkeys(groups))
    with atomic(conn):
        ensure_groups(conn, group_names)
        cursor = conn.execute(
            "INSERT INTO users (name, is_admin, enabled, password_hash, balance_micros, created_at) "
            "VALUES (?, ?, 1, ?, 0, ?)",
            (name, int(bool(is_admin)), password_hash, time.time()),
        )
        user_id = inserted_id(cursor)
        conn.executemany(
            "INSERT INTO user_groups (user_id, group_name) VALUES (?, ?)",
            [(user_id, group) for group in group_names],
        )
    return user_id


def get_user(conn: sqlite3.Connection, name: str) -> UserRecord | None:
    row = fetch_one(conn, f"{_SELECT} WHERE name = ?", (name,))
    return _user(conn, row) if row else None


def get_user_by_id(conn: sqlite3.Connection, user_id: int) -> UserRecord | None:
    row = fetch_one(conn, f"{_SELECT} WHERE id = ?", (user_id,))
    return _user(conn, row) if row else None


def list_users(conn: sqlite3.Connection) -> list[UserRecord]:
    return [_user(conn, row) for row in fetch_all(conn, f"{_SELECT} ORDER BY id")]


def list_user_overviews(conn: sqlite3.Connection) -> list[UserOverview]:
    """Every user with its number of live keys and whether it has a console password."""
    rows = fetch_all(
        conn,
        "SELECT u.id, u.name, u.is_admin, u.enabled, u.balance_micros, u.deleted_at, u.created_at, "
        "u.password_hash IS NOT NULL AS has_password, "
        "(SELECT count(*) FROM api_keys AS k WHERE k.user_id = u.id AND k.deleted = 0) AS keys "
        "FROM users AS u WHERE u.id NOT IN (SELECT account_id FROM teams) ORDER BY u.id",  # people: no team's account
    )
    return [UserOverview(_user(conn, row), row["keys"], bool(row["has_password"]), row["created_at"]) for row in rows]


def has_admin(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM users WHERE is_admin = 1 LIMIT 1").fetchone() is not None


def first_admin(conn: sqlite3.Connection) -> UserRecord | None:
    """The admin named ``admin`` if there is one, else the oldest admin."""
    row = fetch_one(conn, f"{_SELECT} WHERE is_admin = 1 ORDER BY name != 'admin', id LIMIT 1")
    return _user(conn, row) if row else None


def get_password_hash(conn: sqlite3.Connection, name: str) -> str | None:
    """The stored password hash of an enabled user (for console sign-in)."""
    row = conn.execute("SELECT password_hash FROM users WHERE name = ? AND enabled = 1", (name,)).fetchone()
    return row[0] if row else None


def set_password_hash(conn: sqlite3.Connection, user_id: int, password_hash: str | None) -> bool:
    """Set the hash; the user's sign-ins from before end (``sessions_after``)."""
    sql = "UPDATE users SET password_hash = ?, sessions_after = ? WHERE id = ?"
    return conn.execute(sql, (password_hash, time.time(), user_id)).rowcount > 0


def set_user_enabled(conn: sqlite3.Connection, user_id: int, enabled: bool) -> bool:
    """Enable or disable a user that is not deleted; the user's sign-ins from before
    end either way (``sessions_after``)."""
    sql = "UPDATE users SET enabled = ?, sessions_after = ? WHERE id = ? AND deleted_at IS NULL"
    return conn.execute(sql, (int(bool(enabled)), time.time(), user_id)).rowcount > 0


def delete_user(conn: sqlite3.Connection, user_id: int) -> bool:
    """Delete a user for good: disabled, signed out, without a password, every key
    (their keys in teams too) deleted, every token revoked and every team left, in one transaction. The row stays (its name,
    balance, ledger and usage rows are history); ``False`` when there is no such
    user or it was deleted before."""
    now = time.time()
    with atomic(conn):
        sql = "UPDATE users SET enabled = 0, deleted_at = ?, sessions_after = ?, password_hash = NULL WHERE id = ? AND deleted_at IS NULL"
        if conn.execute(sql, (now, now, user_id)).rowcount == 0:
            return False
        conn.execute("UPDATE api_keys SET deleted = 1, enabled = 0 WHERE user_id = ? AND deleted = 0", (user_id,))
        conn.execute("UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", (now, user_id))
        for sql in LEAVE_TEAMS:  # their keys in teams too, and their memberships (docs/teams.md)
            conn.execute(sql, (user_id,))
    return True


def open_groups(conn: sqlite3.Connection, user_id: int, groups: Iterable[str]) -> None:
    """Open more groups to a user (creating missing groups)."""
    names = list(dict.fromkeys(groups))
    with atomic(conn):
        ensure_groups(conn, names)
        conn.executemany(
            "INSERT OR IGNORE INTO user_groups (user_id, group_name) VALUES (?, ?)",
            [(user_id, name) for name in names],
        )


def close_groups(conn: sqlite3.Connection, user_id: int, groups: Iterable[str]) -> None:
    """Close groups to a user: no new key of theirs may use them."""
    conn.executemany(
        "DELETE FROM user_groups WHERE user_id = ? AND group_name = ?", [(user_id, name) for name in dict.fromkeys(groups)]
    )


def user_groups(conn: sqlite3.Connection, user_id: int) -> tuple[str, ...]:
    rows = conn.execute("SELECT group_name FROM user_groups WHERE user_id = ? ORDER BY ordinal", (user_id,))
    return tuple(row[0] for row in rows)


def check_user_name(name: str) -> None:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"invalid user name {name!r}")
    if len(name) > 200:
        raise ValueError("user name is too long (200 characters at most)")


def _user(conn: sqlite3.Connection, row: sqlite3.Row) -> UserRecord:
    return UserRecord(
        id=row["id"],
        name=row["name"],
        is_admin=bool(row["is_admin"]),
        enabled=bool(row["enabled"]),
        balance_micros=row["balance_micros"],
        groups=user_groups(conn, row["id"]),
        deleted=row["deleted_at"] is not None,
    )
