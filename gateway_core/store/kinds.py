"""The store the core registers through ``register_stores``: SQLite, the embedded
default (a file path or ``sqlite:///path``). PostgreSQL is a plugin's
(``plugins/postgres``)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, cast

from ..hookspecs import hookimpl
from ..stores import CopyEnd, StoreKind, StorePorts

if TYPE_CHECKING:
    from ..admin.port import AdminStore
    from .request_store import RequestStore
    from ..hookspecs import RegisterStore
    from ..sql import Migration
    from .sqlite_store import Store


def sqlite_path(url: str) -> str:
    """The file of a SQLite ``url`` (a path or ``sqlite:///path``)."""
    return url.removeprefix("sqlite:///")


class SqliteKind(StoreKind):
    """One SQLite file, written by one group-commit writer (:mod:`.sqlite_store`)."""

    name = "sqlite"
    schemes = ("sqlite",)
    default = True

    def owns(self, store: RequestStore) -> bool:
        from .sqlite_store import Store

        return isinstance(store, Store)

    def location(self, url: str) -> str:
        return sqlite_path(url)

    def missing(self, url: str) -> str | None:
        path = sqlite_path(url)
        if path == ":memory:" or path.startswith("file:") or os.path.exists(path):
            return None
        return f"no database at {os.path.abspath(path)}"

    def open(self, url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0) -> Store:
        from .sqlite_store import Store

        return Store(sqlite_path(url), migrations, busy_timeout_ms=max(1, round(timeout * 1000)))  # no pool: one writer

    def ports(self, store: RequestStore) -> StorePorts:
        from .sqlite_admin import SqliteAdmin
        from .sqlite_sql import SqliteSql
        from .stored_responses import SqliteResponses

        sqlite = cast("Store", store)  # or a test's wrapper standing in for one
        return StorePorts(admin=SqliteAdmin(sqlite), sql=SqliteSql(sqlite), responses=SqliteResponses(sqlite))

    @asynccontextmanager
    async def admin(
        self, url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0
    ) -> AsyncIterator[AdminStore]:
        from .sqlite_admin import SqliteAdmin, translated_errors

        store = self.open(url, migrations, timeout=timeout)
        with translated_errors():
            await store.start()  # migrates
        try:
            yield SqliteAdmin(store)
        finally:
            await store.close()

    async def migrate(self, url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> tuple[str, list[str]]:
        import asyncio  # here: every relaygate command registers this module, few open a database

        store = self.open(url, migrations, timeout=timeout)
        return store.path, await asyncio.to_thread(store.migrate)

    async def startup_problem(self, url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> str | None:
        """The file must be a Relaygate database this process can write; the
        pending migrations are applied (the embedded store migrates itself)."""
        import asyncio

        from .sqlite_check import sqlite_startup_problem

        return await asyncio.to_thread(sqlite_startup_problem, sqlite_path(url), migrations)

    async def copy_end(self, url: str) -> CopyEnd:
        from .copy import SqliteEnd

        return SqliteEnd(sqlite_path(url))


BUILT_IN: tuple[StoreKind, ...] = (SqliteKind(),)


@hookimpl
def register_stores(register: RegisterStore) -> None:
    for kind in BUILT_IN:
        register(kind)
