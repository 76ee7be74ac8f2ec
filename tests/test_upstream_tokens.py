"""The keeping of short-lived upstream tokens (``gateway_core.upstream_tokens``): one
fetch for every waiting caller, a refresh before the end, the kept token while a
refresh fails, forgetting only the refused token."""

from __future__ import annotations

import asyncio

import pytest

from gateway_core.errors import UpstreamError
from gateway_core.upstream_tokens import FetchedToken, TokenCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_concurrent_callers_share_one_fetch_and_the_token_is_kept_until_due():
    clock, gate, issued = Clock(), asyncio.Event(), []

    async def fetch() -> FetchedToken:
        await gate.wait()
        issued.append(f"t{len(issued) + 1}")
        return FetchedToken(issued[-1], lifetime=3600)

    cache: TokenCache[int] = TokenCache(clock)
    waiting = [asyncio.ensure_future(cache.token(7, fetch)) for _ in range(5)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiting) == ["t1"] * 5 and cache.fetches == 1
    clock.now += 3600 - 301  # before the margin (300 s before the end): kept
    assert await cache.token(7, fetch) == "t1"
    clock.now += 2  # inside the margin: refreshed
    assert await cache.token(7, fetch) == "t2" and cache.fetches == 2


async def test_a_short_token_is_refreshed_at_half_its_life():
    clock = Clock()
    cache: TokenCache[str] = TokenCache(clock)
    count = iter(range(1, 10))

    async def fetch() -> FetchedToken:
        return FetchedToken(f"t{next(count)}", lifetime=60)

    assert await cache.token("k", fetch) == "t1"
    clock.now += 29
    assert await cache.token("k", fetch) == "t1"
    clock.now += 2
    assert await cache.token("k", fetch) == "t2"


async def test_a_failed_refresh_answers_with_the_kept_token_while_it_is_valid():
    clock = Clock()
    cache: TokenCache[str] = TokenCache(clock)
    failing = False

    async def fetch() -> FetchedToken:
        if failing:
            raise UpstreamError("the token endpoint is down", retryable=True)
        return FetchedToken("t1", lifetime=1000)

    assert await cache.token("k", fetch) == "t1"
    failing = True
    clock.now += 800  # due for refresh (after 700 s), still valid
    assert await cache.token("k", fetch) == "t1"
    clock.now += 300  # expired: the failure is the answer
    with pytest.raises(UpstreamError, match="down"):
        await cache.token("k", fetch)


async def test_forget_drops_only_the_refused_token():
    cache: TokenCache[str] = TokenCache(Clock())
    values = iter(["t1", "t2", "t3"])

    async def fetch() -> FetchedToken:
        return FetchedToken(next(values), lifetime=3600)

    assert await cache.token("k", fetch) == "t1"
    cache.forget("k", "an older token")  # another caller's stale refusal: kept
    assert await cache.token("k", fetch) == "t1"
    cache.forget("k", "t1")
    assert await cache.token("k", fetch) == "t2"
    cache.forget("k")
    assert await cache.token("k", fetch) == "t3" and cache.fetches == 3
