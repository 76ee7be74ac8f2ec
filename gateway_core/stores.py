"""Kinds of database the gateway keeps its state in, chosen by the database URL.

A plugin adds one through the ``register_stores`` hook: a :class:`StoreKind`
says which URLs it serves and opens the ports the core works through (the
request path's :class:`~gateway_core.store.request_store.RequestStore`, the admin
layer's :class:`~gateway_core.admin.AdminStore`, plugins' :class:`~gateway_core.sql.SqlHandle`
and the kept answers' :class:`~gateway_core.kept_responses.ResponseStore`), the
database operations of ``relaygate migrate``, ``serve``'s start-up check and
``copy-store``. The core registers SQLite (the default: a file path or
``sqlite:///path``); the ``relaygate-postgres`` plugin registers PostgreSQL
(``postgresql://``, ``postgres://``).
"""

from __future__ import annotations

import abc
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .config import ConfigError

if TYPE_CHECKING:
    from .admin.port import AdminStore
    from .kept_responses import ResponseStore
    from .records import AuditReport
    from .store.request_store import RequestStore
    from .sql import SqlHandle
    from .sql import Migration

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme_of(url: str) -> str | None:
    """The scheme of ``url`` (``"postgresql"``), or ``None`` for a plain file path."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


@attrs.frozen
class StorePorts:
    """The ports the core works through, on one opened store."""

    admin: AdminStore
    sql: SqlHandle
    responses: ResponseStore


class CopyEnd(Protocol):
    """One end of ``relaygate copy-store``: a database's tables, read or written in one transaction."""

    name: str

    async def applied(self) -> set[str]: ...
    async def tables(self) -> list[str]: ...
    async def columns(self, table: str) -> list[str]: ...
    async def parents(self, table: str) -> set[str]: ...
    async def count(self, table: str) -> int: ...
    async def seeded_only(self, table: str, keys: set[str]) -> bool: ...
    def rows(self, table: str, columns: Sequence[str]) -> AsyncIterator[list[tuple[Any, ...]]]: ...
    async def begin(self) -> None: ...
    async def clear(self, table: str) -> None: ...
    async def insert(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None: ...
    async def finish(self) -> None: ...
    async def audit(self) -> AuditReport: ...
    async def commit(self) -> None: ...
    async def close(self) -> None: ...


class StoreKind(abc.ABC):
    """A kind of database: the URLs it serves and how to open and tend one.

    ``schemes`` are the URL schemes it serves (``("postgresql", "postgres")``);
    the one kind with ``default`` also serves plain file paths. ``shared`` says
    whether it is a server several replicas share (an unreachable one may come
    back by itself, so the CLI exits 1, not 2). Nothing here may import a
    database driver when the module is loaded: a kind is registered on every
    start, used only when the URL names it."""

    name: str
    schemes: tuple[str, ...] = ()
    default: bool = False
    shared: bool = False

    def serves(self, url: str) -> bool:
        scheme = scheme_of(url)
        return self.default if scheme is None else scheme in self.schemes

    @abc.abstractmethod
    def owns(self, store: RequestStore) -> bool:
        """Whether ``store`` is one this kind opened (its ports fit it)."""

    def location(self, url: str) -> str:
        """What messages call the database at ``url`` (never with a password)."""
        return url

    def missing(self, url: str) -> str | None:
        """Why no database exists at ``url`` (a command other than ``init``,
        ``serve`` and ``migrate`` refuses to create one by accident), or ``None``."""
        return None

    @abc.abstractmethod
    def open(self, url: str, migrations: Sequence[Migration], *, pool_size: int, timeout: float) -> RequestStore:
        """The store at ``url``, not yet started (``start()`` connects and migrates where it may)."""

    @abc.abstractmethod
    def ports(self, store: RequestStore) -> StorePorts:
        """The admin, SQL and kept-answer ports on ``store`` (one this kind owns)."""

    @abc.abstractmethod
    def admin(
        self, url: str, migrations: Sequence[Migration], *, pool_size: int, timeout: float
    ) -> AbstractAsyncContextManager[AdminStore]:
        """The admin port on the database at ``url``, migrated and started for the block: one CLI command's."""

    @abc.abstractmethod
    async def migrate(self, url: str, migrations: Sequence[Migration], *, timeout: float) -> tuple[str, list[str]]:
        """Apply the pending ``migrations``: the database's name and the names applied."""

    @abc.abstractmethod
    async def startup_problem(self, url: str, migrations: Sequence[Migration], *, timeout: float) -> str | None:
        """Why a gateway cannot start on ``url``, in one line, or ``None``."""

    @abc.abstractmethod
    async def copy_end(self, url: str) -> CopyEnd:
        """The database at ``url`` as an end of ``relaygate copy-store``."""


def kind_for(kinds: Sequence[StoreKind], url: str) -> StoreKind:
    """The kind that serves ``url``; a :class:`~gateway_core.config.ConfigError`
    naming the installed kinds when none does."""
    for kind in kinds:
        if kind.serves(url):
            return kind
    scheme = scheme_of(url)
    installed = ", ".join(kind.name for kind in kinds) or "none"
    what = f"{scheme}:// URLs" if scheme else "a file path"
    raise ConfigError(
        f"no loaded store serves {what} (loaded stores: {installed}): check --db or RELAYGATE_DB, and install the "
        "plugin that serves it (PostgreSQL: pip install 'relaygate[postgres]') or name it in plugins.toml's load"
    )


def kind_of(kinds: Sequence[StoreKind], store: RequestStore) -> StoreKind:
    """The kind that opened ``store`` (a wrapper standing in for one is taken for the default kind's)."""
    for kind in kinds:
        if not kind.default and kind.owns(store):
            return kind
    for kind in kinds:
        if kind.default:
            return kind
    raise ConfigError("no store kind is registered (the core registers SQLite's: was it unloaded?)")
