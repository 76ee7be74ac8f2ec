"""Operations on a database as a whole, for ``relaygate migrate`` and ``serve``'s
start-up check, on either store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..request_store import StoreUnavailable
from ..types import Migration
from . import is_postgresql, open_store
from .sqlite_store import Store


async def migrate_database(url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> tuple[str, list[str]]:
    """Apply the pending ``migrations`` to the database at ``url``: the store's
    name and the names applied (none when the schema was up to date). Raises
    :class:`~gateway_core.request_store.StoreUnavailable` when PostgreSQL cannot
    be reached."""
    store = open_store(url, migrations, timeout=timeout)
    if isinstance(store, Store):
        return store.path, await asyncio.to_thread(store.migrate)
    return store.name, await store.migrate()


async def startup_problem(url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> str | None:
    """Why a gateway cannot start on ``url``, in one line, or ``None``.

    A PostgreSQL database must be reachable and migrated (``relaygate migrate``:
    several replicas never race to change a shared schema); the embedded SQLite
    store migrates itself when it starts, as it always has."""
    if not is_postgresql(url):
        return None
    store = open_store(url, migrations, timeout=timeout)
    assert not isinstance(store, Store)
    try:
        todo = await store.pending_migrations()
    except StoreUnavailable as exc:
        return str(exc)
    if todo:
        return f"the schema of {store.name} is older than this code (pending: {', '.join(todo)}): run `relaygate migrate`"
    return None
