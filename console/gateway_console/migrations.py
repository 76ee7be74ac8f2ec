"""The console's schema: its settings (the session-signing secret, generated
once) and its sign-in sessions."""

from __future__ import annotations

import secrets
import time

import sqlite_utils

MIGRATION_NAME = "8000_console"
SESSION_SECRET = "session_secret"


def migrate_console(db: sqlite_utils.Database) -> None:
    db["console_settings"].create({"name": str, "value": str, "created_at": float}, pk="name", not_null={"value"})
    db["console_settings"].insert(
        {"name": SESSION_SECRET, "value": secrets.token_hex(32), "created_at": time.time()}
    )
    # a session row is keyed by the SHA-256 of the cookie's random token, so a
    # copy of the database does not hand out live sessions
    db["console_sessions"].create(
        {"id": str, "user_id": int, "created_at": float, "expires_at": float, "client_ip": str},
        pk="id",
        not_null={"user_id", "created_at", "expires_at"},
        foreign_keys=[("user_id", "users", "id")],
    )
    db["console_sessions"].create_index(["user_id"])
    db["console_sessions"].create_index(["expires_at"])
