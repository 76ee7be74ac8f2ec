"""Claude through InvokeModel (a channel with ``api=invoke``): an Anthropic client's
body reaches Bedrock as sent (cache_control, thinking, documents), other protocols are
converted to Anthropic's body, streams come back from the event stream's chunks,
usage with cache reads and writes is billed to the micro-USD, and Bedrock's errors
reach each client in its own shape."""

from __future__ import annotations

import anthropic
import openai
import pytest

from gateway_bedrock.fake_upstream import IAM_KEY, REASONING, SIGNATURE, Fault

HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"  # in the catalogue: no operator price needed
NOVA = "amazon.nova-pro-v1:0"


@pytest.fixture
def gateway(seed, start_gateway, bedrock):
    alice = seed.user("alice", balance_usd=5)
    _, secret = seed.key(alice)
    seed.channel("aws-invoke", type="bedrock", base_url=bedrock.url, models=[HAIKU, NOVA], api_keys=[IAM_KEY],
                 settings={"region": "us-east-1", "api": "invoke"}, free_unpriced=False)  # fmt: skip
    gateway = start_gateway()
    gateway.secret = secret
    return gateway


@pytest.fixture
async def claude(gateway):
    async with anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway.secret, max_retries=0) as client:
        yield client


@pytest.fixture
async def gpt(gateway):
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway.secret, max_retries=0) as client:
        yield client


async def test_an_anthropic_clients_body_goes_as_sent_and_is_billed_exactly(claude, bedrock, seed):
    bedrock.cache_read, bedrock.cache_write = 1000, 2000
    system = [{"type": "text", "text": "Long rules.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "a b"}, "cache_control": {"type": "ephemeral"}}
    messages = [{"role": "user", "content": [document, {"type": "text", "text": "hello there"}]}]
    message = await claude.messages.create(model=HAIKU, max_tokens=64, system=system, messages=messages,
                                           extra_headers={"anthropic-beta": "context-1m-2025-08-07"})  # fmt: skip
    assert message.content[0].text == "echo: hello there"
    received = bedrock.requests[-1]
    assert received["raw_path"] == "/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke"
    assert received["body"] == {"max_tokens": 64, "system": system, "messages": messages,
                                "anthropic_version": "bedrock-2023-05-31", "anthropic_beta": ["context-1m-2025-08-07"]}  # fmt: skip
    assert received["headers"]["Authorization"].startswith("AWS4-HMAC-SHA256 ")  # the fake checked it with botocore
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["input_tokens"], row["cached_tokens"], row["cache_write_tokens"], row["output_tokens"]) == (3004, 1000, 2000, 3)
    # USD per million: input 1.1, cache read 0.11, cache write 1.375, output 5.5; rounded up once
    # 4 × 1.1 + 1000 × 0.11 + 2000 × 1.375 + 3 × 5.5 = 2880.9 micro-USD
    assert row["cost_micros"] == 2881


async def test_an_anthropic_clients_stream_with_thinking(claude, bedrock, seed):
    bedrock.cache_read = 10
    thinking = {"type": "enabled", "budget_tokens": 1024}
    async with claude.messages.stream(model=HAIKU, max_tokens=2048, thinking=thinking, messages=[{"role": "user", "content": "one two"}]) as stream:
        final = await stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "text"]
    assert (final.content[0].thinking, final.content[0].signature, final.content[1].text) == (REASONING, SIGNATURE, "echo: one two")
    assert final.usage.cache_read_input_tokens == 10
    received = bedrock.requests[-1]
    assert received["raw_path"].endswith("/invoke-with-response-stream") and received["body"]["thinking"] == thinking
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["input_tokens"], row["cached_tokens"], row["output_tokens"]) == ("anthropic", 12, 10, 3)


async def test_an_openai_client_is_converted_to_anthropics_body(gpt, bedrock):
    bedrock.tool_use = {"name": "get_weather", "input": {"city": "Oslo"}}
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    first = await gpt.chat.completions.create(model=HAIKU, tools=[tool], messages=[{"role": "user", "content": "Weather in Oslo?"}])
    call = first.choices[0].message.tool_calls[0]
    assert (first.choices[0].finish_reason, call.function.name, call.function.arguments) == ("tool_calls", "get_weather", '{"city":"Oslo"}')
    body = bedrock.requests[-1]["body"]
    assert body["anthropic_version"] == "bedrock-2023-05-31" and "model" not in body and body["tools"][0]["name"] == "get_weather"
    stream = await gpt.chat.completions.create(
        model=HAIKU, stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Weather?"}, {"role": "assistant", "tool_calls": [call.model_dump()]},
                  {"role": "tool", "tool_call_id": call.id, "content": "cold"}],
    )  # fmt: skip
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: cold"
    assert chunks[-1].usage.completion_tokens == 2
    assert bedrock.requests[-1]["body"]["messages"][-1]["content"][0]["type"] == "tool_result"


async def test_other_models_stay_on_converse(gpt, bedrock):
    await gpt.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "hi"}])
    assert bedrock.requests[-1]["raw_path"] == "/model/amazon.nova-pro-v1%3A0/converse"


async def test_throttling_is_anthropics_rate_limit_error(claude, bedrock):
    bedrock.fail_next(Fault(status=429))
    with pytest.raises(anthropic.RateLimitError) as throttled:
        await claude.messages.create(model=HAIKU, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert throttled.value.response.headers.get("retry-after") == "1"


async def test_an_exception_frame_mid_stream_is_an_error_event_after_the_text(claude, bedrock):
    bedrock.fail_next(Fault(error_after=3))
    text = ""
    with pytest.raises(anthropic.APIStatusError) as failed:
        async with claude.messages.stream(model=HAIKU, max_tokens=10, messages=[{"role": "user", "content": "a b c"}]) as stream:
            async for event in stream:
                if event.type == "text":
                    text += event.text
    assert text == "echo:"  # what came before the failure
    assert "modelStreamErrorException" in str(failed.value)
