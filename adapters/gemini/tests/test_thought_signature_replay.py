"""Gemini's thought signatures through clients of other protocols (official SDKs over
loopback): the signature rides inside the tool-call id the client echoes, reaches
the gemini channel again on the replay, and never reaches another channel."""

from __future__ import annotations

import json
import re

import openai
import pytest

from gateway_core.echo_ids import SEPARATOR
from gateway_gemini.fake_upstream import SIGNATURE

anthropic = pytest.importorskip("anthropic")
fake_anthropic = pytest.importorskip("gateway_anthropic.fake_upstream")

# the models the conftest's channels serve, and the claude channel below
GEMINI_MODEL = "gemini-test"
OPENAI_MODEL = "gpt-test"
CLAUDE_MODEL = "claude-test"
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
OPENAI_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
CLAUDE_TOOLS = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


@pytest.fixture
async def anthropic_upstream(fake_upstream):
    return await fake_upstream(fake_anthropic.FakeAnthropic())


@pytest.fixture
def gateway(start_gateway, seed, gateway_key, anthropic_upstream):
    seed.channel("claude", type="anthropic", base_url=anthropic_upstream.url, models=[CLAUDE_MODEL], api_keys=[fake_anthropic.EXPECTED_KEY])
    return start_gateway()


@pytest.fixture
def openai_client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


@pytest.fixture
def claude_client(gateway, gateway_key):
    return anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway_key, max_retries=0)


def assert_signed_replay(gemini_upstream, call_id: str) -> None:
    """The replayed model turn reached Gemini with the real signature and the plain id."""
    contents = gemini_upstream.requests[-1]["body"]["contents"]
    call = contents[1]["parts"][0]
    assert call["thoughtSignature"] == SIGNATURE  # not the placeholder
    assert call["functionCall"]["id"] == call_id.partition(SEPARATOR)[0] and SEPARATOR not in call["functionCall"]["id"]
    assert contents[2]["parts"][0]["functionResponse"]["id"] == call["functionCall"]["id"]


async def openai_conversation(client) -> tuple[list[dict], str]:
    messages: list[dict] = [{"role": "user", "content": "weather in Paris?"}]
    completion = await client.chat.completions.create(model=GEMINI_MODEL, messages=messages, tools=OPENAI_TOOLS)
    message = completion.choices[0].message
    call = message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    messages += [message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    return messages, call.id


async def claude_conversation(client) -> tuple[list[dict], str]:
    messages: list[dict] = [{"role": "user", "content": "weather in Paris?"}]
    async with client.messages.stream(model=GEMINI_MODEL, max_tokens=100, tools=CLAUDE_TOOLS, messages=messages) as stream:
        message = await stream.get_final_message()
    call = next(b for b in message.content if b.type == "tool_use")
    assert ANTHROPIC_ID.match(call.id)
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}]},
    ]
    return messages, call.id


