"""The store: the only code that touches the database.

:class:`Store` runs domain functions — plain ``fn(conn, *args)`` from the
modules below — on reader threads or through the group-commit writer. The
request path sees it through its port (:class:`gateway_core.request_store.RequestStore`),
the admin layer through :class:`~.sqlite_admin.SqliteAdmin`, plugins' own
tables through :class:`~.sqlite_sql.SqliteSql`. On PostgreSQL (``postgres/``)
the same three ports are ``PostgresStore``, ``PostgresAdmin`` and ``PostgresSql``.
Both are store kinds (:mod:`gateway_core.stores`), registered in :mod:`.kinds`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from ..admin.port import AdminStore
from ..request_store import RequestStore
from ..sql import SqlHandle
from ..kept_responses import ResponseStore
from ..stores import kind_for, kind_of
from ..sql import Migration
from . import channel_health, channels, groups, keys, limits, prices, usage, users, wallet
from .connection import atomic
from .migrations import CORE_MIGRATIONS, apply_migrations
from .kinds import BUILT_IN, sqlite_path
from .sqlite_store import Store

if TYPE_CHECKING:
    from ..stores import StoreKind


# The core's two kinds for code without a registry (tests, benchmarks, the test kit's
# seeding); the gateway and the CLI find the kind through the registry
# (``register_stores``), where plugins may add theirs.


def _kinds() -> tuple[StoreKind, ...]:
    return BUILT_IN


def open_store(url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0) -> RequestStore:
    """The store at ``url`` (not started): :meth:`StoreKind.open <gateway_core.stores.StoreKind.open>` of its kind."""
    return kind_for(_kinds(), url).open(url, migrations, pool_size=pool_size, timeout=timeout)


def admin_ports(store: RequestStore) -> tuple[AdminStore, SqlHandle]:
    """The admin layer's port and plugins' SQL handle on ``store`` (one
    :func:`open_store` made, or a test's wrapper standing in for SQLite's)."""
    ports = kind_of(_kinds(), store).ports(store)
    return ports.admin, ports.sql


def response_store(store: RequestStore) -> ResponseStore:
    """The kept answers' port (:mod:`gateway_core.kept_responses`) on ``store``."""
    return kind_of(_kinds(), store).ports(store).responses


def open_admin(
    url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0
) -> AbstractAsyncContextManager[AdminStore]:
    """The admin port on the database at ``url``, migrated and started for the block."""
    return kind_for(_kinds(), url).admin(url, migrations, pool_size=pool_size, timeout=timeout)


__all__ = [
    "CORE_MIGRATIONS",
    "Store",
    "apply_migrations",
    "atomic",
    "admin_ports",
    "open_admin",
    "open_store",
    "response_store",
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
