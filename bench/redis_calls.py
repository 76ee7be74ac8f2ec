"""CPU of the Redis calls one request makes, beside the same calls in memory.

A request under key limits on a channel with a concurrency cap takes its limits
and its channel's slot, and gives both back. With Redis the gateway does that
in one script each way (``acquire_with_slot``, then ``release_with_slot``, not
waited for); the older sequence — one script for the limits, one for the slot,
and two to give them back — is measured beside it ("two scripts": what a
request still runs when its limits are counted without shared channel health).
Each sequence runs N times, one at a time (c1) and 50 at once (c50), and this
prints the CPU per request of this process (the gateway's side; Redis's own
CPU is not in it)::

    .venv/bin/python bench/redis_calls.py [--redis redis://127.0.0.1:6379/0] [--requests 3000]

See docs/performance.md ("Metrics and shared state on the path").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

import uvloop

from gateway_core.ratelimit.memory import InProcessRateLimiter
from gateway_core.ratelimit.state import Subject
from gateway_core.records import RateLimits
from relaygate_redis.limiter import RedisRateLimiter
from relaygate_redis.resp import RespClient

KEY = [Subject("key", 1, RateLimits(100_000_000, 1_000_000_000, 10_000))]
CHANNEL = [Subject("channel", 1, RateLimits(concurrency=10_000))]


async def one(limits: Any, slots: Any) -> None:
    """Limits and slot taken and given back separately (memory, or two scripts)."""
    permit = await limits.acquire(KEY, 10)
    slot = await slots.acquire(CHANNEL, 0)
    await asyncio.sleep(0)  # the upstream call
    if isinstance(slots, RedisRateLimiter):
        slots.release_nowait(slot)
    else:
        await slots.release(slot, 0)
    await limits.release(permit, 12)


async def together(limits: RedisRateLimiter, slots: RedisRateLimiter) -> None:
    """Limits and slot taken in one script and given back in one."""
    permit, slot = await limits.acquire_with_slot(KEY, 10, CHANNEL[0], slots)
    await asyncio.sleep(0)  # the upstream call
    if not limits.release_with_slot(permit, 12, slot, slots):
        raise RuntimeError("the slot was not given back with the limits")


async def measure(limits: Any, slots: Any, requests: int, sequence: Any = one) -> dict[str, float]:
    for _ in range(200):
        await sequence(limits, slots)
    out = {}
    for concurrency in (1, 50):
        started = time.process_time()
        for _ in range(requests // concurrency):
            await asyncio.gather(*(sequence(limits, slots) for _ in range(concurrency)))
        out[f"c{concurrency}"] = (time.process_time() - started) * 1e6 / requests
    return out


async def main(args: argparse.Namespace) -> None:
    memory = await measure(InProcessRateLimiter(), InProcessRateLimiter(), args.requests)
    client = RespClient(args.redis)
    prefix = f"bench-calls-{os.getpid()}"
    limits, slots = RedisRateLimiter(client, prefix=prefix), RedisRateLimiter(client, prefix=prefix)
    separate = await measure(limits, slots, args.requests)
    combined = await measure(limits, slots, args.requests, together)
    await limits.close()
    await slots.close()
    await client.close()
    print(f"{'':<6} {'memory':>8} {'two scripts':>12} {'added':>7} {'one script':>11} {'added':>7}   (µs of CPU per request)")
    for phase in ("c1", "c50"):
        base = memory[phase]
        print(
            f"{phase:<6} {base:>8.1f} {separate[phase]:>12.1f} {separate[phase] - base:>7.1f}"
            f" {combined[phase]:>11.1f} {combined[phase] - base:>7.1f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--requests", type=int, default=3000)
    uvloop.run(main(parser.parse_args()))
