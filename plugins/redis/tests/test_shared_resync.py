"""A replica's resync (its subscriber (re)connected: it reads the breakers and
counts Redis holds) against what the replica changes while that read is on its
way, on a real Redis. The read may come back after a change made here: the
change must stand, since the replica's own messages are not for itself and
nothing else would correct it."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
import redis.asyncio as aioredis

from gateway_core.routing.health import HealthBoard
from relaygate_redis.faults import RedisFaults
from relaygate_redis.health import SharedHealth

REDIS_URL = "redis://127.0.0.1:6379/0"
FLAKY, OTHER = 1, 2


@pytest.fixture
async def redis_client() -> Any:
    client = aioredis.from_url(REDIS_URL)
    yield client
    await client.aclose()


async def test_a_count_reset_here_while_the_resync_reads_stays_reset(redis_client, redis_prefix, monkeypatch):
    board = HealthBoard(failures=3)
    shared = SharedHealth(board, redis_client, redis_prefix, slots=cast(Any, None), faults=RedisFaults(), origin="here")
    board.shared = shared
    count = shared.failures.key
    await redis_client.set(count(FLAKY, ""), 2)
    await redis_client.set(count(OTHER, ""), 1)
    board.health(FLAKY).breaker.failures = 2  # heard before the subscriber reconnected
    read, go_on = asyncio.Event(), asyncio.Event()
    mget = redis_client.mget

    async def answered_late(*args: Any, **kwargs: Any) -> Any:
        counts = await mget(*args, **kwargs)
        read.set()
        await go_on.wait()  # the counts were read; the answer waits (a busy loop) while requests go on
        return counts

    monkeypatch.setattr(redis_client, "mget", answered_late)
    resync = asyncio.ensure_future(shared.resync.run())
    await read.wait()
    # a success here resets FLAKY's count, as HealthBoard does: locally, and in Redis for every replica
    board.health(FLAKY).breaker.failures = 0
    shared.failures.reset(FLAKY, "")
    go_on.set()
    await resync
    await shared.close()
    assert board.health(FLAKY).breaker.failures == 0  # the count read before the reset did not stand again
    assert board.health(OTHER).breaker.failures == 1  # what did not change here is taken from Redis
    assert await redis_client.exists(count(FLAKY, "")) == 0 and shared.failures.resets == 1
