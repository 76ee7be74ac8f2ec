"""Circuit breakers across three replicas (real processes on one PostgreSQL
database and one Redis): the channel's consecutive failures are counted in
Redis, so failures alternated between the replicas open its breaker after
``breaker_failures`` of them in all, on every replica; a success on any
replica starts the count again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from gateway_openai.fake_upstream import Fault

from .conftest import REDIS_URL, Cluster

FAILURES = 3
BREAKERS = {"breaker_failures": FAILURES, "breaker_cooldown": 60, "breaker_last_resort": 0}
OPEN_GAUGE = 'relaygate_breaker_open{channel="up",key="channel"} 1.0'


@pytest.fixture
async def redis_client() -> AsyncIterator[Any]:
    client = aioredis.from_url(REDIS_URL)
    yield client
    await client.aclose()


async def eventually(check: Any, failure: str, timeout: float = 15.0) -> None:
    """Wait for the awaitable-returning ``check`` to be true (what replicas learn through Redis is not awaited by requests)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, failure
        await asyncio.sleep(0.02)


async def count(redis_client: Any, redis_prefix: str) -> int | None:
    """The channel's consecutive failures counted in Redis (``None``: no count)."""
    keys = [key async for key in redis_client.scan_iter(match=f"{redis_prefix}:bf:*")]
    assert len(keys) <= 1
    value = await redis_client.get(keys[0]) if keys else None
    return None if value is None else int(value)  # (deleted between the scan and the read: none)


async def breaker_open(world: Cluster, replica: int) -> bool:
    async with world.session.get(world.replicas[replica].url + "/metrics") as response:
        return OPEN_GAUGE in await response.text()


async def test_failures_alternated_between_replicas_open_the_breaker_after_breaker_failures_in_all(cluster, redis_client, redis_prefix):
    world = await cluster(**BREAKERS)
    _, secret = await world.seed()
    world.upstream.fail_next(*[Fault(status=500)] * 20)
    for n in range(FAILURES - 1):  # replica 0, then 1: not yet
        assert (await world.chat(n, secret)).status == 502
        await eventually(lambda: _equals(count(redis_client, redis_prefix), n + 1), f"failure {n + 1} was never counted in Redis")
    assert not any([await breaker_open(world, r) for r in range(3)])
    assert (await world.chat(FAILURES - 1, secret)).status == 502  # the third failure in all, on replica 2
    for replica in range(3):
        await eventually(lambda: breaker_open(world, replica), f"replica {replica} never held the breaker open")
    assert await count(redis_client, redis_prefix) is None  # the opening dropped the count
    answers = [await world.chat(n, secret) for n in range(6)]
    assert {(a.status, a.replica) for a in answers} == {(503, 0), (503, 1), (503, 2)}
    assert len(world.upstream.requests) == FAILURES  # no replica called the channel again


async def test_a_success_on_any_replica_resets_the_count(cluster, redis_client, redis_prefix):
    world = await cluster(**BREAKERS)
    _, secret = await world.seed()
    for round_ in range(2):
        world.upstream.fail_next(Fault(status=500), Fault(status=500))
        for n in range(2):
            assert (await world.chat(n, secret)).status == 502
            await eventually(lambda: _equals(count(redis_client, redis_prefix), n + 1), f"failure {n + 1} was never counted in Redis")
        # replica 2 has seen no failure of its own: the count it heard tells it to reset
        answer = await world.chat(2, secret, stream=round_ == 1)
        assert answer.status == 200 and answer.complete
        await eventually(lambda: _equals(count(redis_client, redis_prefix), None), "the success never reset the count")
    # four failures, never three in a row: every request reached the channel, no breaker opened
    assert len(world.upstream.requests) == 6
    assert not any([await breaker_open(world, r) for r in range(3)])


async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)
