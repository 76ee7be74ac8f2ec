"""What an Anthropic stream cut short or left unfinished is charged: the input the
upstream counted in ``message_start`` (not the request's bytes, which hold a large
image), and the output that was delivered, estimated and marked so — never the
placeholder output count of ``message_start``."""

from __future__ import annotations

import base64

import aiohttp
import anthropic
import orjson
import pytest

from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.tally import estimate_tokens

IMAGE = base64.b64encode(bytes(range(256)) * 1200).decode()  # about 400 KB of base64
REPORTED_INPUT = 16  # what the upstream counts for the prompt


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("anthropic",))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeAnthropic(api_key=None, reported_input=REPORTED_INPUT))  # any upstream key


@pytest.fixture
def world(seed, upstream):
    return kit.seed_world(seed, channel_type="anthropic", base_url=upstream.url + "/v1", balance_usd=100)


async def test_a_stream_abandoned_half_way_is_charged_the_reported_input_not_the_image(start_gateway, seed, world, upstream):
    user_id, _, secret = world
    gateway = start_gateway()
    upstream.chunk_delay = 0.05
    words = " ".join(f"w{n:02d}" for n in range(40))
    body = {"model": MODEL, "max_tokens": 300, "stream": True, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": IMAGE}},
        {"type": "text", "text": words}]}]}  # fmt: skip
    received = ""
    headers = {"x-api-key": secret, "anthropic-version": "2023-06-01"}
    async with aiohttp.ClientSession() as http:
        response = await http.post(gateway.url + "/v1/messages", json=body, headers=headers)
        request_id = response.headers["x-request-id"]
        async for line in response.content:
            if line.startswith(b"data: {"):
                payload = orjson.loads(line[6:])
                received += (payload.get("delta") or {}).get("text") or ""
            if len(received) > 30:
                break
        response.close()
    row = await kit.wait_for_row(seed, request_id)
    assert (row["end_reason"], row["estimated"]) == ("client_gone", 1)
    assert row["input_tokens"] == REPORTED_INPUT  # not len(body) / 4, about 100,000
    assert estimate_tokens(len(received)) <= row["output_tokens"] <= estimate_tokens(len(received) + 60)
    assert row["cost_micros"] == kit.expected_cost(REPORTED_INPUT, row["output_tokens"]) > 0
    assert kit.balance_of(seed, user_id) == 100_000_000 - row["cost_micros"]
    kit.assert_invariants(seed)


async def test_a_stream_without_message_delta_is_charged_what_was_delivered_marked_estimated(start_gateway, seed, world, upstream):
    user_id, _, secret = world
    gateway = start_gateway()
    upstream.omit_message_delta = True
    words = " ".join(f"word{n}" for n in range(30))
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
    text = ""
    async with client.messages.stream(model=MODEL, max_tokens=300, messages=[{"role": "user", "content": words}]) as stream:
        async for piece in stream.text_stream:
            text += piece
        request_id = stream.response.headers["x-request-id"]
    assert text == "echo: " + words
    row = await kit.wait_for_row(seed, request_id)
    assert (row["end_reason"], row["estimated"], row["input_tokens"]) == ("done", 1, REPORTED_INPUT)
    assert row["output_tokens"] == estimate_tokens(len(text)) > 1  # not message_start's placeholder 1
    assert row["cost_micros"] == kit.expected_cost(REPORTED_INPUT, row["output_tokens"])
    assert kit.balance_of(seed, user_id) == 100_000_000 - row["cost_micros"]
    kit.assert_invariants(seed)


async def test_cache_writes_are_priced_by_their_lifetime(start_gateway, seed, world, upstream):
    """Anthropic reports its cache writes by lifetime (``usage.cache_creation``): the
    hour-long ones are charged the hour's price, the five-minute ones the cache-write price."""
    user_id, _, secret = world
    seed.price(MODEL, kit.INPUT, kit.OUTPUT, cache_write_micros_per_mtok=3_125_000, cache_write_1h_micros_per_mtok=5_000_000)
    upstream.cache_write, upstream.cache_write_1h = 3000, 1000
    gateway = start_gateway()
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
    message = await client.messages.create(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hello there"}])
    assert message.usage.cache_creation_input_tokens == 3000
    row = await kit.wait_for_row(seed)
    plain = REPORTED_INPUT  # uncached input; 2000 five-minute and 1000 hour-long writes
    by_hand = -(-(plain * kit.INPUT + 2000 * 3_125_000 + 1000 * 5_000_000 + message.usage.output_tokens * kit.OUTPUT) // 10**6)
    assert row["cache_write_tokens"] == 3000 and row["cost_micros"] == by_hand
    assert kit.balance_of(seed, user_id) == 100_000_000 - by_hand
    await client.close()
