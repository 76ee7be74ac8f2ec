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

The PostgreSQL store's plugin (``relaygate-postgres``) adds ``relaygate_postgres_url``;
the Redis shared state's (``relaygate-redis``) adds ``relaygate_redis_prefix``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ..config import Config
from . import Examples, FakeUpstream, GatewayThread, Seed, UpstreamServers

try:  # async fixtures work in pytest-asyncio's strict mode too
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # pragma: no cover - without pytest-asyncio, async tests cannot run anyway
    async_fixture = pytest.fixture  # type: ignore[assignment]

Fake = TypeVar("Fake", bound=FakeUpstream)
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

