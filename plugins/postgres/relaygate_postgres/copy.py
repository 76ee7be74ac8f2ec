"""A PostgreSQL database as either end of ``relaygate copy-store``
(:mod:`gateway_core.store.copy`): read through a cursor in one REPEATABLE READ
snapshot, written with ``COPY`` in one transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import asyncpg

from gateway_core.records import AuditReport
from gateway_core.store.request_store import StoreUnavailable
from .audit import audit
from .faults import describe, store_name

BATCH = 5000


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class PostgresEnd:
    def __init__(self, conn: asyncpg.Connection, name: str) -> None:
        self._conn = conn
        self.name = name
        self._transaction: Any = None

    @classmethod
    async def open(cls, url: str) -> PostgresEnd:
        name = store_name(url)
        try:
            conn = await asyncpg.connect(url, timeout=10, command_timeout=None)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
            raise StoreUnavailable(f"{name} is unreachable: {describe(exc)}") from exc
        return cls(conn, name)

    async def applied(self) -> set[str]:
        if await self._conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
            return set()
        return {row["name"] for row in await self._conn.fetch("SELECT name FROM schema_migrations")}

    async def tables(self) -> list[str]:
        rows = await self._conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE' ORDER BY table_name"
        )
        return [row["table_name"] for row in rows]

    async def columns(self, table: str) -> list[str]:
        rows = await self._conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = $1 ORDER BY ordinal_position",
            table,
        )
        return [row["column_name"] for row in rows]

    async def parents(self, table: str) -> set[str]:
        rows = await self._conn.fetch(
            "SELECT confrelid::regclass::text AS parent FROM pg_constraint WHERE contype = 'f' AND conrelid = to_regclass($1)",
            _quoted(table),
        )
        return {row["parent"].strip('"') for row in rows}

    async def count(self, table: str) -> int:
        return int(await self._conn.fetchval(f"SELECT count(*) FROM {_quoted(table)}"))

    async def seeded_only(self, table: str, keys: set[str]) -> bool:
        if not keys:
            return await self._conn.fetchval(f"SELECT NOT EXISTS (SELECT 1 FROM {_quoted(table)})")
        return await self._conn.fetchval(
            f"SELECT NOT EXISTS (SELECT 1 FROM {_quoted(table)} WHERE NOT (name = ANY($1::text[])))", sorted(keys)
        )

    async def rows(self, table: str, columns: Sequence[str]) -> AsyncIterator[list[tuple[Any, ...]]]:
        query = f"SELECT {', '.join(map(_quoted, columns))} FROM {_quoted(table)}"
        async with self._conn.transaction(isolation="repeatable_read", readonly=True):
            cursor = await self._conn.cursor(query)
            while batch := await cursor.fetch(BATCH):
                yield [tuple(row) for row in batch]

    async def begin(self) -> None:
        self._transaction = self._conn.transaction()
        await self._transaction.start()

    async def clear(self, table: str) -> None:
        await self._conn.execute(f"DELETE FROM {_quoted(table)}")

    async def insert(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        await self._conn.copy_records_to_table(table, records=rows, columns=list(columns))

    async def finish(self) -> None:
        """Set every identity's sequence past the largest value copied."""
        identities = await self._conn.fetch(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND is_identity = 'YES'"
        )
        for row in identities:
            table, column = _quoted(row["table_name"]), _quoted(row["column_name"])
            await self._conn.execute(
                f"SELECT setval(pg_get_serial_sequence($1, $2), max({column})) FROM {table} HAVING max({column}) IS NOT NULL",
                table, row["column_name"],
            )  # fmt: skip

    async def audit(self) -> AuditReport:
        return await audit(self._conn)

    async def commit(self) -> None:
        await self._transaction.commit()
        self._transaction = None

    async def close(self) -> None:
        if self._transaction is not None:
            await self._transaction.rollback()
        await self._conn.close()
