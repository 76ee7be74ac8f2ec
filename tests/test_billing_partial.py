"""What a stream cut short is charged for its input: the upstream's count when it gave
one (see the anthropic and gemini adapters' tests), else an estimate from the text of
the request — never from inline images, whose base64 would count as tens of
thousands of tokens."""

from __future__ import annotations

import base64

import aiohttp
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.tally import estimate_tokens, text_chars
from gateway_openai.fake_upstream import FakeOpenAI

LOAD = ("openai", "demo")
IMAGE = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 1200).decode()  # about 400 KB


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, LOAD)


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI(chunk_delay=0.05))


def test_the_text_of_a_body_leaves_out_inline_binary_data():
    body = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image_url", "image_url": {"url": IMAGE}},
        {"type": "input_audio", "input_audio": {"data": base64.b64encode(b"\x00\x01" * 500).decode(), "format": "wav"}},
    ]}], "model": "m"}  # fmt: skip
    assert text_chars(body) == len("what is in this picture?") + len("user") + len("text") + len("image_url") + len("input_audio") + len("wav") + len("m")
    long_prose = "word " * 200  # long, but text: counted
    assert text_chars({"content": long_prose}) == len(long_prose)


async def test_a_stream_cut_short_without_any_usage_charges_the_text_not_the_image(start_gateway, seed, upstream):
    user_id, _, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=100)
    gateway = start_gateway()
    upstream.report_usage = False
    words = " ".join(f"w{n:02d}" for n in range(40))
    body = {"model": MODEL, "stream": True, "max_tokens": 200, "messages": [{"role": "user", "content": [
        {"type": "text", "text": words}, {"type": "image_url", "image_url": {"url": IMAGE}}]}]}  # fmt: skip
    received = ""
    async with aiohttp.ClientSession() as http:
        response = await http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"})
        request_id = response.headers["x-request-id"]
        async for line in response.content:
            if line.startswith(b"data: {"):
                received += "".join(c["delta"].get("content") or "" for c in orjson.loads(line[6:])["choices"])
            if len(received) > 20:
                break
        response.close()
    row = await kit.wait_for_row(seed, request_id)
    assert (row["end_reason"], row["estimated"]) == ("client_gone", 1)
    assert row["input_tokens"] == estimate_tokens(text_chars(body))  # the text: about 60 tokens
    assert row["input_tokens"] < 100 < len(orjson.dumps(body)) // 4  # not the ~100,000 of the image's bytes
    assert row["cost_micros"] == kit.expected_cost(row["input_tokens"], row["output_tokens"]) > 0
    assert kit.balance_of(seed, user_id) == 100_000_000 - row["cost_micros"]
    kit.assert_invariants(seed)
