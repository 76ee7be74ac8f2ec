"""The official ``anthropic`` SDK through the gateway to a bedrock channel: Claude on
Converse, thinking signatures kept across turns, tools, images, errors."""

from __future__ import annotations

import base64

import anthropic
import pytest

from gateway_bedrock.fake_upstream import REASONING, SIGNATURE, Fault

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake-image").decode()
TOOL = {"name": "get_weather", "description": "Weather of a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}  # fmt: skip


@pytest.fixture
async def client(gateway, gateway_key):
    async with anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway_key, max_retries=0) as client:
        yield client


async def test_message_with_system_image_and_top_k(client, bedrock):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    message = await client.messages.create(
        model="claude-test", max_tokens=100, system="Be brief.", extra_body={"top_k": 5},  # SDK 2.x takes no top_k argument
        messages=[{"role": "user", "content": [image, {"type": "text", "text": "what is this"}]}],
    )  # fmt: skip
    assert message.content[0].text == "echo: what is this"
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (5, 4)
    body = bedrock.requests[-1]["body"]
    assert body["system"] == [{"text": "Be brief."}]
    assert body["messages"][0]["content"][0] == {"image": {"format": "png", "source": {"bytes": PNG}}}
    assert body["inferenceConfig"] == {"maxTokens": 100}
    assert body["additionalModelRequestFields"] == {"top_k": 5}


async def test_thinking_goes_through_and_its_signature_comes_back(client, bedrock):
    thinking = {"type": "enabled", "budget_tokens": 2048}
    first = await client.messages.create(
        model="claude-test", max_tokens=4096, thinking=thinking, extra_body={"temperature": 1}, messages=[{"role": "user", "content": "think"}]
    )
    body = bedrock.requests[-1]["body"]
    assert body["additionalModelRequestFields"] == {"thinking": thinking}
    assert "temperature" not in body["inferenceConfig"]  # thinking takes none
    block = first.content[0]
    assert (block.type, block.thinking, block.signature) == ("thinking", REASONING, SIGNATURE)
    await client.messages.create(
        model="claude-test", max_tokens=4096, thinking=thinking,
        messages=[{"role": "user", "content": "think"}, {"role": "assistant", "content": [c.model_dump() for c in first.content]},
                  {"role": "user", "content": "again"}],
    )  # fmt: skip
    replayed = bedrock.requests[-1]["body"]["messages"][1]["content"][0]
    assert replayed == {"reasoningContent": {"reasoningText": {"text": REASONING, "signature": SIGNATURE}}}


async def test_streamed_thinking_and_text(client, bedrock, seed):
    bedrock.cache_read, bedrock.cache_write = 10, 20
    async with client.messages.stream(
        model="claude-test", max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[{"role": "user", "content": "one two"}],
    ) as stream:  # fmt: skip
        final = await stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "text"]
    assert final.content[0].signature == SIGNATURE and final.content[1].text == "echo: one two"
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens, final.usage.cache_creation_input_tokens) == (2, 10, 20)
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["input_tokens"], row["output_tokens"]) == ("anthropic", 32, 3)


async def test_tool_round_trip(client, bedrock):
    bedrock.tool_use = {"name": "get_weather", "input": {"city": "Oslo"}}
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    first = await client.messages.create(model="claude-test", max_tokens=200, tools=[TOOL], tool_choice={"type": "tool", "name": "get_weather"}, messages=messages)
    use = first.content[0]
    assert (first.stop_reason, use.type, use.name, use.input) == ("tool_use", "tool_use", "get_weather", {"city": "Oslo"})
    assert bedrock.requests[-1]["body"]["toolConfig"]["toolChoice"] == {"tool": {"name": "get_weather"}}
    messages += [{"role": "assistant", "content": [use.model_dump()]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "cold", "is_error": True}]}]  # fmt: skip
    second = await client.messages.create(model="claude-test", max_tokens=200, tools=[TOOL], messages=messages)
    assert second.content[0].text == "echo: cold"
    result = bedrock.requests[-1]["body"]["messages"][2]["content"][0]["toolResult"]
    assert result == {"toolUseId": use.id, "content": [{"text": "cold"}], "status": "error"}


async def test_throttling_is_anthropics_rate_limit_error(client, bedrock):
    bedrock.fail_next(Fault(status=429))
    with pytest.raises(anthropic.RateLimitError) as throttled:
        await client.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert throttled.value.response.headers.get("retry-after") == "1"


async def test_a_validation_exception_is_the_clients_400(client, bedrock):
    bedrock.fail_next(Fault(status=400, body={"message": "The model returned the following errors: messages: text content blocks must be non-empty"}))
    with pytest.raises(anthropic.BadRequestError) as refused:
        await client.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert "text content blocks must be non-empty" in refused.value.message


async def test_an_exception_frame_mid_stream_is_an_error_event(client, bedrock):
    bedrock.stream_exception = "validationException"
    bedrock.fail_next(Fault(error_after=2))
    with pytest.raises(anthropic.APIStatusError) as failed:
        async with client.messages.stream(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "a b c"}]) as stream:
            async for _ in stream:
                pass
    assert "validationException" in str(failed.value) or "rejected the request" in str(failed.value)


async def test_count_tokens_is_answered_without_calling_bedrock(client, bedrock):
    counted = await client.messages.count_tokens(model="claude-test", messages=[{"role": "user", "content": "how many tokens is this"}])
    assert counted.input_tokens > 0
    assert bedrock.requests == []


async def test_cache_control_becomes_cache_points_for_claude_only(client, bedrock, gateway, gateway_key):
    system = [{"type": "text", "text": "Long rules.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    content = [{"type": "text", "text": "a document", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "question"}]
    tool = {**TOOL, "cache_control": {"type": "ephemeral"}}
    await client.messages.create(model="claude-test", max_tokens=50, system=system, tools=[tool], messages=[{"role": "user", "content": content}])
    body = bedrock.requests[-1]["body"]
    assert body["system"] == [{"text": "Long rules."}, {"cachePoint": {"type": "default", "ttl": "1h"}}]
    assert body["messages"][0]["content"] == [{"text": "a document"}, {"cachePoint": {"type": "default"}}, {"text": "question"}]
    assert body["toolConfig"]["tools"][1] == {"cachePoint": {"type": "default"}}
    await client.messages.create(model="llama-test", max_tokens=50, system=system, messages=[{"role": "user", "content": content}])
    assert "cachePoint" not in str(bedrock.requests[-1]["body"])  # Llama takes none
