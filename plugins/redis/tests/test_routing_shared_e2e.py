"""Routing state shared through Redis by gateways on one database, over real
HTTP: a channel whose streams keep breaking is taken out on every replica, and
a session keeps to one channel whichever replica it reaches."""

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
MODEL = "gpt-shared-routing"
CHAT: Any = [{"role": "user", "content": "one two three four"}]


@pytest.fixture
def relaygate_config(tmp_path, redis_prefix) -> Config:
    gateway = {"redis": REDIS_URL, "redis_prefix": redis_prefix, "breaker_failures": 3, "breaker_cooldown": 30.0, "breaker_last_resort": 0}
    config = config_from_mapping({"load": ["openai", "demo"], "gateway": gateway}, db_path=str(tmp_path / "relaygate.db"))
    return attrs.evolve(config, timeouts=Timeouts(connect=1.0, first_byte=5.0, idle=5.0))


def sdk(gateway, secret: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=20)


async def stream(gateway, secret: str) -> tuple[str, bool]:
    """The streamed text, and whether the stream ended in an error."""
    text = ""
    try:
        chunks = await sdk(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, stream=True)
        async for chunk in chunks:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
    except openai.APIError:
        return text, True
    return text, False


async def until(condition: Callable[[], bool], failure: str, timeout: float = 5.0) -> None:
    """Wait for ``condition`` (what a replica learns from Redis, not awaited by the request)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, failure
        await asyncio.sleep(0.01)


async def test_broken_streams_open_the_breaker_for_every_replica(start_gateway, seed, fake_upstream):
    flaky, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("flaky", type="openai", base_url=flaky.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    _, secret = seed.key(seed.user("alice"))
    a, b = start_gateway(), start_gateway()
    flaky.fail_next(*[Fault(drop_after=2)] * 3)
    for _ in range(3):
        assert await stream(a, secret) == ("echo:", True)  # the heads arrive, the streams drop
    # the third failure counted in Redis opened the breaker: A learns it from the
    # script's answer, B from its message, and sends nothing to the flaky channel
    await until(lambda: a.services.health.health(1).breaker.state == "open", "A never opened the breaker")
    await until(lambda: b.services.health.health(1).breaker.state == "open", "B never heard of the open breaker")
    for _ in range(3):
        assert await stream(b, secret) == ("echo: one two three four", False)
    assert b.services.health.health(1).breaker.state == "open"
    assert (len(flaky.requests), len(backup.requests)) == (3, 3)


async def test_a_session_keeps_to_one_channel_across_replicas(start_gateway, seed, fake_upstream, relaygate_config):
    fakes = [await fake_upstream(FakeOpenAI(api_key=None)) for _ in range(3)]
    for n, fake in enumerate(fakes):
        seed.channel(f"c{n}", type="openai", base_url=fake.url, models=[MODEL], api_keys=(f"sk-a{n}-0123456789", f"sk-b{n}-0123456789"))
    _, secret = seed.key(seed.user("alice"))
    config = attrs.evolve(relaygate_config, session_affinity=True)
    gateways = [start_gateway(config), start_gateway(config)]
    client = aioredis.from_url(REDIS_URL)
    pattern = f"{relaygate_config.redis_prefix}:af:*"
    for n in range(10):
        await sdk(gateways[n % 2], secret).chat.completions.create(model=MODEL, messages=CHAT, extra_body={"prompt_cache_key": "conv-7"})
        deadline = asyncio.get_running_loop().time() + 5
        while n == 0 and not [k async for k in client.scan_iter(match=pattern)]:  # the write is not awaited by the request
            assert asyncio.get_running_loop().time() < deadline, "the session's place never reached Redis"
            await asyncio.sleep(0.01)
    import orjson

    rows = seed.rows("SELECT channel_name, attempts FROM usage_logs ORDER BY id")
    assert len({(r["channel_name"], orjson.loads(r["attempts"])[0]["key_index"]) for r in rows}) == 1
    # the session's place is in Redis (under a digest: neither the session nor the key in clear)
    try:
        stored = [k async for k in client.scan_iter(match=pattern)]
        assert len(stored) == 1 and b"conv-7" not in stored[0]
        value = await client.get(stored[0])
        assert b"sk-" not in value and 0 < await client.pttl(stored[0]) <= 600_000
    finally:
        await client.aclose()


async def test_sessions_are_routed_as_usual_while_redis_is_down(private_redis, start_gateway, seed, fake_upstream, tmp_path):
    import time

    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("only", type="openai", base_url=upstream.url, models=[MODEL])
    _, secret = seed.key(seed.user("alice"))
    gateway_table = {"redis": private_redis.url, "session_affinity": True}
    config = config_from_mapping({"load": ["openai", "demo"], "gateway": gateway_table}, db_path=str(tmp_path / "relaygate.db"))
    gateway = start_gateway(config)

    async def ask() -> str:
        answer = await sdk(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, extra_body={"prompt_cache_key": "conv"})
        return answer.choices[0].message.content or ""

    assert await ask() == "echo: one two three four"
    private_redis.stop()
    started = time.monotonic()
    assert await ask() == "echo: one two three four"  # no session place to read: served as usual
    assert time.monotonic() - started < 5
    assert gateway.services.affinity.unreachable >= 1  # type: ignore[union-attr]
    private_redis.start()
    assert await ask() == "echo: one two three four"
