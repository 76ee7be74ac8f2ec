"""The console's schema: its settings (the session-signing secret, generated
once) and its sign-in sessions, in SQL both SQLite and PostgreSQL accept."""

from __future__ import annotations

import secrets
import time

from gateway_core.sql import SQLITE, SchemaHandle

MIGRATION_NAME = "8000_console"
SESSION_SECRET = "session_secret"


def migrate_console(schema: SchemaHandle) -> None:
    seconds = "REAL" if schema.dialect == SQLITE else "DOUBLE PRECISION"  # Unix times
    schema.execute(f"CREATE TABLE console_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL, created_at {seconds})")
    schema.execute(
        "INSERT INTO console_settings (name, value, created_at) VALUES (?, ?, ?)",
        (SESSION_SECRET, secrets.token_hex(32), time.time()),
    )
    # a session row is keyed by the SHA-256 of the cookie's random token, so a
    # copy of the database does not hand out live sessions
    schema.execute(
        "CREATE TABLE console_sessions (id TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users (id), "
        f"created_at {seconds} NOT NULL, expires_at {seconds} NOT NULL, client_ip TEXT)"
    )
    schema.execute("CREATE INDEX idx_console_sessions_user_id ON console_sessions (user_id)")
    schema.execute("CREATE INDEX idx_console_sessions_expires_at ON console_sessions (expires_at)")
