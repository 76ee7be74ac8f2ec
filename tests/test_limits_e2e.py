"""Rate limits over real HTTP: 429 with a correct Retry-After, OpenAI's x-ratelimit-*
headers on every response, exact counts and a concurrency limit never exceeded under
concurrent load (counted by the fake upstream), tokens corrected by real usage, per-user
limits across keys, group defaults, and slots released after errors and disconnects."""

from __future__ import annotations

import asyncio
import re
import time

import aiohttp
import openai
import pytest

from gateway_core.config import Config
from gateway_core.store import limits
from gateway_openai.fake_upstream import Fault, FakeOpenAI

MODEL = "gpt-test"
CHAT = [{"role": "user", "content": "hello there"}]


class CountingUpstream(FakeOpenAI):
    """The fake OpenAI upstream, holding each request ``hold`` seconds (the kit's
    fake counts how many it serves at once: ``most_in_flight``)."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = 0.0

    async def chat(self, request):
        if self.hold:
            await asyncio.sleep(self.hold)
        return await super().chat(request)


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    """Only the plugins these tests speak through (others may be mid-change)."""
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai", "demo"))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(CountingUpstream())


@pytest.fixture
def alice(seed, upstream):
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL])
    seed.price(MODEL, 0, 0, free=True)  # billing is not what these tests are about
    return seed.user("alice")


def client(gateway, key) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0)


async def raw_chat(gateway, key, messages=CHAT, **body):
    return await client(gateway, key).chat.completions.with_raw_response.create(model=MODEL, messages=messages, **body)


async def test_no_limits_no_headers(start_gateway, seed, alice):
    _, key = seed.key(alice)
    gateway = start_gateway()
    raw = await raw_chat(gateway, key)
    assert not [name for name in raw.headers if name.startswith("x-ratelimit")]


async def test_requests_per_minute_429_with_retry_after_and_headers(start_gateway, seed, alice, upstream):
    _, key = seed.key(alice, limits={"rpm": 3})
    gateway = start_gateway()
    for remaining in ("2", "1", "0"):
        raw = await raw_chat(gateway, key)
        assert raw.headers["x-ratelimit-limit-requests"] == "3"
        assert raw.headers["x-ratelimit-remaining-requests"] == remaining
        assert raw.headers["x-ratelimit-reset-requests"].endswith("s")
        assert "x-ratelimit-limit-tokens" not in raw.headers
    # a full minute less what refilled while the three ran (a second or more on a busy machine)
    reset = raw.headers["x-ratelimit-reset-requests"]
    assert reset == "1m0s" or (re.fullmatch(r"[1-5]?[0-9](\.[0-9]+)?s", reset) is not None and float(reset[:-1]) >= 45), reset
    with pytest.raises(openai.RateLimitError) as caught:
        await raw_chat(gateway, key)
    error = caught.value
    assert error.status_code == 429 and error.code == "rate_limit_exceeded"
    assert "3 requests per minute" in error.message and "Try again in 20 s" in error.message
    headers = error.response.headers
    assert headers["retry-after"] == "20"  # one request every 20 s at 3 a minute
    assert headers["x-ratelimit-remaining-requests"] == "0" and headers["x-ratelimit-limit-requests"] == "3"
    assert len(upstream.requests) == 3  # the refused request never reached an upstream
    rows = seed.rows("SELECT status, error_type, channel_id FROM usage_logs ORDER BY id")
    assert rows[-1] == {"status": 429, "error_type": "rate_limit", "channel_id": None}


async def test_exact_under_concurrent_load(start_gateway, seed, alice, upstream):
    _, key = seed.key(alice, limits={"rpm": 5})
    gateway = start_gateway()
    sdk = client(gateway, key)
    results = await asyncio.gather(
        *(sdk.chat.completions.create(model=MODEL, messages=CHAT) for _ in range(20)), return_exceptions=True
    )
    refused = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert len(refused) == 15 and len(upstream.requests) == 5  # exactly the limit, not one more
    assert {r.response.headers["retry-after"] for r in refused} == {"12"}  # 60 s / 5


async def test_the_concurrency_limit_is_never_exceeded(start_gateway, seed, alice, upstream):
    _, key = seed.key(alice, limits={"concurrency": 3})
    upstream.hold = 1.5  # long enough for a whole wave to be admitted or refused, even on a loaded machine
    gateway = start_gateway()
    sdk = client(gateway, key)
    succeeded = refused = 0
    for _ in range(3):  # waves of 12 at once
        results = await asyncio.gather(
            *(sdk.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT) for _ in range(12)),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, openai.RateLimitError):
                refused += 1
                assert result.response.headers["retry-after"] == "1"
                assert "3 request(s) in progress at once" in result.message
            else:
                assert not isinstance(result, Exception), result
                succeeded += 1
    assert upstream.most_in_flight <= 3
    assert succeeded == 9 and refused == 27  # each wave: exactly three in flight
    # every slot came back
    await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)


async def test_streams_hold_their_slot_until_they_end_and_carry_the_headers(start_gateway, seed, alice, upstream):
    _, key = seed.key(alice, limits={"concurrency": 1, "rpm": 100})
    upstream.chunk_delay = 0.1
    gateway = start_gateway()
    sdk = client(gateway, key)
    raw = await sdk.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, stream=True)
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.headers["x-ratelimit-limit-requests"] == "100"
    stream = raw.parse()
    with pytest.raises(openai.RateLimitError):  # the stream is still open
        await sdk.chat.completions.create(model=MODEL, messages=CHAT)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "echo: hello there"
    await sdk.chat.completions.create(model=MODEL, messages=CHAT)


async def test_tokens_are_estimated_then_corrected_by_real_usage(start_gateway, seed, alice, upstream):
    _, key = seed.key(alice, limits={"tpm": 6000})
    gateway = start_gateway()
    first = await raw_chat(gateway, key)
    completion = first.parse()
    used = completion.usage.prompt_tokens + completion.usage.completion_tokens
    remaining = int(first.headers["x-ratelimit-remaining-tokens"])
    assert first.headers["x-ratelimit-limit-tokens"] == "6000"
    assert remaining < 6000 - used  # the estimate (from the body's size) is above the real usage here
    second = await raw_chat(gateway, key)
    # after the first request, only its real usage stays taken; the second's estimate is taken now
    expected = remaining - used
    assert expected <= int(second.headers["x-ratelimit-remaining-tokens"]) <= expected + 10  # + refill meanwhile


async def test_tokens_per_minute_429(start_gateway, seed, alice, upstream):
    _, key = seed.key(alice, limits={"tpm": 40})
    gateway = start_gateway()
    long = [{"role": "user", "content": "w " * 100}]  # about 150 tokens in all: above the minute's 40
    usage = (await raw_chat(gateway, key, messages=long)).parse().usage  # a full bucket lets it through
    with pytest.raises(openai.RateLimitError) as caught:
        await raw_chat(gateway, key, messages=long)
    assert "40 tokens per minute" in caught.value.message
    retry_after = int(caught.value.response.headers["retry-after"])
    # the bucket is in debt by (real usage - 40) and needs 40 again: usage tokens at 40 a minute
    assert abs(retry_after - usage.total_tokens * 60 / 40) <= 2
    assert len(upstream.requests) == 1


async def test_user_limits_span_keys_and_override_group_defaults(start_gateway, seed, alice, upstream):
    seed._write(limits.set_group_limits, "default", {"rpm": 1})
    seed._write(limits.set_user_limits, alice, {"rpm": 2})
    _, first = seed.key(alice, name="one")
    _, second = seed.key(alice, name="two")
    bob = seed.user("bob")
    _, bobs = seed.key(bob)
    gateway = start_gateway()
    await raw_chat(gateway, first)
    await raw_chat(gateway, second)
    with pytest.raises(openai.RateLimitError, match="your account may make 2 requests per minute"):
        await raw_chat(gateway, first)
    await raw_chat(gateway, bobs)  # bob has the group's default of 1
    with pytest.raises(openai.RateLimitError, match="your account may make 1 requests per minute"):
        await raw_chat(gateway, bobs)


async def test_the_key_limit_and_the_user_limit_both_apply(start_gateway, seed, alice):
    seed._write(limits.set_user_limits, alice, {"rpm": 10})
    _, capped = seed.key(alice, name="capped", limits={"rpm": 1})
    _, free = seed.key(alice, name="free")
    gateway = start_gateway()
    raw = await raw_chat(gateway, capped)
    assert raw.headers["x-ratelimit-limit-requests"] == "1"  # the tighter of the two
    with pytest.raises(openai.RateLimitError, match="this API key may make 1 requests per minute"):
        await raw_chat(gateway, capped)
    raw = await raw_chat(gateway, free)
    assert (raw.headers["x-ratelimit-limit-requests"], raw.headers["x-ratelimit-remaining-requests"]) == ("10", "8")


async def test_slots_come_back_after_upstream_errors_and_disconnects(start_gateway, seed, alice, upstream):
    _, key = seed.key(alice, limits={"concurrency": 1})
    gateway = start_gateway()
    sdk = client(gateway, key)
    upstream.fail_next(Fault(status=500))
    with pytest.raises(openai.InternalServerError):
        await sdk.chat.completions.create(model=MODEL, messages=CHAT)
    with pytest.raises(openai.BadRequestError):  # refused after admission by the router: still released
        await sdk.chat.completions.create(model="no-such-model", messages=CHAT)
    await sdk.chat.completions.create(model=MODEL, messages=CHAT)

    # a client that hangs up while the upstream is still thinking
    upstream.fail_next(Fault(first_byte_delay=0.5))
    hasty = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0, timeout=0.1)
    with pytest.raises(openai.APITimeoutError):
        await hasty.chat.completions.create(model=MODEL, messages=CHAT)
    await wait_for_rows(seed, 4)
    await sdk.chat.completions.create(model=MODEL, messages=CHAT)

    # a client that hangs up in the middle of a stream
    upstream.chunk_delay = 0.2
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": " ".join(["w"] * 30)}]}
    async with aiohttp.ClientSession() as http:
        response = await http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        await response.content.readany()
        response.close()
    rows = await wait_for_rows(seed, 6)
    assert rows[-1]["end_reason"] == "client_gone"
    upstream.chunk_delay = 0.0
    await sdk.chat.completions.create(model=MODEL, messages=CHAT)


async def wait_for_rows(seed, count: int, timeout: float = 5.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        rows = seed.rows("SELECT * FROM usage_logs ORDER BY id")
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.05)


async def test_limits_changed_by_the_cli_apply_within_a_second(start_gateway, seed, alice):
    key_id, key = seed.key(alice)
    gateway = start_gateway()
    await raw_chat(gateway, key)
    seed._write(limits.set_key_limits, key_id, {"rpm": 1})
    await asyncio.sleep(1.1)  # the key cache's lifetime
    raw = await raw_chat(gateway, key)
    assert raw.headers["x-ratelimit-limit-requests"] == "1"
    with pytest.raises(openai.RateLimitError):
        await raw_chat(gateway, key)
