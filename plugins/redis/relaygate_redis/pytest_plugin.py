"""Pytest fixtures of the Redis shared state, available to every test once the plugin is installed.

- ``relaygate_redis_prefix``: a Redis key prefix of the test's own (``redis_prefix``
  in ``[gateway]``) on ``RELAYGATE_TEST_REDIS`` (default: the machine's Redis),
  its keys deleted after the test.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

try:  # async fixtures work in pytest-asyncio's strict mode too
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # pragma: no cover - without pytest-asyncio, async tests cannot run anyway
    async_fixture = pytest.fixture  # type: ignore[assignment]

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
