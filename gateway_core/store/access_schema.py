"""Migration ``0007_access_tokens_audit`` on SQLite: personal access tokens,
the audit log of writes, and the idempotency keys of credits (the same tables
on PostgreSQL: :mod:`.postgres.access`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .access_records import SCOPES

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


MIGRATION_NAME = "0007_access_tokens_audit"


def migrate_0007_access_tokens_audit(db: sqlite_utils.Database) -> None:
    """Personal access tokens, the audit log of writes, and the idempotency
    keys of credits."""
    scopes = ", ".join(f"'{scope}'" for scope in SCOPES)
    db.execute(
        "CREATE TABLE access_tokens (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users (id), "
        "name TEXT NOT NULL, token_hash TEXT NOT NULL, prefix TEXT NOT NULL, "
        f"scope TEXT NOT NULL CHECK (scope IN ({scopes})), created_at REAL NOT NULL, expires_at REAL, "
        "revoked_at REAL, last_used_at REAL)"
    )
    db.execute("CREATE UNIQUE INDEX idx_access_tokens_token_hash ON access_tokens (token_hash)")
    db.execute("CREATE INDEX idx_access_tokens_user_id ON access_tokens (user_id)")
    db.execute(
        "CREATE TABLE audit_log (id INTEGER PRIMARY KEY, created_at REAL NOT NULL, via TEXT NOT NULL, user_id INTEGER, "
        "user_name TEXT, token_id INTEGER, request_id TEXT, action TEXT NOT NULL, target TEXT NOT NULL, "
        "before_json TEXT, after_json TEXT)"
    )
    db.execute("CREATE INDEX idx_audit_log_target ON audit_log (target, id)")
    db.execute(
        "CREATE TABLE idempotency_keys (key TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users (id), "
        "kind TEXT NOT NULL, amount_micros INTEGER NOT NULL, note TEXT, "
        "ledger_id INTEGER NOT NULL, created_at REAL NOT NULL)"
    )




def check_scope(scope: str) -> str:
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    return scope
