"""Pytest fixtures of the test kit, available to every test once relaygate is installed.

- ``relaygate_config``: a :class:`Config` on a fresh store file in ``tmp_path``.
- ``relaygate_plugins``: plugins to load besides the installed ones (none by
  default); override it to test a plugin that is not installed.
- ``seed``: a :class:`gateway_core.testing.Seed` for that store.
- ``start_gateway``: starts a :class:`gateway_core.testing.GatewayThread` for that
  store (call it after seeding); stopped at the end of the test.
- ``fake_upstream``: ``await fake_upstream(FakeSomething())`` serves a
  :class:`gateway_core.testing.FakeUpstream` on a loopback port and returns it
  with its ``url`` set; stopped at the end of the test (async tests only).
- ``examples``: a :class:`gateway_core.testing.Examples` on the ``examples``
  folder beside the test module (or above it).
- ``relaygate_redis_prefix``: a Redis key prefix of the test's own (``redis_prefix``
  in ``[gateway]``) on ``RELAYGATE_TEST_REDIS`` (default: the machine's Redis),
  its keys deleted after the test.
- ``relaygate_postgres_url``: a fresh PostgreSQL database for one test, on
  ``RELAYGATE_TEST_POSTGRES`` (``relaygate_postgres_server``); the test is
  skipped when no server is reachable (failed when ``CI`` is set).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from .config import Config
from .testing import Examples, FakeUpstream, GatewayThread, Seed, UpstreamServers

try:  # async fixtures work in pytest-asyncio's strict mode too
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # pragma: no cover - without pytest-asyncio, async tests cannot run anyway
    async_fixture = pytest.fixture  # type: ignore[assignment]

Fake = TypeVar("Fake", bound=FakeUpstream)
T = TypeVar("T")
StartGateway = Callable[..., GatewayThread]


@pytest.fixture
def relaygate_config(tmp_path: Path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"))


@pytest.fixture
def relaygate_plugins() -> Sequence[Any]:
    return ()


@pytest.fixture
def seed(relaygate_config: Config, relaygate_plugins: Sequence[Any]) -> Iterator[Seed]:
    seeded = Seed(relaygate_config, extra_plugins=relaygate_plugins)
    yield seeded
    seeded.close()


@pytest.fixture
def start_gateway(relaygate_config: Config, relaygate_plugins: Sequence[Any]) -> Iterator[StartGateway]:
    started: list[GatewayThread] = []

    def start(config: Config | None = None, **kwargs: Any) -> GatewayThread:
        kwargs.setdefault("extra_plugins", relaygate_plugins)
        gateway = GatewayThread(config or relaygate_config, **kwargs).start()
        started.append(gateway)
        return gateway

    yield start
    for gateway in reversed(started):
        gateway.stop()


@async_fixture
async def fake_upstream() -> AsyncIterator[Callable[[Fake], Awaitable[Fake]]]:
    async with UpstreamServers() as servers:
        yield servers.start


@pytest.fixture
def examples(request: pytest.FixtureRequest) -> Examples:
    return Examples.beside(request.path)


# --- Redis ------------------------------------------------------------------------------------

DEFAULT_TEST_REDIS = "redis://127.0.0.1:6379/0"


@async_fixture
async def relaygate_redis_prefix() -> AsyncIterator[str]:
    import uuid

    import redis.asyncio as aioredis

    name = f"test-{uuid.uuid4().hex}"
    yield name
    client = aioredis.Redis.from_url(os.environ.get("RELAYGATE_TEST_REDIS", DEFAULT_TEST_REDIS))
    try:
        stale = [key async for key in client.scan_iter(match=f"{name}:*")]
        if stale:
            await client.delete(*stale)
    finally:
        await client.aclose()


# --- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def relaygate_postgres_server() -> str:
    """The PostgreSQL server tests run on: ``RELAYGATE_TEST_POSTGRES`` (default: the
    machine's, as ``postgres``). Unreachable, the test is skipped (failed under ``CI``)."""
    from .store.postgres.databases import UNREACHABLE, run_on_server
    from .store.postgres.faults import store_name

    server = os.environ.get("RELAYGATE_TEST_POSTGRES", DEFAULT_TEST_POSTGRES)
    try:
        _in_thread(lambda: run_on_server(server, "SELECT 1"))
    except UNREACHABLE as exc:
        reason = f"{store_name(server)} is unreachable ({type(exc).__name__}: {exc})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: CI must run the PostgreSQL tests (.ci/run starts the server)")
        pytest.skip(f"{reason}; set RELAYGATE_TEST_POSTGRES=postgresql://user@host:port/db to run these tests")
    return server


@pytest.fixture
def relaygate_postgres_url(relaygate_postgres_server: str) -> Iterator[str]:
    """A fresh database of its own for one test (``--db`` for a gateway on
    PostgreSQL), dropped after it."""
    from .store.postgres.databases import create_database, drop_database

    url = _in_thread(lambda: create_database(relaygate_postgres_server))
    yield url
    _in_thread(lambda: drop_database(relaygate_postgres_server, url))


DEFAULT_TEST_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


def _in_thread(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to the end on a loop of its own (a fixture may run inside the test's loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]
