"""The run-time :class:`gateway_core.sql.SqlHandle` on PostgreSQL: plugins' own
tables (the console's sessions), queried with ``?`` placeholders.

The placeholders become PostgreSQL's ``$1, $2, …`` (:func:`.migrate.numbered`:
not inside string literals or quoted names); each call is one statement, hence
its own transaction, run on the store's pool (retried and timed as the request
path's calls), a write shielded from its caller's cancellation.
"""

from __future__ import annotations

import asyncpg

from gateway_core.sql import POSTGRESQL, Params, Row
from .admin_base import changed
from .faults import Attempt
from .migrate import numbered
from .store import PostgresStore


class PostgresSql:
    """Implements :class:`gateway_core.sql.SqlHandle` on a :class:`PostgresStore`."""

    dialect = POSTGRESQL

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        statement, values = numbered(sql), tuple(params)

        async def one(conn: asyncpg.Connection, attempt: Attempt) -> Row | None:
            row = await conn.fetchrow(statement, *values, timeout=attempt.remaining)
            return dict(row) if row is not None else None

        return await self._store.run("sql.fetch_one", one)

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        statement, values = numbered(sql), tuple(params)

        async def every(conn: asyncpg.Connection, attempt: Attempt) -> list[Row]:
            return [dict(row) for row in await conn.fetch(statement, *values, timeout=attempt.remaining)]

        return await self._store.run("sql.fetch_all", every)

    async def execute(self, sql: str, params: Params = ()) -> int:
        statement, values = numbered(sql), tuple(params)

        async def write(conn: asyncpg.Connection, attempt: Attempt) -> int:
            return changed(await conn.execute(statement, *values, timeout=attempt.remaining))

        return await self._store.run("sql.execute", write, write=True)
