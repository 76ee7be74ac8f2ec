"""Clients of every protocol through the gateway to an azure channel over loopback: the
official ``openai`` SDK (one-shot, a stream, tools, embeddings) on both path styles, the
``anthropic`` and ``google-genai`` SDKs (converted), a catalogue price for the client's model name, Azure's
content filter in each client's shape, a wrong api-version said clearly."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from .fake_azure import AZURE_KEY, BLOCKED, CUT

CHAT, EMBED = "gpt-4o-mini", "text-embedding-3-small"  # the client's names; the fake's deployments differ
DEPLOYMENTS = {CHAT: "chat-dep", EMBED: "embed-dep"}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
TOOL_CALL = {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


@pytest.fixture(params=["deployments", "v1"])
def path_style(request) -> str:
    return request.param


@pytest.fixture
def gateway_key(seed, azure, path_style):
    _, secret = seed.key(seed.user("alice", balance_usd=10))
    seed.channel("az", type="azure", base_url=azure.url + "/openai/", api_keys=[AZURE_KEY], models=[CHAT, EMBED], model_map=DEPLOYMENTS,
                 settings={"path_style": path_style}, free_unpriced=False)  # fmt: skip
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
def client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


@pytest.fixture
def claude(gateway, gateway_key):
    return anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway_key, max_retries=0)


def expected_path(style: str, deployment: str, endpoint: str) -> str:
    if style == "v1":
        return f"/openai/v1/{endpoint}"
    return f"/openai/deployments/{deployment}/{endpoint}?api-version=2024-10-21"


async def test_one_shot_priced_from_the_catalogue_by_the_clients_model(client, azure, seed, path_style):
    answer = await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "hello azure"}])
    assert answer.choices[0].message.content == "echo: hello azure"
    sent = azure.requests[-1]
    assert sent["path"] == expected_path(path_style, "chat-dep", "chat/completions")
    assert sent["headers"]["api-key"] == AZURE_KEY and "Authorization" not in sent["headers"]
    assert sent["body"]["model"] == "chat-dep"
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["model"], row["upstream_model"], row["status"]) == (CHAT, "chat-dep", 200)
    # gpt-4o-mini's catalogue price: 0.15 USD in, 0.60 USD out per million tokens
    expected = -(-(row["input_tokens"] * 150_000 + row["output_tokens"] * 600_000) // 1_000_000)
    assert row["cost_micros"] == expected > 0


async def test_a_stream_through_azures_filter_chunks(client, azure, path_style):
    stream = await client.chat.completions.create(
        model=CHAT, messages=[{"role": "user", "content": "one two three"}], stream=True, stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: one two three"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4
    assert azure.requests[-1]["body"]["stream"] is True


async def test_tools_with_an_openai_client(client, azure):
    azure.tool_call = TOOL_CALL
    answer = await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "weather?"}], tools=[WEATHER])
    call = answer.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == ("call_w1", "get_weather", {"city": "Paris"})
    assert azure.requests[-1]["body"]["tools"] == [WEATHER]


async def test_embeddings(client, azure, path_style):
    result = await client.embeddings.create(model=EMBED, input=["abc", "de"], encoding_format="float")
    assert [len(d.embedding) for d in result.data] == [8, 8] and result.usage.prompt_tokens > 0
    assert azure.requests[-1]["path"] == expected_path(path_style, "embed-dep", "embeddings")
    assert azure.requests[-1]["body"]["model"] == "embed-dep"


async def test_an_anthropic_client_one_shot_stream_and_tools(claude, azure):
    message = await claude.messages.create(model=CHAT, max_tokens=100, messages=[{"role": "user", "content": "bonjour"}])
    assert message.content[0].text == "echo: bonjour" and message.stop_reason == "end_turn"
    assert azure.requests[-1]["body"]["max_completion_tokens"] == 100

    async with claude.messages.stream(model=CHAT, max_tokens=50, messages=[{"role": "user", "content": "a b c"}]) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == "echo: a b c" and final.usage.output_tokens == 4

    azure.tool_call = TOOL_CALL
    tool = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    message = await claude.messages.create(model=CHAT, max_tokens=100, tools=[tool], messages=[{"role": "user", "content": "weather?"}])
    use = message.content[-1]
    assert (message.stop_reason, use.type, use.name, use.input) == ("tool_use", "tool_use", "get_weather", {"city": "Paris"})
    assert azure.requests[-1]["body"]["tools"][0]["function"]["name"] == "get_weather"


async def test_a_prompt_refused_by_the_content_filter_in_each_clients_shape(client, claude):
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": BLOCKED}])
    error = refused.value.body
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "content_filter", "prompt")
    assert error["message"].startswith("Azure's content filter refused the request (violence: medium): The response was filtered")

    with pytest.raises(anthropic.BadRequestError) as refused_too:
        await claude.messages.create(model=CHAT, max_tokens=10, messages=[{"role": "user", "content": BLOCKED}])
    body = refused_too.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "content filter refused the request (violence: medium)" in body["error"]["message"]


async def test_filtered_output_in_each_clients_shape(client, claude):
    answer = await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": CUT}])
    assert answer.choices[0].finish_reason == "content_filter"
    stream = await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": CUT}], stream=True)
    last = [c async for c in stream if c.choices][-1]
    assert last.choices[0].finish_reason == "content_filter"
    assert last.choices[0].model_extra["content_filter_results"]["violence"] == {"filtered": True, "severity": "high"}

    message = await claude.messages.create(model=CHAT, max_tokens=50, messages=[{"role": "user", "content": CUT}])
    assert message.stop_reason == "refusal"
    async with claude.messages.stream(model=CHAT, max_tokens=50, messages=[{"role": "user", "content": CUT}]) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "refusal"


@pytest.mark.parametrize("path_style", ["deployments"], indirect=True)
async def test_a_wrong_api_version_is_said_clearly(seed, azure, start_gateway, gateway_key):
    seed.channel("az-old", type="azure", base_url=azure.url, api_keys=[AZURE_KEY], models=["old-model"],
                 model_map={"old-model": "chat-dep"}, settings={"api_version": "2023-01-01"})  # fmt: skip
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(model="old-model", messages=[{"role": "user", "content": "x"}])
    assert failed.value.status_code == 502
    message = failed.value.body["message"]
    assert "refused the channel's api-version '2023-01-01'" in message and "API version not supported" in message
    assert "--setting api_version=" in message
    assert azure.requests[-1]["path"].endswith("?api-version=2023-01-01")


async def test_a_gemini_client(gateway, gateway_key, azure):
    client = genai.Client(api_key=gateway_key, http_options=types.HttpOptions(base_url=gateway.url, api_version="v1beta")).aio
    response = await client.models.generate_content(model=CHAT, contents="hallo", config=types.GenerateContentConfig(max_output_tokens=40))
    assert response.text == "echo: hallo" and azure.requests[-1]["body"]["max_completion_tokens"] == 40
    chunks = [c async for c in await client.models.generate_content_stream(model=CHAT, contents="x y")]
    assert "".join(c.text or "" for c in chunks) == "echo: x y"
    cut = await client.models.generate_content(model=CHAT, contents=CUT)
    assert cut.candidates[0].finish_reason == types.FinishReason.SAFETY
    with pytest.raises(genai_errors.ClientError) as refused:
        await client.models.generate_content(model=CHAT, contents=BLOCKED)
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert "content filter refused the request (violence: medium)" in refused.value.message
