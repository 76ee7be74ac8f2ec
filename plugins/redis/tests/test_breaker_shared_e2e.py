"""Consecutive failures counted across replicas through Redis, over real HTTP:
three gateways on one database and one Redis, a flaky channel in front of a
backup one. Failures spread over the replicas open the flaky channel's breaker
after ``breaker_failures`` of them in all; a success on any replica starts the
count again; with Redis away, each replica counts on its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import attrs
import openai
import pytest
import redis.asyncio as aioredis

from gateway_core.channel_type import Timeouts
from gateway_core.config import Config, config_from_mapping
from gateway_openai.fake_upstream import Fault, FakeOpenAI

REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = "gpt-shared-breaker"
CHAT: Any = [{"role": "user", "content": "one two three four"}]
ECHO = "echo: one two three four"
FAILURES = 3
FLAKY = 1  # the flaky channel's id (seeded first)


def settings(redis_url: str, **more: Any) -> dict[str, Any]:
    return {"redis": redis_url, "breaker_failures": FAILURES, "breaker_cooldown": 30.0, "breaker_last_resort": 0, **more}


@pytest.fixture
def relaygate_config(tmp_path, redis_prefix) -> Config:
    config = config_from_mapping({"load": ["openai", "demo"], "gateway": settings(REDIS_URL, redis_prefix=redis_prefix)},
                                 db_path=str(tmp_path / "relaygate.db"))  # fmt: skip
    return attrs.evolve(config, timeouts=Timeouts(connect=1.0, first_byte=5.0, idle=5.0))


@pytest.fixture
async def redis_client() -> Any:
    client = aioredis.from_url(REDIS_URL)
    yield client
    await client.aclose()


async def until(condition: Callable[[], Any], failure: str, timeout: float = 10.0) -> None:
    """Wait for ``condition``: what a replica learns from Redis is not awaited by the request."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, failure
        await asyncio.sleep(0.01)


async def chat(gateway: Any, secret: str, *, stream: bool = False) -> str:
    """The answer's text (an error ends a stream: ``"!"`` is appended)."""
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=20)
    if not stream:
        answer = await client.chat.completions.create(model=MODEL, messages=CHAT)
        return answer.choices[0].message.content or ""
    text = ""
    try:
        async for chunk in await client.chat.completions.create(model=MODEL, messages=CHAT, stream=True):
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
    except openai.APIError:
        text += "!"
    return text


def breaker(gateway: Any) -> Any:
    return gateway.services.health.health(FLAKY).breaker


