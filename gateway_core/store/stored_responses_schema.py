"""Migration ``0012_stored_responses`` on SQLite: the table of kept answers
(:mod:`gateway_core.kept_responses`; the same table on PostgreSQL:
:mod:`.postgres.stored_responses`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


MIGRATION_NAME = "0012_stored_responses"


def migrate_0012_stored_responses(db: sqlite_utils.Database) -> None:
    """``stored_responses``: answers kept for their owner until ``expires_at``."""
    db.execute(
        "CREATE TABLE stored_responses (id TEXT PRIMARY KEY, user_id INTEGER NOT NULL, key_id INTEGER, "
        "model TEXT NOT NULL, channel_id INTEGER, created_at REAL NOT NULL, expires_at REAL NOT NULL, "
        "response TEXT NOT NULL, items TEXT)"
    )
    db.execute("CREATE INDEX idx_stored_responses_user ON stored_responses (user_id, created_at)")
    db.execute("CREATE INDEX idx_stored_responses_expires ON stored_responses (expires_at)")
