"""Redis stopped while two gateways serve, and started again: each kind of shared
state does what ``[gateway.redis_faults]`` says (a 503 in the caller's shape,
or service on each process's own count), nothing hangs or answers 500, and
everything — limits, caps, invalidations — comes back by itself.

The test runs its own ``redis-server`` on a free port, never the shared one."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import openai
import pytest

from gateway_core.admin import Admin, keys
from gateway_core.config import Config, config_from_mapping
from gateway_openai.fake_upstream import FakeOpenAI

MODEL = "gpt-faults"
CHAT: list = [{"role": "user", "content": "hello"}]

def config_for(tmp_path, url: str, **faults: str) -> Config:
    gateway = {"redis": url, "redis_faults": faults}
    return config_from_mapping({"load": ["openai", "demo"], "gateway": gateway}, db_path=str(tmp_path / "relaygate.db"))


async def status_of(gateway, secret: str, model: str = MODEL) -> tuple[int, str]:
    started = time.monotonic()
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=10) as client:
        try:
            await client.chat.completions.create(model=model, messages=CHAT)
            status, message = 200, ""
        except openai.APIStatusError as error:
            status, message = error.status_code, error.message
    assert time.monotonic() - started < 5, "a request hung while Redis was down"
    return status, message


async def until(predicate, timeout: float) -> float:
    started = time.monotonic()
    while not await predicate():
        assert time.monotonic() - started < timeout, "not within the time allowed"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_redis_down_fails_each_kind_as_configured_and_recovers(private_redis, start_gateway, seed, fake_upstream, tmp_path):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("open", type="openai", base_url=upstream.url, models=[MODEL])
    seed.channel("capped", type="openai", base_url=upstream.url, models=["gpt-capped"], concurrency=2)
    _, limited = seed.key(seed.user("alice"), limits={"rpm": 100})
    free_id, free = seed.key(seed.user("bob"))
    closed = start_gateway(config_for(tmp_path, private_redis.url))  # the defaults: limits and caps fail closed
    opened = start_gateway(config_for(tmp_path, private_redis.url, rate_limits="open", channel_concurrency="open"))
    for gateway in (closed, opened):
        assert (await status_of(gateway, limited))[0] == 200
        assert (await status_of(gateway, free, "gpt-capped"))[0] == 200

    private_redis.stop()
    status, message = await status_of(closed, limited)
    assert status == 503 and "rate-limit store is unavailable" in message  # in the OpenAI shape, via the SDK
    status, message = await status_of(closed, free, "gpt-capped")
    assert status == 503 and "channel concurrency" in message
    assert (await status_of(closed, free))[0] == 200  # nothing shared to count: served
    assert (await status_of(opened, limited))[0] == 200  # fail open: served without the shared count
    assert (await status_of(opened, free, "gpt-capped"))[0] == 200
    faults = closed.services.shared.faults.counts
    assert faults[("rate_limits", "closed")] >= 1 and faults[("channel_concurrency", "closed")] >= 1
    faults = opened.services.shared.faults.counts
    assert faults[("rate_limits", "open")] >= 1 and faults[("channel_concurrency", "open")] >= 1
    async with aiohttp.ClientSession() as http:  # exported as a counter
        async with http.get(closed.url + "/metrics") as response:
            assert 'relaygate_redis_unreachable_total{kind="rate_limits",outcome="closed"}' in await response.text()
    # a change made while Redis is down is still seen, through the caches' one-second lifetime
    await opened.on_loop(keys.set_key_enabled(Admin.of(opened.services), free_id, False))

    async def refused_by_closed() -> bool:
        return (await status_of(closed, free))[0] == 401

    assert await until(refused_by_closed, 3.0) < 2.5

    private_redis.start()  # back: every kind recovers by itself

    async def recovered() -> bool:
        return (await status_of(closed, limited))[0] == 200 and closed.services.shared.bus.connected.is_set()

    await until(recovered, 10.0)
    assert (await status_of(closed, limited, "gpt-capped"))[0] == 200
    await until(lambda: _connected(opened), 10.0)
    await opened.on_loop(keys.set_key_enabled(Admin.of(opened.services), free_id, True))
    assert (await status_of(closed, free))[0] == 200  # warm closed's cache: enabled

    await opened.on_loop(keys.set_key_enabled(Admin.of(opened.services), free_id, False))

    async def refused_again() -> bool:
        return (await status_of(closed, free))[0] == 401

    assert await until(refused_again, 2.0) < 0.5  # published again once the subscriber is back


async def _connected(gateway) -> bool:
    return bool(gateway.services.shared.bus.connected.is_set())
