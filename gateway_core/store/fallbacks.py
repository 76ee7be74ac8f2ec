"""Model fallbacks on SQLite, and migration 0013 of both stores (the table of
fallbacks, and the usage log's ``served_model``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlite3
import time

from .request_store import ModelFallback

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


_TABLE = """CREATE TABLE model_fallbacks (
    scope TEXT NOT NULL CHECK (scope IN ('group', 'key')),
    owner TEXT NOT NULL,
    model TEXT NOT NULL,
    fallback TEXT NOT NULL,
    created_at {time} NOT NULL,
    PRIMARY KEY (scope, owner, model)
)"""
# the model that served a request, when a fallback did (NULL: the model asked for)
_SERVED = "ALTER TABLE usage_logs ADD COLUMN served_model TEXT"

MODEL_FALLBACKS_POSTGRES = f"{_TABLE.format(time='DOUBLE PRECISION')};\n{_SERVED};\n"


def migrate_0013_model_fallbacks(db: sqlite_utils.Database) -> None:
    """``model_fallbacks``: per group or per key, the model to serve when every
    channel of another failed before its first byte; ``usage_logs.served_model``."""
    db.execute(_TABLE.format(time="REAL"))
    db.execute(_SERVED)


_COLUMNS = "scope, owner, model, fallback, created_at"
UPSERT = (
    f"INSERT INTO model_fallbacks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (scope, owner, model) DO UPDATE SET fallback = excluded.fallback, created_at = excluded.created_at"
)
DELETE = "DELETE FROM model_fallbacks WHERE scope = ? AND owner = ? AND model = ?"
LIST = f"SELECT {_COLUMNS} FROM model_fallbacks ORDER BY scope, owner, model"


def set_fallback(conn: sqlite3.Connection, scope: str, owner: str, model: str, fallback: str) -> ModelFallback:
    record = ModelFallback(scope, owner, model, fallback, time.time())
    conn.execute(UPSERT, (record.scope, record.owner, record.model, record.fallback, record.created_at))
    return record


def delete_fallback(conn: sqlite3.Connection, scope: str, owner: str, model: str) -> bool:
    return conn.execute(DELETE, (scope, owner, model)).rowcount > 0


def list_fallbacks(conn: sqlite3.Connection) -> list[ModelFallback]:
    return [ModelFallback(*row) for row in conn.execute(LIST)]
