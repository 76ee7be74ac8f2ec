"""The official ``openai`` SDK against an anthropic channel: plain, streaming with usage, tool calls."""

from __future__ import annotations

import json

import openai
import pytest

from gateway_core.config import Config
from gateway_anthropic.fake_upstream import input_tokens


@pytest.fixture
def client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


async def test_chat_completion_on_an_anthropic_channel(client, anthropic_upstream, models, seed) -> None:
    anthropic_upstream.cache_read, anthropic_upstream.cache_write = 100, 20
    completion = await client.chat.completions.create(
        model=models.claude,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}],
        temperature=0.2,
        stop=["END"],
        user="user-42",
    )
    assert completion.choices[0].message.content == "echo: hello there"
    assert completion.choices[0].finish_reason == "stop"
    sent = anthropic_upstream.requests[-1]
    body = sent["body"]
    assert body["model"] == models.claude_upstream and body["max_tokens"] == 4096  # the default: OpenAI left it out
    assert (body["system"], body["temperature"], body["stop_sequences"], body["metadata"]) == ("Be brief.", 0.2, ["END"], {"user_id": "user-42"})
    assert sent["headers"]["x-api-key"] == "sk-ant-upstream-test" and sent["headers"]["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in sent["headers"]
    uncached = input_tokens(body)
    usage = completion.usage
    assert usage.prompt_tokens == uncached + 120 and usage.prompt_tokens_details.cached_tokens == 100
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["input_tokens"], row["cached_tokens"], row["estimated"]) == (uncached + 120, 100, 0)


async def test_stream_with_usage_on_an_anthropic_channel(client, anthropic_upstream, models) -> None:
    stream = await client.chat.completions.create(
        model=models.claude,
        messages=[{"role": "user", "content": "one two three"}],
        stream=True,
        stream_options={"include_usage": True},
        max_tokens=64,
    )
    text, usage, finish = "", None, None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            usage = chunk.usage
    assert text == "echo: one two three" and finish == "stop"
    assert usage is not None and usage.completion_tokens == 4 and usage.prompt_tokens > 0
    assert anthropic_upstream.requests[-1]["body"]["stream"] is True
    headers = {k.lower(): v for k, v in anthropic_upstream.requests[-1]["headers"].items()}
    assert headers["accept"] == "text/event-stream"


async def test_tool_calls_on_an_anthropic_channel(client, anthropic_upstream, models) -> None:
    anthropic_upstream.tool_uses = [
        {"id": "toolu_01", "name": "get_weather", "input": {"location": "Paris"}},
        {"id": "toolu_02", "name": "get_weather", "input": {"location": "Tokyo"}},
    ]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}]
    question = {"role": "user", "content": "Weather in Paris and Tokyo?"}
    completion = await client.chat.completions.create(model=models.claude, messages=[question], tools=tools, tool_choice="required", parallel_tool_calls=True)
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert [(c.id, json.loads(c.function.arguments)) for c in message.tool_calls] == [("toolu_01", {"location": "Paris"}), ("toolu_02", {"location": "Tokyo"})]
    sent = anthropic_upstream.requests[-1]["body"]
    assert sent["tools"] == [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}}}]
    assert sent["tool_choice"] == {"type": "any", "disable_parallel_tool_use": False}
    stream = await client.chat.completions.create(model=models.claude, messages=[question], tools=tools, stream=True)
    calls: dict[int, dict[str, str]] = {}
    async for chunk in stream:
        for call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            entry = calls.setdefault(call.index, {"id": "", "arguments": ""})
            entry["id"] = call.id or entry["id"]
            entry["arguments"] += call.function.arguments or ""
    assert [(c["id"], json.loads(c["arguments"])) for c in calls.values()] == [("toolu_01", {"location": "Paris"}), ("toolu_02", {"location": "Tokyo"})]
    anthropic_upstream.tool_uses = None
    await client.chat.completions.create(
        model=models.claude,
        tools=tools,
        messages=[
            question,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "toolu_01", "content": "18 C"},
            {"role": "tool", "tool_call_id": "toolu_02", "content": "24 C"},
        ],
    )
    sent = anthropic_upstream.requests[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [b["id"] for b in sent[1]["content"]] == ["toolu_01", "toolu_02"]
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18 C"},
        {"type": "tool_result", "tool_use_id": "toolu_02", "content": "24 C"},
    ]


async def test_default_max_tokens_comes_from_the_plugin_settings(start_gateway, relaygate_config, gateway_key, anthropic_upstream, models) -> None:
    config = Config(db_path=relaygate_config.db_path, plugins={"anthropic": {"default_max_tokens": 1234}})
    gateway = start_gateway(config)
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    await client.chat.completions.create(model=models.claude, messages=[{"role": "user", "content": "x"}])
    assert anthropic_upstream.requests[-1]["body"]["max_tokens"] == 1234


async def test_anthropic_upstream_errors_reach_openai_clients(client, anthropic_upstream, models) -> None:
    from gateway_anthropic.fake_upstream import Fault

    anthropic_upstream.fail_next(Fault(status=400, body={"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=models.claude, messages=[{"role": "user", "content": "x"}])
    assert "prompt is too long" in caught.value.message
    anthropic_upstream.fail_next(Fault(error_after=4))
    stream = await client.chat.completions.create(model=models.claude, messages=[{"role": "user", "content": "a b c"}], stream=True)
    with pytest.raises(openai.APIError) as broken:
        async for _ in stream:
            pass
    assert "Overloaded" in str(broken.value)


def test_the_channel_setting_default_max_tokens_defaults_to_the_plugins() -> None:
    from gateway_core import ChannelRecord
    from gateway_core.channel_settings import SettingError, validate_settings
    from gateway_anthropic.channel import AnthropicChannel

    channel_type = AnthropicChannel(default_max_tokens=1234)
    setting, _rules = channel_type.settings
    assert (setting.name, setting.kind, setting.default, setting.min) == ("default_max_tokens", "int", 1234, 1)
    assert validate_settings(channel_type.settings, {"default_max_tokens": "900"}) == {"default_max_tokens": 900}
    with pytest.raises(SettingError, match="must be at least 1, got '0'"):
        validate_settings(channel_type.settings, {"default_max_tokens": "0"})

    def channel(settings: dict) -> ChannelRecord:
        return ChannelRecord(1, "c", "anthropic", "https://a", ("k",), ("m",), {}, ("default",), settings=settings)

    assert channel_type.max_tokens(channel({"default_max_tokens": 900})) == 900
    assert channel_type.max_tokens(channel({"default_max_tokens": "700"})) == 700  # stored as text before validation
    assert channel_type.max_tokens(channel({})) == channel_type.max_tokens(channel({"default_max_tokens": 0})) == 1234
