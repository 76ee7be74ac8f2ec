"""An upstream cannot make the gateway hold more than the bounds: a non-streaming
answer over ``max_answer_bytes`` and one stream frame over ``max_frame_bytes``
are a 502 in the caller's shape, the upstream connection is closed (the upstream
sees its writes fail, having sent a bounded amount) and the channel's failure
counts; a pooled connection the upstream closed as a request went out is
retried on another. Over real HTTP, with the official openai SDK."""

from __future__ import annotations

import asyncio
import time

import attrs
import openai
import pytest
from aiohttp import web

from gateway_core.config import Config
from gateway_core.testing import FakeUpstream

MODEL = "gpt-bounds"  # the model FloodingUpstream answers as (conftest.py)
LIMIT = 256 * 1024


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(
        db_path=str(tmp_path / "relaygate.db"), load=("openai",), max_answer_bytes=LIMIT, max_frame_bytes=LIMIT,
        breaker_failures=1, breaker_cooldown=60, max_attempts=1,
    )  # fmt: skip


@pytest.fixture
def upstream(flooding_upstream):
    return flooding_upstream


@pytest.fixture
def secret(seed, upstream):
    seed.channel("flood", type="openai", base_url=upstream.url, models=[MODEL])
    seed.price(MODEL, 0, 0, free=True)
    return seed.key(seed.user("alice"))[1]


def sdk(gateway, key) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0, timeout=30)


async def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def no_channel_left(client: openai.AsyncOpenAI) -> None:
    """The channel's failure was counted: with breaker_failures=1 its breaker is open."""
    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 503


@pytest.mark.parametrize("mode", ["declared", "endless"])
async def test_an_answer_over_max_answer_bytes_is_a_502_and_its_connection_closed(start_gateway, secret, upstream, seed, mode):
    upstream.mode = mode
    gateway = start_gateway()
    async with sdk(gateway, secret) as client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 502
        assert f"larger than {LIMIT} bytes" in caught.value.message and "max_answer_bytes" in caught.value.message
        await wait_until(lambda: upstream.cut == 1)  # the gateway hung up on the upstream
        assert upstream.sent[0] < LIMIT + 8 * 1024 * 1024  # what it read is bounded (socket buffers aside)
        await no_channel_left(client)
    row = seed.rows("SELECT status, attempts FROM usage_logs ORDER BY id")[0]
    assert row["status"] == 502 and "max_answer_bytes" in row["attempts"]


async def test_a_stream_frame_over_max_frame_bytes_ends_the_stream_with_an_error(start_gateway, secret, upstream):
    upstream.mode = "frame"
    gateway = start_gateway()
    async with sdk(gateway, secret) as client:
        stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True)
        texts = []
        with pytest.raises(openai.APIError) as caught:
            async for chunk in stream:
                texts.append(chunk.choices[0].delta.content)
        assert texts == ["hel"]  # the frame before the big one came through
        assert f"larger than {LIMIT} bytes" in str(caught.value)
        await wait_until(lambda: upstream.cut == 1)
        assert upstream.sent[0] < LIMIT + 8 * 1024 * 1024
        await no_channel_left(client)


async def test_answers_within_the_bounds_pass(start_gateway, secret, upstream):
    gateway = start_gateway()
    async with sdk(gateway, secret) as client:
        for _ in range(3):
            completion = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
            assert completion.choices[0].message.content == "fine"


async def test_a_pooled_connection_closed_by_the_upstream_is_retried_on_another(start_gateway, seed, fake_upstream):
    """The upstream ends idle keep-alive connections after 0.2 s; requests spaced about
    that much apart race with its close (the request goes out on a connection being
    closed). Each such request is sent again on a new connection: none fails."""
    closing = await fake_upstream(KeepAliveUpstream(api_key=None))
    seed.channel("closing", type="openai", base_url=closing.url, models=["gpt-close"])
    seed.price("gpt-close", 0, 0, free=True)
    secret = seed.key(seed.user("bob"))[1]
    gateway = start_gateway()
    async with sdk(gateway, secret) as client:
        for n in range(25):
            completion = await client.chat.completions.create(model="gpt-close", messages=[{"role": "user", "content": "hi"}])
            assert completion.choices[0].message.content == "fine"
            await asyncio.sleep(0.2 + (n % 5 - 2) * 0.002)


@attrs.define
class KeepAliveUpstream(FakeUpstream):
    """Answers, then closes the connection after 0.2 s without a next request (a
    short keep-alive, as many servers have)."""

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self.chat)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        await self.admit(request, await request.json())
        transport = request.transport
        loop = asyncio.get_running_loop()
        if transport is not None:  # closed unless another request came meanwhile
            count = len(self.requests)
            loop.call_later(0.2, lambda: len(self.requests) == count and transport.close())
        return web.json_response({
            "id": "c2", "object": "chat.completion", "created": 1, "model": "gpt-close",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
        })  # fmt: skip
