"""Kept answers (:mod:`gateway_core.kept_responses`) on PostgreSQL: the
:class:`~gateway_core.kept_responses.ResponseStore` port on the table of
:mod:`.stored_responses_schema`, with the statements of :mod:`..stored_responses`
numbered for asyncpg."""

from __future__ import annotations

import asyncpg

from gateway_core.kept_responses import StoredResponse
from gateway_core.store import stored_responses as shared
from .admin_base import changed
from .faults import Attempt
from .migrate import numbered
from .store import PostgresStore

_SAVE = numbered(shared.SAVE)
_GET = numbered(shared.GET)
_DELETE = numbered(shared.DELETE)
_SWEEP = numbered(shared.SWEEP)
_TRIM = (
    "DELETE FROM stored_responses WHERE user_id = $1 AND id NOT IN "
    "(SELECT id FROM stored_responses WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2)"
)


class PostgresResponses:
    """Implements :class:`~gateway_core.kept_responses.ResponseStore` on a :class:`PostgresStore`."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def save(self, record: StoredResponse, keep_per_user: int) -> None:
        async def save(conn: asyncpg.Connection, attempt: Attempt) -> None:
            async with conn.transaction():
                await conn.execute(_SAVE, *shared.values(record), timeout=attempt.remaining)
                await conn.execute(_SWEEP, record.created_at, timeout=attempt.remaining)
                await conn.execute(_TRIM, record.user_id, keep_per_user, timeout=attempt.remaining)

        await self._store.run("stored_responses.save", save, write=True)

    async def get(self, response_id: str, user_id: int, now: float) -> StoredResponse | None:
        async def get(conn: asyncpg.Connection, attempt: Attempt) -> StoredResponse | None:
            row = await conn.fetchrow(_GET, response_id, user_id, now, timeout=attempt.remaining)
            return shared.record_of(row) if row is not None else None

        return await self._store.run("stored_responses.get", get)

    async def delete(self, response_id: str, user_id: int) -> bool:
        async def delete(conn: asyncpg.Connection, attempt: Attempt) -> bool:
            return changed(await conn.execute(_DELETE, response_id, user_id, timeout=attempt.remaining)) > 0

        return await self._store.run("stored_responses.delete", delete, write=True)

    async def sweep(self, now: float) -> int:
        async def sweep(conn: asyncpg.Connection, attempt: Attempt) -> int:
            return changed(await conn.execute(_SWEEP, now, timeout=attempt.remaining))

        return await self._store.run("stored_responses.sweep", sweep, write=True)
