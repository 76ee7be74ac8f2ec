"""Fixtures every core test may use: PostgreSQL databases, and the ``--db`` of either store.

- ``postgres_server``, ``pg_url``: the test kit's ``relaygate_postgres_server``
  and ``relaygate_postgres_url`` (:mod:`gateway_core.pytest_plugin`) under
  shorter names: the server's URL, and a fresh database dropped after the test.
- ``db_url``: what ``--db`` takes, once per store: a SQLite file in ``tmp_path``,
  then a fresh PostgreSQL database.
- ``start_store``: starts the store at ``db_url``.
- ``redis_prefix``: a key prefix of the test's own in the machine's Redis
  (``REDIS_URL``), its keys deleted after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from gateway_core.request_store import RequestStore
from gateway_core.store import Store, open_store
from gateway_core.store.postgres import PostgresStore
from gateway_core.types import Migration

REDIS_URL = "redis://127.0.0.1:6379/0"

StartStore = Callable[[Sequence[Migration]], Awaitable[RequestStore]]


@pytest.fixture(scope="session")
def postgres_server(relaygate_postgres_server: str) -> str:
    return relaygate_postgres_server


@pytest.fixture
def pg_url(relaygate_postgres_url: str) -> str:
    """A database of its own for one test: its URL."""
    return relaygate_postgres_url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "relaygate.db")


@pytest.fixture
async def start_store(db_url: str) -> AsyncIterator[StartStore]:
    """``await start_store(migrations)``: the store at ``db_url`` (either kind, as
    :func:`~gateway_core.store.open_store` makes it), migrated and started;
    closed at the end of the test."""
    started: list[Store | PostgresStore] = []

    async def start(migrations: Sequence[Migration]) -> RequestStore:
        store = open_store(db_url, migrations)
        if isinstance(store, PostgresStore):
            await store.migrate()
        await store.start()
        started.append(store)
        return store

    yield start
    for store in started:
        await store.close()


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    import uuid

    import redis.asyncio as aioredis

    name = f"test-{uuid.uuid4().hex}"
    yield name
    client = aioredis.Redis.from_url(REDIS_URL)
    stale = [key async for key in client.scan_iter(match=f"{name}:*")]
    if stale:
        await client.delete(*stale)
    await client.aclose()
