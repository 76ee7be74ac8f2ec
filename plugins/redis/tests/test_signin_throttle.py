"""Sign-in throttling: the Redis counters answer as the in-memory ones do, count
attempts made at the same moment, expire, and when Redis is unreachable fall back
to this process's count (fail open) or refuse (fail closed)."""

from __future__ import annotations

import asyncio

import pytest

from gateway_core.ratelimit.faults import FaultPolicy
from gateway_core.ratelimit.signin import InProcessSignInThrottle, SignInRule, SignInThrottled, SignInThrottleUnavailable
from relaygate_redis.faults import RedisFaults
from relaygate_redis.limiter import connect
from relaygate_redis.signin import RedisSignInThrottle

RULE = SignInRule(free_failures=2, address_free_failures=5, account_free_failures=6, base_delay=30, max_delay=600, window=60)


async def outcomes(throttle, steps) -> list[int]:
    """0 for an attempt let through, else its Retry-After."""
    out = []
    for account, address in steps:
        try:
            await throttle.attempt(account, address, RULE)
            out.append(0)
        except SignInThrottled as refused:
            out.append(refused.retry_after)
    return out


STEPS = [("root", "x")] * 3 + [("root", "y"), ("bob", "x"), ("bob", "x"), ("carol", "x"), ("root", "z")] + [
    (f"u{i}", "w") for i in range(7)
]


async def test_redis_counts_as_memory_does(redis_prefix):
    client = connect("redis://127.0.0.1:6379/0")
    try:
        shared = RedisSignInThrottle(client, redis_prefix, RedisFaults())
        assert await outcomes(shared, STEPS) == await outcomes(InProcessSignInThrottle(), STEPS)
        assert (await outcomes(shared, STEPS))[:3] == [30, 30, 30]  # root from x waits; it was not counted again
        await shared.succeeded("root", "x")
        assert await outcomes(shared, [("root", "x")]) == [0]  # the right password forgot x's failures on root
        keys = [key async for key in client.scan_iter(match=f"{redis_prefix}:si:*")]
        assert keys and all([0 < await client.pttl(key) <= 60_000 for key in keys])
    finally:
        await client.aclose()


async def test_attempts_at_the_same_moment_are_all_counted(redis_prefix):
    client = connect("redis://127.0.0.1:6379/0")
    try:
        shared = RedisSignInThrottle(client, redis_prefix, RedisFaults())
        results = await asyncio.gather(*(outcomes(shared, [("root", "x")]) for _ in range(10)), return_exceptions=True)
        assert sum(1 for r in results if r == [0]) == 2  # the free failures, not one more
    finally:
        await client.aclose()


async def test_unreachable_redis_fails_open_to_memory_or_closed(private_redis):
    client = connect(private_redis.url, timeout=0.5)
    private_redis.stop()
    try:
        opened = RedisSignInThrottle(client, "x", RedisFaults())  # signin fails open by default
        assert await outcomes(opened, [("root", "x")] * 3) == [0, 0, 30]  # counted in this process meanwhile
        assert opened.faults.counts[("signin", "open")] == 3
        closed = RedisSignInThrottle(client, "x", RedisFaults(FaultPolicy(signin="closed")))
        with pytest.raises(SignInThrottleUnavailable):
            await closed.attempt("root", "y", RULE)
    finally:
        await client.aclose()