@pytest.fixture
async def world(start_gateway, seed, fake_upstream) -> Any:
    flaky, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("flaky", type="openai", base_url=flaky.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    _, secret = seed.key(seed.user("alice"))
    return flaky, backup, secret, [start_gateway(), start_gateway(), start_gateway()]


async def test_failures_alternated_between_replicas_open_the_breaker_after_breaker_failures_in_all(world, redis_client, redis_prefix):
    flaky, backup, secret, gateways = world
    count_key = f"{redis_prefix}:bf:{FLAKY}:-"
    flaky.fail_next(*[Fault(status=500)] * 10)
    for n in range(FAILURES - 1):  # one failure on each replica in turn: the count is the replicas' together
        assert await chat(gateways[n], secret) == ECHO  # the backup answered
        await until(lambda: all(breaker(g).failures == n + 1 for g in gateways), f"the replicas never heard of failure {n + 1}")
        assert int(await redis_client.get(count_key)) == n + 1
        assert 0 < await redis_client.pttl(count_key) <= 600_000  # the count expires
    assert {breaker(g).state for g in gateways} == {"closed"}
    assert await chat(gateways[FAILURES - 1], secret) == ECHO  # the third failure, on the third replica
    await until(lambda: all(breaker(g).state == "open" for g in gateways), "the breaker did not open everywhere")
    assert len(flaky.requests) == FAILURES
    assert await redis_client.exists(count_key) == 0  # the open breaker dropped the count
    assert await redis_client.exists(f"{redis_prefix}:br:{FLAKY}:-") == 1
    for n in range(6):  # every replica keeps the flaky channel out
        assert await chat(gateways[n % 3], secret) == ECHO
    assert (len(flaky.requests), len(backup.requests)) == (FAILURES, FAILURES + 6)


async def test_a_success_on_any_replica_resets_the_count(world, redis_client, redis_prefix):
    flaky, _, secret, gateways = world
    count_key = f"{redis_prefix}:bf:{FLAKY}:-"
    a, b, c = gateways
    for round_ in range(2):
        flaky.fail_next(Fault(status=500), Fault(drop_after=2))
        assert await chat(a, secret) == ECHO  # a failure on A, answered by the backup
        # a stream that breaks after its head on B: its head reset nothing, its break counts
        assert await chat(b, secret, stream=True) == "echo:!"
        await until(lambda: all(breaker(g).failures == 2 for g in gateways), "the count of two failures never reached every replica")
        assert int(await redis_client.get(count_key)) == 2
        # C answers from the flaky channel: the count starts again, on every replica
        assert await chat(c, secret, stream=round_ == 1) == ECHO  # a whole stream resets it too
        await until(lambda: all(breaker(g).failures == 0 for g in gateways), "the reset never reached every replica")
        assert await redis_client.exists(count_key) == 0
    # four failures in all, never three in a row: the breaker never opened
    assert {breaker(g).state for g in gateways} == {"closed"} and len(flaky.requests) == 6
    # successes with nothing counted cost no Redis call: only C's two resets were sent
    resets = [g.services.health.shared.failures.resets for g in gateways]
    for n in range(6):
        assert await chat(gateways[n % 3], secret, stream=n % 2 == 0) == ECHO
    assert len(flaky.requests) == 12  # each answered by the flaky channel at its first attempt
    assert [g.services.health.shared.failures.resets for g in gateways] == resets == [0, 0, 2]


async def test_a_keys_rate_limits_are_counted_across_replicas(world, redis_prefix, redis_client):
    flaky, backup, secret, gateways = world
    flaky.fail_next(*[Fault(status=429)] * 10)  # no Retry-After: the key's breaker counts them
    for n in range(FAILURES):
        assert await chat(gateways[n], secret) == ECHO
        if n < FAILURES - 1:
            await until(lambda: all(g.services.health.health(FLAKY).keys and
                                    next(iter(g.services.health.health(FLAKY).keys.values())).failures == n + 1 for g in gateways),
                        f"the replicas never heard of the key's failure {n + 1}")  # fmt: skip
    await until(lambda: all(next(iter(g.services.health.health(FLAKY).keys.values())).state == "open" for g in gateways),
                "the key's breaker did not open everywhere")  # fmt: skip
    for n in range(3):  # the channel's only key is out on every replica: the backup answers
        assert await chat(gateways[n], secret) == ECHO
    assert len(flaky.requests) == FAILURES and {breaker(g).state for g in gateways} == {"closed"}


async def test_with_redis_away_each_replica_counts_its_own_failures(private_redis, start_gateway, seed, fake_upstream, tmp_path):
    flaky, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("flaky", type="openai", base_url=flaky.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    _, secret = seed.key(seed.user("alice"))
    config = config_from_mapping({"load": ["openai", "demo"], "gateway": settings(private_redis.url, redis_prefix="shared-breaker-away")}, db_path=str(tmp_path / "relaygate.db"))
    a, b = start_gateway(config), start_gateway(config)
    private_redis.stop()
    flaky.fail_next(*[Fault(status=500)] * 10)
    assert await chat(a, secret) == ECHO
    for _ in range(FAILURES):  # B counts alone: its own third failure opens its breaker
        assert await chat(b, secret) == ECHO
    await until(lambda: breaker(b).state == "open", "B never opened its breaker on its own count")
    assert breaker(a).state == "closed" and breaker(a).failures == 1  # A could not hear of it
    assert b.services.shared.faults.counts.get(("breakers", "open"), 0) >= FAILURES
    assert await chat(b, secret) == ECHO
    assert len(flaky.requests) == 1 + FAILURES
    # Redis back: counting is shared again (the first command on a connection
    # Redis dropped may still fail: that failure is counted locally, and the next goes to Redis)
    private_redis.start()
    client = aioredis.from_url(private_redis.url)
    try:
        for attempt in range(3):
            faults = a.services.shared.faults.total("breakers")
            assert await chat(a, secret) == ECHO
            await until(lambda: breaker(a).failures == 1 or a.services.shared.faults.total("breakers") > faults, "A's count went nowhere")
            if breaker(a).failures == 1:
                break
        assert breaker(a).failures == 1 and int(await client.get(f"shared-breaker-away:bf:{FLAKY}:-")) == 1  # Redis counted it alone
    finally:
        await client.aclose()


async def test_a_replica_started_after_failures_takes_their_count(start_gateway, seed, fake_upstream, redis_client, redis_prefix):
    flaky, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("flaky", type="openai", base_url=flaky.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    _, secret = seed.key(seed.user("alice"))
    a = start_gateway()
    flaky.fail_next(Fault(status=500), Fault(status=500))
    for n in range(2):
        assert await chat(a, secret) == ECHO
    await until(lambda: breaker(a).failures == 2, "A never heard its count")
    late = start_gateway()  # it missed the published counts: it reads them when it subscribes
    await until(lambda: breaker(late).failures == 2, "the late replica never read the count")
    assert await chat(late, secret) == ECHO  # its success resets the count for all
    await until(lambda: breaker(a).failures == 0, "the late replica's success never reset A's count")
    assert await redis_client.exists(f"{redis_prefix}:bf:{FLAKY}:-") == 0 and len(flaky.requests) == 3
