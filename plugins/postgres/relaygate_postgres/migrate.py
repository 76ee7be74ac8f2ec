"""Applying named migrations to a PostgreSQL database, once, from any replica.

Migrations are the dialect-neutral kind every plugin registers
(:data:`gateway_core.types.Migration`: ``migrate(schema)`` with a
:class:`gateway_core.sql.SchemaHandle`); on PostgreSQL the core's own are
scripts of :mod:`.schema` under SQLite's names (:func:`for_postgresql`).

Each pending migration runs in its own transaction (PostgreSQL's DDL is
transactional: a failing migration leaves nothing behind) that first takes a
transaction-level advisory lock, then looks again at ``schema_migrations``:
replicas migrating at once queue on the lock, and the ones after the first find
the work done. The lock is released by the commit or rollback, never leaked by a
dead connection.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import asyncpg

from gateway_core.sql import POSTGRESQL, Params
from gateway_core.sql import Migrate, Migration

# pg_advisory_xact_lock's key for migrations: "relaygat" in ASCII
MIGRATION_LOCK = 0x72656C6179676174

_CREATE_TABLE = "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION)"
_QMARK_OR_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?")


class SchemaOutdated(RuntimeError):
    """The database's schema is older than the code: migrations are pending."""

    def __init__(self, store: str, pending: Sequence[str]) -> None:
        super().__init__(
            f"the schema of {store} is older than this code (pending: {', '.join(pending)}): "
            "run `relaygate migrate`"
        )
        self.pending = list(pending)


def numbered(sql: str) -> str:
    """``sql``'s ``?`` placeholders as PostgreSQL's ``$1, $2, …`` (not inside quotes)."""
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if match.group() != "?":
            return match.group()
        count += 1
        return f"${count}"

    return _QMARK_OR_QUOTED.sub(replace, sql)


class PostgresSchema:
    """A migration's :class:`~gateway_core.sql.SchemaHandle` on PostgreSQL. A
    migration is synchronous and the driver is not: its statements are kept, in
    order, and run by :func:`apply_migrations` inside the migration's transaction."""

    dialect = POSTGRESQL

    def __init__(self) -> None:
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: Params = ()) -> None:
        self.statements.append((numbered(sql) if params else sql, tuple(params)))


def script(sql: str) -> Migrate:
    """A migration that runs ``sql``, a PostgreSQL script of several statements."""

    def migrate(schema: Any) -> None:
        if schema.dialect != POSTGRESQL:
            raise TypeError(f"this migration is written for PostgreSQL, not {schema.dialect}")
        schema.execute(sql)

    return migrate


async def applied(conn: asyncpg.Connection) -> set[str]:
    """The names in ``schema_migrations`` (none when the table does not exist yet)."""
    if await conn.fetchval("SELECT to_regclass('schema_migrations')") is None:
        return set()
    return {row["name"] for row in await conn.fetch("SELECT name FROM schema_migrations")}


async def pending(conn: asyncpg.Connection, migrations: Sequence[Migration]) -> list[str]:
    """The names of ``migrations`` not applied yet, in the order they would run."""
    done = await applied(conn)
    return sorted(name for name, _ in migrations if name not in done)


async def apply_migrations(conn: asyncpg.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the pending ``migrations`` in name order; return the names applied here."""
    names = [name for name, _ in migrations]
    if len(set(names)) != len(names):
        raise ValueError(f"two migrations share a name: {sorted({n for n in names if names.count(n) > 1})}")
    todo = await pending(conn, migrations)
    by_name = dict(migrations)
    done: list[str] = []
    for name in todo:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            await conn.execute(_CREATE_TABLE)
            if await conn.fetchval("SELECT 1 FROM schema_migrations WHERE name = $1", name):
                continue  # another replica applied it while this one waited for the lock
            schema = PostgresSchema()
            by_name[name](schema)
            for sql, params in schema.statements:
                await conn.execute(sql, *params)
            await conn.execute("INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)", name, time.time())
        done.append(name)
    return done
