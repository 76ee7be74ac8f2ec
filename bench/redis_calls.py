"""CPU of the Redis calls one request makes, beside the same calls in memory.

A request under key limits on a channel with a concurrency cap takes its limits
(one script), its channel's slot (one script), and gives both back (two
scripts, not waited for). This runs that sequence N times, one at a time (c1)
and 50 at once (c50), with the limiters the gateway uses — in memory, then on
Redis through the request path's pipelined connection — and prints the CPU per
request of this process (the gateway's side; Redis's own CPU is not in it)::

    .venv/bin/python bench/redis_calls.py [--redis redis://127.0.0.1:6379/0] [--requests 3000]

See docs/performance.md ("Redis").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

import uvloop

from gateway_core.ratelimit.memory import InProcessRateLimiter
from gateway_core.ratelimit.redis import RedisRateLimiter
from gateway_core.ratelimit.resp import RespClient
from gateway_core.ratelimit.state import Subject
from gateway_core.records import RateLimits

KEY = [Subject("key", 1, RateLimits(100_000_000, 1_000_000_000, 10_000))]
CHANNEL = [Subject("channel", 1, RateLimits(concurrency=10_000))]


async def one(limits: Any, slots: Any) -> None:
    permit = await limits.acquire(KEY, 10)
    slot = await slots.acquire(CHANNEL, 0)
    await asyncio.sleep(0)  # the upstream call
    if isinstance(slots, RedisRateLimiter):
        slots.release_nowait(slot)
    else:
        await slots.release(slot, 0)
    await limits.release(permit, 12)


async def measure(limits: Any, slots: Any, requests: int) -> dict[str, float]:
    for _ in range(200):
        await one(limits, slots)
    out = {}
    for concurrency in (1, 50):
        started = time.process_time()
        for _ in range(requests // concurrency):
            await asyncio.gather(*(one(limits, slots) for _ in range(concurrency)))
        out[f"c{concurrency}"] = (time.process_time() - started) * 1e6 / requests
    return out


async def main(args: argparse.Namespace) -> None:
    memory = await measure(InProcessRateLimiter(), InProcessRateLimiter(), args.requests)
    client = RespClient(args.redis)
    prefix = f"bench-calls-{os.getpid()}"
    limits, slots = RedisRateLimiter(client, prefix=prefix), RedisRateLimiter(client, prefix=prefix)
    redis = await measure(limits, slots, args.requests)
    await limits.close()
    await slots.close()
    await client.close()
    print(f"{'':<6} {'memory µs/req':>14} {'Redis µs/req':>13} {'added µs/req':>13}")
    for phase in ("c1", "c50"):
        print(f"{phase:<6} {memory[phase]:>14.1f} {redis[phase]:>13.1f} {redis[phase] - memory[phase]:>13.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--requests", type=int, default=3000)
    uvloop.run(main(parser.parse_args()))
