"""Operations on a database as a whole, for ``relaygate migrate`` and ``serve``'s
start-up check, on either store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..request_store import StoreUnavailable
from ..types import Migration
from . import admin_ports, is_postgresql, open_store, sqlite_path
from .sqlite_check import sqlite_startup_problem
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
    store migrates itself, after checking that its file is a Relaygate database
    it can write (:mod:`~gateway_core.store.sqlite_check`)."""
    if not is_postgresql(url):
        return await asyncio.to_thread(sqlite_startup_problem, sqlite_path(url), migrations)
    store = open_store(url, migrations, timeout=timeout)
    assert not isinstance(store, Store)
    try:
        todo = await store.pending_migrations()
    except StoreUnavailable as exc:
        return str(exc)
    if todo:
        return f"the schema of {store.name} is older than this code (pending: {', '.join(todo)}): run `relaygate migrate`"
    return None


_LIMITED = "coalesce(rpm, 0) > 0 OR coalesce(tpm, 0) > 0 OR coalesce(concurrency, 0) > 0"
_LIMITS_SET = (
    f"SELECT 'key' AS subject, count(*) AS n FROM api_keys WHERE deleted = 0 AND ({_LIMITED}) "
    f"UNION ALL SELECT 'user', count(*) FROM users WHERE {_LIMITED} "
    f'''UNION ALL SELECT 'group', count(*) FROM "groups" WHERE {_LIMITED} '''
    "UNION ALL SELECT 'channel', count(*) FROM channels WHERE concurrency > 0"
)


async def configured_limits(url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> dict[str, int]:
    """How many keys (not deleted), users and groups of the database at ``url``
    have a rate or concurrency limit set, and how many channels a concurrency
    cap: ``{"key": 2, "user": 0, "group": 1, "channel": 0}``."""
    store = open_store(url, migrations, timeout=timeout)
    await store.start()
    try:
        _, sql = admin_ports(store)
        rows = await sql.fetch_all(_LIMITS_SET)
    finally:
        await store.close()
    return {str(row["subject"]): int(row["n"]) for row in rows}
