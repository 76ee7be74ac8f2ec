"""Kept answers (:mod:`gateway_core.kept_responses`) on SQLite: migration
``0012_stored_responses`` (:mod:`.stored_responses_schema`) and the :class:`~gateway_core.kept_responses.ResponseStore`
port (the same table and statements on PostgreSQL: :mod:`.postgres.stored_responses`)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from ..kept_responses import StoredResponse
from .connection import atomic

if TYPE_CHECKING:
    from .sqlite_store import Store

COLUMNS = "id, user_id, key_id, model, channel_id, created_at, expires_at, response, items"
SAVE = (
    f"INSERT INTO stored_responses ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET key_id = excluded.key_id, model = excluded.model, channel_id = excluded.channel_id, "
    "created_at = excluded.created_at, expires_at = excluded.expires_at, response = excluded.response, items = excluded.items "
    "WHERE stored_responses.user_id = excluded.user_id"
)
GET = f"SELECT {COLUMNS} FROM stored_responses WHERE id = ? AND user_id = ? AND expires_at > ?"
DELETE = "DELETE FROM stored_responses WHERE id = ? AND user_id = ?"
SWEEP = "DELETE FROM stored_responses WHERE expires_at <= ?"
# ?1 user, ?2 how many of the newest to keep
TRIM = (
    "DELETE FROM stored_responses WHERE user_id = ?1 AND id NOT IN "
    "(SELECT id FROM stored_responses WHERE user_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2)"
)


def values(record: StoredResponse) -> tuple[Any, ...]:
    return (
        record.id, record.user_id, record.key_id, record.model, record.channel_id,
        record.created_at, record.expires_at, record.response, record.items,
    )  # fmt: skip


def record_of(row: Any) -> StoredResponse:
    id_, user_id, key_id, model, channel_id, created_at, expires_at, response, items = tuple(row)
    return StoredResponse(
        id=id_, user_id=user_id, key_id=key_id, model=model, channel_id=channel_id,
        created_at=created_at, expires_at=expires_at, response=response, items=items,
    )  # fmt: skip


def save(conn: sqlite3.Connection, record: StoredResponse, keep_per_user: int) -> None:
    with atomic(conn):
        conn.execute(SAVE, values(record))
        conn.execute(SWEEP, (record.created_at,))
        conn.execute(TRIM, (record.user_id, keep_per_user))


def get(conn: sqlite3.Connection, response_id: str, user_id: int, now: float) -> StoredResponse | None:
    row = conn.execute(GET, (response_id, user_id, now)).fetchone()
    return record_of(row) if row is not None else None


def delete(conn: sqlite3.Connection, response_id: str, user_id: int) -> bool:
    return conn.execute(DELETE, (response_id, user_id)).rowcount > 0


def sweep(conn: sqlite3.Connection, now: float) -> int:
    return conn.execute(SWEEP, (now,)).rowcount


class SqliteResponses:
    """Implements :class:`~gateway_core.kept_responses.ResponseStore` on a :class:`Store`:
    reads on its reader threads, writes through its group-commit writer."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def save(self, record: StoredResponse, keep_per_user: int) -> None:
        await self._store.write(save, record, keep_per_user)

    async def get(self, response_id: str, user_id: int, now: float) -> StoredResponse | None:
        return await self._store.read(get, response_id, user_id, now)

    async def delete(self, response_id: str, user_id: int) -> bool:
        return await self._store.write(delete, response_id, user_id)

    async def sweep(self, now: float) -> int:
        return await self._store.write(sweep, now)
