"""PostgreSQL as a store kind: a server several replicas share, migrated by
``relaygate migrate`` only (replicas never race to change a shared schema).
Nothing here imports asyncpg until a ``postgresql://`` URL is used."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, cast

from gateway_core.stores import CopyEnd, StoreKind, StorePorts

if TYPE_CHECKING:
    from gateway_core.admin.port import AdminStore
    from gateway_core.store.request_store import RequestStore
    from gateway_core.sql import Migration
    from .store import PostgresStore


class PostgresKind(StoreKind):
    name = "postgresql"
    schemes = ("postgresql", "postgres")
    shared = True

    def owns(self, store: RequestStore) -> bool:
        module = sys.modules.get("relaygate_postgres.store")  # never imported: not one of ours
        return module is not None and isinstance(store, module.PostgresStore)

    def location(self, url: str) -> str:
        from .faults import store_name

        return store_name(url)

    def open(self, url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0) -> PostgresStore:
        """At most ``pool_size`` connections, each call waiting at most ``timeout``
        seconds; the core's PostgreSQL migrations in place of SQLite's
        (:mod:`relaygate_postgres.schema`)."""
        from .schema import for_postgresql
        from .store import PostgresStore

        return PostgresStore(url, migrations=for_postgresql(migrations), max_size=pool_size, timeout=timeout)

    def ports(self, store: RequestStore) -> StorePorts:
        from .admin import PostgresAdmin
        from .sql_handle import PostgresSql
        from .stored_responses import PostgresResponses

        postgres = cast("PostgresStore", store)
        return StorePorts(admin=PostgresAdmin(postgres), sql=PostgresSql(postgres), responses=PostgresResponses(postgres))

    @asynccontextmanager
    async def admin(
        self, url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0
    ) -> AsyncIterator[AdminStore]:
        """Migrated (as SQLite's migrates when it starts), started for the block,
        closed after; failures as ``StoreFailure``."""
        from .admin import PostgresAdmin
        from .admin_base import translated_errors

        store = self.open(url, migrations, pool_size=pool_size, timeout=timeout)
        with translated_errors():
            await store.migrate()
            await store.start()
        try:
            yield PostgresAdmin(store)
        finally:
            await store.close()

    async def migrate(self, url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> tuple[str, list[str]]:
        """Raises :class:`~gateway_core.store.request_store.StoreUnavailable` when the server cannot be reached."""
        store = self.open(url, migrations, timeout=timeout)
        return store.name, await store.migrate()

    async def startup_problem(self, url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> str | None:
        """The server must answer and its schema be migrated (``relaygate migrate``)."""
        from gateway_core.store.request_store import StoreUnavailable

        store = self.open(url, migrations, timeout=timeout)
        try:
            todo = await store.pending_migrations()
        except StoreUnavailable as exc:
            return str(exc)
        if todo:
            return f"the schema of {store.name} is older than this code (pending: {', '.join(todo)}): run `relaygate migrate`"
        return None

    async def copy_end(self, url: str) -> CopyEnd:
        from .copy import PostgresEnd

        return await PostgresEnd.open(url)
