"""The PostgreSQL store as a plugin: ``postgresql://`` and ``postgres://`` database URLs
(``register_stores``). Loading it imports no driver: asyncpg is imported when a
URL names PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway_core import hookimpl

from .kind import PostgresKind

if TYPE_CHECKING:
    from gateway_core.hookspecs import RegisterStore


@hookimpl
def register_stores(register: RegisterStore) -> None:
    register(PostgresKind())
