"""Sign-in throttling shared by two gateways through Redis: failures counted on
one are counted on the other, per account and address."""

from __future__ import annotations

import attrs
import redis.asyncio as aioredis

REDIS_URL = "redis://127.0.0.1:6379/0"


async def test_failures_on_one_gateway_delay_that_address_on_the_other(relaygate_config, users, start_gateway, browsers, relaygate_redis_prefix):
    config = attrs.evolve(relaygate_config, trusted_proxies=("127.0.0.1",), redis=REDIS_URL, redis_prefix=relaygate_redis_prefix)
    a, b = start_gateway(config), start_gateway(config)
    assert type(a.services.signin).__name__ == "RedisSignInThrottle"
    attacker, owner = {"X-Forwarded-For": "203.0.113.9"}, {"X-Forwarded-For": "198.51.100.30"}
    on_a = await browsers(url=a.url)
    for _ in range(3):
        assert (await on_a.sign_in("root", "guess", headers=attacker))[0] == 401
    status, page = await (await browsers(url=b.url)).sign_in("root", headers=attacker)
    assert status == 429 and "wait 1 second" in page  # counted on A, refused by B
    assert (await (await browsers(url=b.url)).sign_in("root", headers=owner))[0] == 200
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        counters = [key async for key in client.scan_iter(match=f"{relaygate_redis_prefix}:si:*")]
        assert counters and all([await client.pttl(key) > 0 for key in counters])  # every counter expires
    finally:
        await client.aclose()

