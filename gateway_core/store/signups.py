"""Sign-ups waiting for a site admin's approval on SQLite (``docs/teams.md#self-sign-up``),
and the port's methods for them (:class:`SqliteSignups`). The SQL is written with
``?`` placeholders for both stores (PostgreSQL numbers them: ``relaygate_postgres.admin_signups``)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..records import UserRecord
from ..team_records import SignupRecord
from .connection import atomic, fetch_all, fetch_one
from .teams import set_member
from .users import add_user, get_user_by_id

SIGNUP_SELECT = "SELECT id, name, team, role, group_name, status, created_at, decided_at FROM signups"
INSERT_SIGNUP = (
    "INSERT INTO signups (name, team, role, group_name, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?) "
    "ON CONFLICT (name) DO NOTHING"
)
DECIDE_SIGNUP = "UPDATE signups SET status = ?, decided_at = ? WHERE id = ? AND status = 'pending'"


def signup_record(row: Any) -> SignupRecord:
    return SignupRecord(
        row["id"], row["name"], row["team"], row["role"], row["group_name"], row["status"], row["created_at"], row["decided_at"]
    )


def add_signup(conn: sqlite3.Connection, name: str, team: str, role: str, group: str) -> tuple[SignupRecord, bool]:
    """The sign-up of ``name``: a new pending one, or the one kept before; and whether it is new."""
    with atomic(conn):
        created = conn.execute(INSERT_SIGNUP, (name, team, role, group, time.time())).rowcount > 0
        row = fetch_one(conn, f"{SIGNUP_SELECT} WHERE name = ?", (name,))
    return signup_record(row), created


def get_signup(conn: sqlite3.Connection, signup_id: int) -> SignupRecord | None:
    row = fetch_one(conn, f"{SIGNUP_SELECT} WHERE id = ?", (signup_id,))
    return signup_record(row) if row else None


def find_signup(conn: sqlite3.Connection, name: str) -> SignupRecord | None:
    row = fetch_one(conn, f"{SIGNUP_SELECT} WHERE name = ?", (name,))
    return signup_record(row) if row else None


def list_signups(conn: sqlite3.Connection, status: str | None) -> list[SignupRecord]:
    if status is None:
        return [signup_record(row) for row in fetch_all(conn, f"{SIGNUP_SELECT} ORDER BY id")]
    return [signup_record(row) for row in fetch_all(conn, f"{SIGNUP_SELECT} WHERE status = ? ORDER BY id", (status,))]


def reject_signup(conn: sqlite3.Connection, signup_id: int) -> bool:
    return conn.execute(DECIDE_SIGNUP, ("rejected", time.time(), signup_id)).rowcount > 0


def approve_signup(conn: sqlite3.Connection, signup_id: int, groups: Sequence[str], team_id: int | None, role: str) -> UserRecord | None:
    """The pending sign-up approved, its user made in ``groups`` and, with ``team_id``, made
    a member in ``role``, in one transaction; ``None``: no pending sign-up with this id."""
    with atomic(conn):
        signup = get_signup(conn, signup_id)
        if signup is None or conn.execute(DECIDE_SIGNUP, ("approved", time.time(), signup_id)).rowcount == 0:
            return None
        user_id = add_user(conn, signup.name, groups=groups)
        if team_id is not None:
            set_member(conn, team_id, user_id, role)
    return get_user_by_id(conn, user_id)


class SqliteSignups:
    """Mixed into :class:`~.sqlite_admin.SqliteAdmin`, whose ``_read`` and ``_write`` it uses."""

    _read: Callable[..., Awaitable[Any]]
    _write: Callable[..., Awaitable[Any]]

    async def add_signup(self, name: str, team: str, role: str, group: str) -> tuple[SignupRecord, bool]:
        added: tuple[SignupRecord, bool] = await self._write(add_signup, name, team, role, group)
        return added

    async def get_signup(self, signup_id: int) -> SignupRecord | None:
        found: SignupRecord | None = await self._read(get_signup, signup_id)
        return found

    async def find_signup(self, name: str) -> SignupRecord | None:
        found: SignupRecord | None = await self._read(find_signup, name)
        return found

    async def list_signups(self, status: str | None = None) -> list[SignupRecord]:
        listed: list[SignupRecord] = await self._read(list_signups, status)
        return listed

    async def reject_signup(self, signup_id: int) -> bool:
        return bool(await self._write(reject_signup, signup_id))

    async def approve_signup(self, signup_id: int, groups: Sequence[str], team_id: int | None, role: str) -> UserRecord | None:
        user: UserRecord | None = await self._write(approve_signup, signup_id, list(groups), team_id, role)
        return user