async def test_openai_client_replays_the_real_signature_to_gemini(openai_client, gemini_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    messages, call_id = await openai_conversation(openai_client)
    assert SEPARATOR in call_id and ANTHROPIC_ID.match(call_id)
    gemini_upstream.function_call = None
    answer = await openai_client.chat.completions.create(model=GEMINI_MODEL, messages=messages, tools=OPENAI_TOOLS)
    assert answer.choices[0].message.content == 'echo: get_weather gave {"output":"sunny"}'
    assert_signed_replay(gemini_upstream, call_id)


async def test_anthropic_client_replays_the_real_signature_to_gemini(claude_client, gemini_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    messages, call_id = await claude_conversation(claude_client)
    assert SEPARATOR in call_id
    gemini_upstream.function_call = None
    answer = await claude_client.messages.create(model=GEMINI_MODEL, max_tokens=100, tools=CLAUDE_TOOLS, messages=messages)
    assert answer.content[0].text.startswith("echo: ")
    assert_signed_replay(gemini_upstream, call_id)


async def test_a_call_without_signature_still_gets_the_placeholder(openai_client, gemini_upstream):
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    await openai_client.chat.completions.create(model=GEMINI_MODEL, messages=messages, tools=OPENAI_TOOLS)
    call = gemini_upstream.requests[-1]["body"]["contents"][1]["parts"][0]
    assert call == {"functionCall": {"id": "call_1", "name": "get_weather", "args": {}}, "thoughtSignature": "skip_thought_signature_validator"}


async def test_openai_client_replay_to_other_channels_drops_the_signature(openai_client, gemini_upstream, openai_upstream, anthropic_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    messages, call_id = await openai_conversation(openai_client)
    await openai_client.chat.completions.create(model=OPENAI_MODEL, messages=messages, tools=OPENAI_TOOLS)  # same protocol: forwarded
    sent = openai_upstream.requests[-1]["body"]["messages"]
    ids = [sent[1]["tool_calls"][0]["id"], sent[2]["tool_call_id"]]
    assert ids == [call_id.partition(SEPARATOR)[0]] * 2 and all(len(i) <= 40 for i in ids)
    await openai_client.chat.completions.create(model=CLAUDE_MODEL, messages=messages, tools=OPENAI_TOOLS, max_tokens=50)  # converted
    sent = anthropic_upstream.requests[-1]["body"]["messages"]
    ids = [sent[1]["content"][0]["id"], sent[2]["content"][0]["tool_use_id"]]
    assert ids == [call_id.partition(SEPARATOR)[0]] * 2 and all(ANTHROPIC_ID.match(i) for i in ids)
    assert SIGNATURE not in json.dumps(sent)


async def test_anthropic_client_replay_to_other_channels_drops_the_signature(claude_client, gemini_upstream, openai_upstream, anthropic_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    messages, call_id = await claude_conversation(claude_client)
    plain = call_id.partition(SEPARATOR)[0]
    await claude_client.messages.create(model=CLAUDE_MODEL, max_tokens=100, tools=CLAUDE_TOOLS, messages=messages)  # same protocol: forwarded
    sent = anthropic_upstream.requests[-1]["body"]["messages"]
    tool_use = next(b for b in sent[1]["content"] if b["type"] == "tool_use")
    assert [tool_use["id"], sent[2]["content"][0]["tool_use_id"]] == [plain] * 2 and ANTHROPIC_ID.match(plain)
    await claude_client.messages.create(model=OPENAI_MODEL, max_tokens=100, tools=CLAUDE_TOOLS, messages=messages)  # converted
    sent = openai_upstream.requests[-1]["body"]["messages"]
    assistant = next(m for m in sent if m.get("tool_calls"))
    tool = next(m for m in sent if m["role"] == "tool")
    assert [assistant["tool_calls"][0]["id"], tool["tool_call_id"]] == [plain] * 2 and len(plain) <= 40


def test_a_responses_clients_replay_to_a_native_channel_drops_the_signature():
    from gateway_core.echo_ids import fold_id
    from gateway_openai.channel_responses import plain_item_ids

    folded = fold_id("call_get_weather_0", SIGNATURE)
    items = [
        {"type": "message", "role": "user", "content": "weather?"},
        {"type": "function_call", "id": "fc_1", "call_id": folded, "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": folded, "output": "sunny"},
    ]
    plain = plain_item_ids(items)
    assert [item.get("call_id") for item in plain] == [None, "call_get_weather_0", "call_get_weather_0"]
    assert plain_item_ids(plain) is plain  # nothing folded: the same list


async def test_a_responses_client_replays_the_real_signature_to_gemini(openai_client, gemini_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    tools = [{"type": "function", "name": "get_weather", "parameters": OPENAI_TOOLS[0]["function"]["parameters"]}]
    first = await openai_client.responses.create(model=GEMINI_MODEL, input="weather in Paris?", tools=tools, store=False)
    call = next(item for item in first.output if item.type == "function_call")
    assert SEPARATOR in call.call_id
    gemini_upstream.function_call = None
    replay = [
        {"role": "user", "content": "weather in Paris?"},
        call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
    ]
    await openai_client.responses.create(model=GEMINI_MODEL, input=replay, tools=tools, store=False)
    assert_signed_replay(gemini_upstream, call.call_id)
