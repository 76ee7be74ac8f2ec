"""Fixtures every test may use: PostgreSQL databases, and the ``--db`` of either store.

- ``postgres_server``: the URL of the server the tests use,
  ``RELAYGATE_TEST_POSTGRES`` (default: the machine's server as ``postgres``).
  Without a reachable server a test that needs it is skipped, except in CI
  (``CI`` set), where it fails.
- ``pg_url``: a fresh database on that server, created for one test and dropped after it.
- ``db_url``: what ``--db`` takes, once per store: a SQLite file in ``tmp_path``,
  then a fresh PostgreSQL database.
- ``start_store``: starts the store at ``db_url``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from gateway_core.request_store import RequestStore
from gateway_core.store import Store, open_store
from gateway_core.store.postgres import PostgresStore
from gateway_core.store.postgres.faults import store_name
from gateway_core.types import Migration

T = TypeVar("T")
TEST_POSTGRES = os.environ.get("RELAYGATE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


# --- the server and its databases ---------------------------------------------------------


def in_thread(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to the end on a loop of its own (a fixture may run inside the test's loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]


def with_database(url: str, database: str, *, port: int | None = None) -> str:
    """``url`` naming another database (and, with ``port``, on 127.0.0.1 at that port)."""
    parts = urlsplit(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    host = host if port is None else f"127.0.0.1:{port}"
    return urlunsplit((parts.scheme, f"{userinfo}@{host}" if userinfo else host, "/" + database, parts.query, ""))


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(TEST_POSTGRES, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres_server() -> str:
    try:
        in_thread(lambda: _admin("SELECT 1"))
    except (OSError, asyncio.TimeoutError, asyncpg.PostgresError) as exc:
        reason = f"{store_name(TEST_POSTGRES)} is unreachable ({type(exc).__name__}: {exc})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: CI must run the PostgreSQL tests (.ci/run starts the server)")
        pytest.skip(f"{reason}; set RELAYGATE_TEST_POSTGRES=postgresql://user@host:port/db to run these tests")
    return TEST_POSTGRES


@pytest.fixture
def pg_url(postgres_server: str) -> Iterator[str]:
    """A database of its own for one test: its URL."""
    name = f"relaygate_test_{uuid.uuid4().hex[:12]}"
    in_thread(lambda: _admin(f"CREATE DATABASE {name}"))
    yield with_database(postgres_server, name)
    in_thread(lambda: _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "relaygate.db")


StartStore = Callable[[Sequence[Migration]], Awaitable[RequestStore]]


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
