"""State shared through Redis by several gateways on one database, over real HTTP:
channel concurrency caps counted across gateways, circuit breakers opened for
all with one half-open probe, and changes made through one gateway (or the
CLI) honoured by the others at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import attrs
import openai
import pytest

from gateway_core.admin import Admin, keys, prices
from gateway_core.channel_type import Timeouts
from gateway_core.commands.cli import main
from gateway_core.config import Config, config_from_mapping
from gateway_core.records import PriceRecord
from gateway_openai.fake_upstream import Fault, FakeOpenAI

REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = "gpt-shared"
CHAT: Any = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def relaygate_config(tmp_path, redis_prefix) -> Config:
    gateway = {"redis": REDIS_URL, "redis_prefix": redis_prefix, "breaker_failures": 2, "breaker_cooldown": 1.0}
    config = config_from_mapping({"load": ["openai", "demo"], "gateway": gateway}, db_path=str(tmp_path / "relaygate.db"))
    return attrs.evolve(config, timeouts=Timeouts(connect=1.0, first_byte=5.0, idle=5.0))


def sdk(gateway, secret: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=20)


async def ask(gateway, secret: str) -> int:
    """The status of one chat completion through ``gateway``."""
    async with sdk(gateway, secret) as client:
        try:
            await client.chat.completions.create(model=MODEL, messages=CHAT)
            return 200
        except openai.APIStatusError as error:
            return error.status_code


async def scrape(gateway) -> str:
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway.url + "/metrics") as response:
            assert response.status == 200
            return await response.text()


async def until(predicate, timeout: float = 5.0) -> float:
    """Seconds until ``predicate()`` (awaited) is true."""
    started = time.monotonic()
    while not await predicate():
        assert time.monotonic() - started < timeout, "not within the time allowed"
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def test_a_channel_cap_holds_across_gateways(start_gateway, seed, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("capped", type="openai", base_url=upstream.url, models=[MODEL], concurrency=2)
    _, secret = seed.key(seed.user("alice"))
    gateways = [start_gateway(), start_gateway(), start_gateway()]
    upstream.fail_next(*[Fault(first_byte_delay=0.3)] * 12)  # each answer held a while
    statuses = await asyncio.gather(*(ask(gateways[i % 3], secret) for i in range(12)))
    assert upstream.most_in_flight == 2  # never more than the cap in flight, whichever gateway sent them
    assert statuses.count(200) >= 2 and set(statuses) <= {200, 503}
    upstream.faults.clear()
    # the slots are given back: one at a time, every request passes
    for i in range(3):
        assert await ask(gateways[i], secret) == 200


async def test_a_breaker_opened_on_one_gateway_keeps_the_others_off_and_one_probes(start_gateway, seed, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("flaky", type="openai", base_url=upstream.url, models=[MODEL])
    _, secret = seed.key(seed.user("alice"))
    a, b, c = start_gateway(), start_gateway(), start_gateway()
    upstream.fail_next(Fault(status=500), Fault(status=500))
    assert [await ask(a, secret), await ask(a, secret)] == [502, 502]  # two failures open A's breaker
    sent = len(upstream.requests)

    async def others_refuse() -> bool:
        return await ask(b, secret) == 503 and await ask(c, secret) == 503

    assert await until(others_refuse, 0.9) < 0.9  # within the cool-down: B and C skip the channel
    assert len(upstream.requests) == sent  # without calling it
    assert b.services.health.health(1).breaker.state == "open"
    assert 'relaygate_breaker_open{channel="flaky",key="channel"} 1.0' in await scrape(b)  # B's gauge says so too
    # the cool-down ends: of many requests at once on three gateways, one probes
    await asyncio.sleep(1.1)
    upstream.fail_next(Fault(first_byte_delay=0.5))  # the probe takes a while: the others come meanwhile
    statuses = await asyncio.gather(*(ask(g, secret) for g in (a, b, c) for _ in range(4)))
    assert len(upstream.requests) == sent + 1, statuses
    assert statuses.count(200) == 1 and statuses.count(503) == 11
    # its success closed the breaker everywhere

    async def all_pass() -> bool:
        return [await ask(g, secret) for g in (a, b, c)] == [200, 200, 200]

    await until(all_pass, 3.0)


async def test_a_key_disabled_through_one_gateway_is_refused_by_the_others_at_once(start_gateway, seed, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL])
    key_id, secret = seed.key(seed.user("alice"))
    a, b, c = start_gateway(), start_gateway(), start_gateway()
    assert [await ask(g, secret) for g in (a, b, c)] == [200, 200, 200]  # cached as enabled everywhere
    await a.on_loop(keys.set_key_enabled(Admin.of(a.services), key_id, False))  # as the console on A does

    async def refused() -> bool:
        return await ask(b, secret) == 401 and await ask(c, secret) == 401

    assert await until(refused, 1.0) < 0.5  # well within the caches' one-second lifetime
    assert b.services.shared is not None and b.services.shared.bus.received >= 1


async def test_a_change_made_by_the_cli_is_published(start_gateway, seed, fake_upstream, relaygate_config, monkeypatch):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL])
    key_id, secret = seed.key(seed.user("alice"))
    a, b = start_gateway(), start_gateway()
    assert [await ask(a, secret), await ask(b, secret)] == [200, 200]
    received = [g.services.shared.bus.received for g in (a, b)]
    monkeypatch.setenv("RELAYGATE_REDIS", REDIS_URL)
    plugins = relaygate_config.db_path + ".toml"
    with open(plugins, "w") as file:
        file.write(f'load = ["openai", "demo"]\n[gateway]\nredis_prefix = "{relaygate_config.redis_prefix}"\n')
    done = await asyncio.to_thread(main, ["--db", relaygate_config.db_path, "--plugins", plugins, "key", "disable", str(key_id)])
    assert done == 0

    async def refused() -> bool:
        return await ask(a, secret) == 401 and await ask(b, secret) == 401

    assert await until(refused, 1.0) < 0.5
    assert [g.services.shared.bus.received for g in (a, b)] > received


async def test_a_price_change_is_seen_at_once(start_gateway, seed, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL], free_unpriced=False)
    seed.price(MODEL, 0, 0, free=True)
    _, secret = seed.key(seed.user("alice", balance_usd=1))
    a, b = start_gateway(), start_gateway()
    assert await ask(b, secret) == 200
    assert b.services.prices is not None and b.services.prices.fresh() is not None
    price = PriceRecord(model=MODEL, input_micros_per_mtok=5_000_000, output_micros_per_mtok=0)
    await a.on_loop(prices.set_price(Admin.of(a.services), price))

    async def dropped() -> bool:
        return b.services.prices.fresh() is None

    assert await until(dropped, 1.0) < 0.5


async def test_a_keys_limits_and_its_channels_slot_are_one_count(start_gateway, seed, fake_upstream, redis_prefix):
    """A key's limits are taken with its channel's slot (one script): a request the
    full channel turns away costs the key nothing, one over the key's limits takes
    no slot, and everything is given back when the requests end."""
    upstream = await fake_upstream(FakeOpenAI())
    channel = seed.channel("capped", type="openai", base_url=upstream.url, models=[MODEL], concurrency=1)
    key_id, secret = seed.key(seed.user("alice"), limits={"rpm": 3, "concurrency": 5})
    a, b = start_gateway(), start_gateway()
    upstream.fail_next(Fault(first_byte_delay=1.0))
    held = asyncio.ensure_future(ask(a, secret))  # holds the channel's one slot
    await until(lambda: _true(upstream.requests_in_flight == 1))
    assert await ask(b, secret) == 503  # the channel is full on every gateway: nothing taken from the key
    assert await held == 200
    async with sdk(b, secret) as client:
        raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT)
        assert raw.headers["x-ratelimit-remaining-requests"] == "1"  # 3 a minute, 2 taken: the 503 took none
    assert await ask(a, secret) == 200
    async with sdk(a, secret) as client:
        with pytest.raises(openai.RateLimitError) as refused:
            await client.chat.completions.create(model=MODEL, messages=CHAT)
    assert 18 <= int(refused.value.response.headers["retry-after"]) <= 20  # 60 s / 3, less what refilled meanwhile
    assert len(upstream.requests) == 3
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        leases = [f"{redis_prefix}:rs:channel:{channel}", f"{redis_prefix}:rs:key:{key_id}"]

        async def all_given_back() -> bool:
            return all([await client.zcard(name) == 0 for name in leases])

        await until(all_given_back)  # the slot and the key's request in flight, given back together
    finally:
        await client.aclose()


async def _true(value: bool) -> bool:
    return value


async def test_requests_in_flight_are_counted_over_every_gateway(start_gateway, seed, fake_upstream):
    """What the console shows per channel: the requests in flight in every worker
    and replica, not only in the one answering the page."""
    upstream = await fake_upstream(FakeOpenAI())
    channel = seed.channel("slow", type="openai", base_url=upstream.url, models=[MODEL])
    _, secret = seed.key(seed.user("alice"))
    a, b = start_gateway(), start_gateway()
    upstream.fail_next(*[Fault(first_byte_delay=3.0)] * 3)
    held = [asyncio.ensure_future(ask(a, secret)) for _ in range(2)] + [asyncio.ensure_future(ask(b, secret))]
    await until(lambda: _true(upstream.requests_in_flight == 3))
    assert b.services.health.in_flight() == {channel: 1}  # its own
    everywhere = b.services.health.shared

    async def all_three() -> bool:
        return await b.on_loop(everywhere.in_flight()) == {channel: 3}

    await until(all_three, timeout=2.5)  # a and b report every second
    assert await asyncio.gather(*held) == [200, 200, 200]

    async def none() -> bool:
        return await b.on_loop(everywhere.in_flight()) == {}

    await until(none, timeout=2.5)
