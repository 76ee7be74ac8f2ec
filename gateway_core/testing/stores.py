"""Stores opened by URL without a gateway, for tests and benchmarks: through the
store kinds the installed plugins register (``register_stores``), as the gateway
and the CLI find them."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from ..admin.port import AdminStore
from ..config import Config
from ..kept_responses import ResponseStore
from ..store.request_store import RequestStore
from ..sql import Migration, SqlHandle
from ..stores import StoreKind, kind_for, kind_of


@functools.cache
def installed_kinds() -> tuple[StoreKind, ...]:
    from ..runtime.plugins import collect

    return tuple(collect(Config()).stores)


def open_store(url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0) -> RequestStore:
    """The store at ``url`` (not started), opened by its kind."""
    return kind_for(installed_kinds(), url).open(url, migrations, pool_size=pool_size, timeout=timeout)


def admin_ports(store: RequestStore) -> tuple[AdminStore, SqlHandle]:
    """The admin layer's port and plugins' SQL handle on ``store`` (one :func:`open_store`
    made, or a test's wrapper standing in for SQLite's)."""
    ports = kind_of(installed_kinds(), store).ports(store)
    return ports.admin, ports.sql


def response_store(store: RequestStore) -> ResponseStore:
    """The kept answers' port on ``store``."""
    return kind_of(installed_kinds(), store).ports(store).responses


def open_admin(
    url: str, migrations: Sequence[Migration], *, pool_size: int = 10, timeout: float = 5.0
) -> AbstractAsyncContextManager[AdminStore]:
    """The admin port on the database at ``url``, migrated and started for the block."""
    return kind_for(installed_kinds(), url).admin(url, migrations, pool_size=pool_size, timeout=timeout)
