"""Billing of Gemini streams passed straight through: the chunk that finishes the
answer (its finishReason and usage) reaches the client only once the charge is
recorded, and a stream cut short is charged the prompt count Gemini reported on its
early chunks."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_gemini.fake_upstream import FakeGemini, prompt_tokens

BODY = {"contents": [{"role": "user", "parts": [{"text": " ".join(f"w{n:02d}" for n in range(30))}]}]}


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("gemini",))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeGemini(api_key=None))


@pytest.fixture
def world(seed, upstream):
    return kit.seed_world(seed, channel_type="gemini", base_url=upstream.url + "/v1beta", balance_usd=100)


@pytest.mark.parametrize("alt", ["?alt=sse", ""])
async def test_the_finishing_chunk_reaches_the_client_after_the_charge_is_recorded(start_gateway, seed, world, upstream, alt):
    user_id, _, secret = world
    gateway = start_gateway()
    url = f"{gateway.url}/v1beta/models/{MODEL}:streamGenerateContent{alt}"
    seen_finish = False
    async with aiohttp.ClientSession() as http:
        async with http.post(url, data=orjson.dumps(BODY), headers={"x-goog-api-key": secret}) as response:
            request_id = response.headers["x-request-id"]
            data = b""
            async for piece in response.content.iter_any():
                data += piece
                if b"finishReason" in piece:
                    seen_finish = True
                    # the client has the end of its answer: its charge is already durable
                    row = kit.usage_row(seed, request_id)
                    assert row["cost_micros"] > 0 and row["end_reason"] == "done"
    assert seen_finish
    row = kit.usage_row(seed, request_id)
    assert row["estimated"] == 0 and row["cost_micros"] == kit.expected_cost(row["input_tokens"], row["output_tokens"])
    assert kit.balance_of(seed, user_id) == 100_000_000 - row["cost_micros"]
    chunks = orjson.loads(data) if not alt else [orjson.loads(f[6:]) for f in data.split(b"\r\n\r\n") if f.strip()]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in chunks[-1]
    kit.assert_invariants(seed)


async def test_a_stream_cut_short_is_charged_the_prompt_gemini_counted(start_gateway, seed, world, upstream):
    _, _, secret = world
    gateway = start_gateway()
    upstream.chunk_delay = 0.05
    url = f"{gateway.url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    async with aiohttp.ClientSession() as http:
        response = await http.post(url, data=orjson.dumps(BODY), headers={"x-goog-api-key": secret})
        request_id = response.headers["x-request-id"]
        frames = 0
        async for line in response.content:
            frames += line.startswith(b"data: {")
            if frames >= 3:
                break
        response.close()
    row = await kit.wait_for_row(seed, request_id)
    assert (row["end_reason"], row["estimated"]) == ("client_gone", 1)
    assert row["input_tokens"] == prompt_tokens(upstream.requests[0]["body"])  # Gemini's own count
    assert row["cost_micros"] == kit.expected_cost(row["input_tokens"], row["output_tokens"]) > 0
    kit.assert_invariants(seed)


async def test_reasoning_is_billed_at_its_own_price_when_it_has_one(start_gateway, seed, world, upstream):
    user_id, _, secret = world
    upstream.thoughts = True
    gateway = start_gateway()
    url = f"{gateway.url}/v1beta/models/{MODEL}:generateContent"
    async with aiohttp.ClientSession() as http:
        async with http.post(url, data=orjson.dumps(BODY), headers={"x-goog-api-key": secret}) as response:
            usage = orjson.loads(await response.read())["usageMetadata"]
    thoughts = usage["thoughtsTokenCount"]
    assert thoughts > 0
    first = kit.usage_row(seed, response.headers["x-request-id"])
    # no reasoning price: reasoning is output, at the output price
    assert first["cost_micros"] == kit.expected_cost(usage["promptTokenCount"], usage["candidatesTokenCount"] + thoughts)
    seed.price(MODEL, kit.INPUT, kit.OUTPUT, cached_input_micros_per_mtok=kit.CACHED, reasoning_micros_per_mtok=30_000_000)
    gateway.services.prices.invalidate()
    async with aiohttp.ClientSession() as http:
        async with http.post(url, data=orjson.dumps(BODY), headers={"x-goog-api-key": secret}) as response:
            await response.read()
    second = kit.usage_row(seed, response.headers["x-request-id"])
    by_hand = -(-(usage["promptTokenCount"] * kit.INPUT + usage["candidatesTokenCount"] * kit.OUTPUT + thoughts * 30_000_000) // 10**6)
    assert second["cost_micros"] == by_hand > first["cost_micros"]
    assert kit.balance_of(seed, user_id) == 100_000_000 - first["cost_micros"] - second["cost_micros"]
