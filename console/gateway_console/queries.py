"""The console's own tables (settings, sign-in sessions) and the sign-in lookup,
in SQL every store dialect accepts, through the gateway's SQL handle
(``services.sql``). Everything else the console reads or changes goes through
the admin layer (:mod:`gateway_core.admin`), like the CLI."""

from __future__ import annotations

import time
from typing import Any

from gateway_core.sql import SqlHandle

from .migrations import SESSION_SECRET


async def session_secret(sql: SqlHandle) -> str | None:
    row = await sql.fetch_one("SELECT value FROM console_settings WHERE name = ?", (SESSION_SECRET,))
    return str(row["value"]) if row else None


async def create_session(sql: SqlHandle, sid: str, user_id: int, expires_at: float, client_ip: str | None) -> None:
    now = time.time()
    await sql.execute("DELETE FROM console_sessions WHERE expires_at <= ?", (now,))
    await sql.execute(
        "INSERT INTO console_sessions (id, user_id, created_at, expires_at, client_ip) VALUES (?, ?, ?, ?, ?)",
        (sid, user_id, now, expires_at, client_ip),
    )


async def find_session(sql: SqlHandle, sid: str) -> dict[str, Any] | None:
    """The live session ``sid`` with its user, when the user is enabled and the
    session began after the user's ``sessions_after`` (set when the password is
    changed or reset, and when the user is disabled or enabled again)."""
    return await sql.fetch_one(
        "SELECT s.id AS sid, s.expires_at, u.id, u.name, u.is_admin FROM console_sessions AS s "
        "JOIN users AS u ON u.id = s.user_id WHERE s.id = ? AND s.expires_at > ? AND u.enabled = 1 "
        "AND s.created_at > COALESCE(u.sessions_after, 0)",
        (sid, time.time()),
    )


async def delete_session(sql: SqlHandle, sid: str) -> None:
    await sql.execute("DELETE FROM console_sessions WHERE id = ?", (sid,))


async def sign_in_record(sql: SqlHandle, name: str) -> tuple[int, str | None] | None:
    """``(user id, password hash)`` of an enabled user, else ``None``."""
    row = await sql.fetch_one("SELECT id, password_hash FROM users WHERE name = ? AND enabled = 1", (name,))
    return (int(row["id"]), row["password_hash"]) if row else None
