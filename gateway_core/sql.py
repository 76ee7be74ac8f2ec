"""Dialect-neutral SQL handles for plugins' own tables.

A plugin that keeps tables of its own (the console keeps its sessions) never
sees the database driver:

- its migrations, registered through the ``register_migrations`` hook, receive
  a :class:`SchemaHandle` inside the migration's transaction;
- at run time it asks the gateway's services for a :class:`SqlHandle`
  (``services_from_scope(scope).sql``), whose coroutines never block the event
  loop.

Both take SQL with ``?`` (qmark) placeholders and say which database they talk
to in ``dialect``, so a plugin writes portable SQL where it can and branches on
``dialect`` where it cannot (column types, upserts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

SQLITE = "sqlite"
POSTGRESQL = "postgresql"

Params = Sequence[Any]
Row = dict[str, Any]


Migrate = Callable[["SchemaHandle"], None]
"""A migration: ``migrate(schema)`` changes the schema once (see ``register_migrations``)."""
Migration = tuple[str, Migrate]  # its unique name, and the migration


@runtime_checkable
class SchemaHandle(Protocol):
    """What a migration receives: statements run inside the migration's transaction."""

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""

    def execute(self, sql: str, params: Params = ()) -> None:
        """Run one statement (DDL or DML) with ``?`` placeholders."""


@runtime_checkable
class SqlHandle(Protocol):
    """The async SQL handle plugins get at run time (``services.sql``).

    Each call is its own transaction; a write has happened durably when its
    coroutine returns.
    """

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of a query as a dict by column name, or ``None``."""

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        """Every row of a query as dicts by column name."""

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one writing statement; how many rows it changed."""
