"""The store: the only code that touches the database.

:class:`Store` runs domain functions — plain ``fn(conn, *args)`` from the
modules below — on reader threads or through the group-commit writer. The
request path sees it through its port (:class:`gateway_core.request_store.RequestStore`),
the admin layer through :class:`~.sqlite_admin.SqliteAdmin`, plugins' own
tables through :class:`~.sqlite_sql.SqliteSql`. On PostgreSQL (``postgres/``)
the same three ports are ``PostgresStore``, ``PostgresAdmin`` and ``PostgresSql``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, cast

from ..admin.port import AdminStore
from ..request_store import RequestStore
from ..sql import SqlHandle
from ..kept_responses import ResponseStore
from ..types import Migration
from . import channel_health, channels, groups, keys, limits, prices, usage, users, wallet
from .connection import atomic
from .migrations import CORE_MIGRATIONS, apply_migrations
from .sqlite_admin import SqliteAdmin, translated_errors
from .sqlite_sql import SqliteSql
from .sqlite_store import Store

if TYPE_CHECKING:
    from .postgres import PostgresStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(
    url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0
) -> Store | PostgresStore:
    """The store for ``url``: a file path, or ``sqlite:///relative/path`` /
    ``sqlite:////absolute/path`` for the same; ``postgresql://user:pass@host:port/db``
    (or ``postgres://``) for PostgreSQL, which runs the core's PostgreSQL
    migrations in place of SQLite's (:mod:`gateway_core.store.postgres.schema`)
    with at most ``pool_size`` connections, each call waiting at most ``timeout``
    seconds (``[gateway] db_pool_size`` and ``db_timeout``; SQLite has no pool, and
    waits ``timeout`` seconds for a lock another process holds)."""
    if is_postgresql(url):
        from .postgres import PostgresStore, for_postgresql

        return PostgresStore(url, migrations=for_postgresql(migrations), max_size=pool_size, timeout=timeout)
    return Store(sqlite_path(url), migrations, busy_timeout_ms=max(1, round(timeout * 1000)))


def is_postgresql(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (else a SQLite file)."""
    return url.startswith(POSTGRES_SCHEMES)


def sqlite_path(url: str) -> str:
    """The file of a SQLite ``url`` (a path or ``sqlite:///path``)."""
    return url.removeprefix("sqlite:///")


def admin_ports(store: RequestStore) -> tuple[AdminStore, SqlHandle]:
    """The admin layer's port and plugins' SQL handle on the database of a store
    made by :func:`open_store` (or of one standing in for it, as tests' wrappers
    do: anything but a :class:`PostgresStore` is taken for SQLite's)."""
    postgres = _postgres_ports(store)
    if postgres is not None:
        return postgres
    sqlite = cast(Store, store)
    return SqliteAdmin(sqlite), SqliteSql(sqlite)


def _postgres_ports(store: RequestStore) -> tuple[AdminStore, SqlHandle] | None:
    """PostgreSQL's ports when ``store`` is a :class:`PostgresStore` (asyncpg is
    imported only when the PostgreSQL store already was)."""
    module = sys.modules.get("gateway_core.store.postgres")
    if module is None or not isinstance(store, module.PostgresStore):
        return None
    from .postgres.admin import PostgresAdmin
    from .postgres.sql_handle import PostgresSql

    return PostgresAdmin(store), PostgresSql(store)


def response_store(store: RequestStore) -> ResponseStore:
    """The kept answers' port (:mod:`gateway_core.kept_responses`) on the database
    of a store made by :func:`open_store` (as :func:`admin_ports` tells them apart)."""
    module = sys.modules.get("gateway_core.store.postgres")
    if module is not None and isinstance(store, module.PostgresStore):
        from .postgres.stored_responses import PostgresResponses

        return PostgresResponses(store)
    from .stored_responses import SqliteResponses

    return SqliteResponses(cast(Store, store))


@asynccontextmanager
async def open_admin(
    url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0
) -> AsyncIterator[AdminStore]:
    """The admin port on the database at ``url``, its store started (and migrated)
    for the block and closed after: what one ``relaygate`` command runs on (with
    ``[gateway] db_pool_size`` and ``db_timeout`` on PostgreSQL)."""
    store = open_store(url, migrations, pool_size=pool_size, timeout=timeout)
    if not isinstance(store, Store):
        async with _open_postgres_admin(store) as admin:
            yield admin
        return
    with translated_errors():
        await store.start()
    try:
        yield SqliteAdmin(store)
    finally:
        await store.close()


@asynccontextmanager
async def _open_postgres_admin(store: PostgresStore) -> AsyncIterator[AdminStore]:
    """The admin port on a PostgreSQL store: migrated (as SQLite's ``open_admin``
    migrates), started for the block, closed after; failures as ``StoreFailure``."""
    from .postgres.admin import PostgresAdmin
    from .postgres.admin_base import translated_errors as postgres_errors

    with postgres_errors():
        await store.migrate()
        await store.start()
    try:
        yield PostgresAdmin(store)
    finally:
        await store.close()


__all__ = [
    "CORE_MIGRATIONS",
    "Store",
    "apply_migrations",
    "atomic",
    "admin_ports",
    "open_admin",
    "open_store",
    "response_store",
    "is_postgresql",
    "sqlite_path",
    "channel_health",
    "channels",
    "groups",
    "keys",
    "limits",
    "prices",
    "usage",
    "users",
    "wallet",
]
