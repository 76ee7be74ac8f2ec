"""The SQL handles of :mod:`gateway_core.sql` on the SQLite store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..sql import SQLITE, Params, Row, SchemaHandle
from ..sql import Migrate
from .connection import fetch_all, fetch_one

if TYPE_CHECKING:
    import sqlite_utils

T = TypeVar("T")


class Runs(Protocol):
    """What a :class:`SqliteSql` needs of the store (:class:`~.sqlite_store.Store`, whose
    migrations are built from this module's handles: it is named here by this Protocol)."""

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def write(self, fn: Callable[..., T], *args: Any) -> T: ...


class SqliteSchema:
    """A migration's handle on one SQLite connection (inside its transaction)."""

    dialect = SQLITE

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> None:
        self._conn.execute(sql, tuple(params))

    @property
    def database(self) -> sqlite_utils.Database:
        """The same connection as a ``sqlite_utils.Database`` (the core's own migrations)."""
        import sqlite_utils  # only when a migration runs: commands that read never load it

        return sqlite_utils.Database(self._conn, execute_plugins=False)


def sqlite_only(migrate: Callable[[sqlite_utils.Database], None]) -> Migrate:
    """A migration written with sqlite-utils, as a migration of the dialect-neutral kind."""

    def run(schema: SchemaHandle) -> None:
        if not isinstance(schema, SqliteSchema):
            raise TypeError(f"{migrate.__name__} is written for SQLite, not {schema.dialect}")
        migrate(schema.database)

    run.__name__ = migrate.__name__
    run.__doc__ = migrate.__doc__
    return run


class SqliteSql:
    """The run-time :class:`gateway_core.sql.SqlHandle` of a store: reads
    on its reader threads, writes through its group-commit writer."""

    dialect = SQLITE

    def __init__(self, store: Runs) -> None:
        self._store = store

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        row = await self._store.read(fetch_one, sql, tuple(params))
        return dict(row) if row is not None else None

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return [dict(row) for row in await self._store.read(fetch_all, sql, tuple(params))]

    async def execute(self, sql: str, params: Params = ()) -> int:
        return await self._store.write(_execute, sql, tuple(params))


def _execute(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> int:
    return conn.execute(sql, params).rowcount
