"""``POST /v1/responses`` through the official ``openai`` SDK over real HTTP: the fast
path to a channel that speaks Responses, and conversion through the core model to
an anthropic channel and to a chat-only openai channel."""

from __future__ import annotations

import json

import openai
import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import SIGNATURE, FakeAnthropic
from gateway_openai.fake_upstream import Fault

GPT, GPT_UP = "gpt-resp", "gpt-resp-2026"
CHAT_ONLY = "gpt-chat-only"
CLAUDE, CLAUDE_UP = "claude-test", "claude-test-2026"
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
CODEX_TOOLS = [
    WEATHER_TOOL,
    {"type": "web_search", "external_web_access": False},
    {"type": "namespace", "name": "mcp__files", "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}}]},
]


@pytest.fixture
async def claude(fake_upstream):
    return await fake_upstream(FakeAnthropic())


@pytest.fixture
def gateway_key(seed, upstream, claude):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("native", type="openai", base_url=upstream.url, models=[GPT], model_map={GPT: GPT_UP}, settings={"responses": True})
    seed.channel("chat-only", type="openai", base_url=upstream.url + "/v1", models=[CHAT_ONLY])
    seed.channel("claude", type="anthropic", base_url=claude.url, models=[CLAUDE], model_map={CLAUDE: CLAUDE_UP}, api_keys=(ANTHROPIC_KEY,))
    return secret


@pytest.fixture
def client(start_gateway, gateway_key):
    gateway = start_gateway()
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


# --- the fast path ---------------------------------------------------------------------


async def test_plain_response_on_the_fast_path_keeps_every_field(client, upstream, seed):
    response = await client.responses.create(
        model=GPT, input="hello there", tools=CODEX_TOOLS, store=False, include=["reasoning.encrypted_content"],
        extra_body={"vendor_flag": {"x": 1}},
    )
    assert response.output_text == "echo: hello there"
    assert response.usage.input_tokens_details.cached_tokens == 2
    assert response.usage.output_tokens_details.reasoning_tokens == 1
    assert response.model_extra["upstream_only_field"] == {"kept": True}  # the upstream's body, untouched
    received = upstream.requests[-1]
    assert received["path"] == "/v1/responses"
    assert received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    body = received["body"]
    assert body["model"] == GPT_UP and body["tools"] == CODEX_TOOLS and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"] and body["vendor_flag"] == {"x": 1}
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["model"], row["upstream_model"], row["channel_name"]) == ("responses", GPT, GPT_UP, "native")
    assert (row["input_tokens"], row["output_tokens"], row["cached_tokens"], row["estimated"]) == (
        response.usage.input_tokens, response.usage.output_tokens, 2, 0)


async def test_streaming_helper_on_the_fast_path(client, upstream, seed):
    kinds = []
    async with client.responses.stream(model=GPT, input="one two three") as stream:
        async for event in stream:
            kinds.append(event.type)
        final = await stream.get_final_response()
    assert final.output_text == "echo: one two three"
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 4
    assert upstream.requests[-1]["body"]["stream"] is True
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["stream"], row["end_reason"], row["estimated"], row["cached_tokens"]) == (1, "done", 0, 2)
    assert row["output_tokens"] == final.usage.output_tokens


async def test_streamed_function_call_on_the_fast_path(client, upstream):
    upstream.tool_call = {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    async with client.responses.stream(model=GPT, input="weather?", tools=[WEATHER_TOOL]) as stream:
        deltas = [e.delta async for e in stream if e.type == "response.function_call_arguments.delta"]
        final = await stream.get_final_response()
    call = final.output[0]
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == ("function_call", "call_abc", "get_weather", {"city": "Paris"})
    assert "".join(deltas) == '{"city": "Paris"}'


async def test_upstream_failure_mid_stream_ends_with_response_failed(client, upstream, seed):
    upstream.fail_next(Fault(drop_after=5))
    stream = await client.responses.create(model=GPT, input="a b c d e f", stream=True)
    kinds = [event.type async for event in stream]
    assert kinds[-2:] == ["error", "response.failed"]
    assert "response.completed" not in kinds
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert row["end_reason"] == "upstream_error"


# --- conversion to an anthropic channel --------------------------------------------------


async def test_plain_response_converted_for_an_anthropic_channel(client, claude, seed):
    response = await client.responses.create(model=CLAUDE, instructions="Be brief.", input="hi claude", max_output_tokens=300)
    assert response.output_text == "echo: hi claude"
    assert response.status == "completed" and response.id.startswith("resp_") and response.model == CLAUDE
    assert response.usage.input_tokens > 0 and response.usage.input_tokens_details.cached_tokens == 0
    body = claude.requests[-1]["body"]
    assert body["model"] == CLAUDE_UP and body["system"] == "Be brief." and body["max_tokens"] == 300
    assert body["messages"] == [{"role": "user", "content": "hi claude"}]
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["channel_name"], row["estimated"]) == ("responses", "claude", 0)


async def test_streamed_text_converted_for_an_anthropic_channel(client, claude):
    events = []
    async with client.responses.stream(model=CLAUDE, input="stream me please") as stream:
        async for event in stream:
            events.append(event)
        final = await stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output_text == "echo: stream me please"
    assert final.usage.output_tokens > 0 and final.usage.output_tokens_details.reasoning_tokens == 0


async def test_streamed_function_call_converted_for_an_anthropic_channel(client, claude):
    claude.tool_uses = [{"id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]
    async with client.responses.stream(model=CLAUDE, input="weather in Oslo?", tools=[WEATHER_TOOL]) as stream:
        kinds = [e.type async for e in stream]
        final = await stream.get_final_response()
    call = final.output[0]
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == ("function_call", "toolu_1", "get_weather", {"city": "Oslo"})
    assert "response.function_call_arguments.delta" in kinds and "response.function_call_arguments.done" in kinds
    assert claude.requests[-1]["body"]["tools"][0]["name"] == "get_weather"


async def test_codex_turn_with_replayed_call_reaches_an_anthropic_channel(client, claude):
    """Codex: always streaming, store false, a developer item, tools the chat side cannot
    carry, and the replay of its function call and its output."""
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather in Oslo?"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "toolu_1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "toolu_1", "output": "sunny"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]
    stream = await client.responses.create(model=CLAUDE, input=items, tools=CODEX_TOOLS, store=False, stream=True,
                                           include=["reasoning.encrypted_content"], parallel_tool_calls=False)
    events = [event async for event in stream]
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert [i.type for i in done] == ["message"] and events[-1].type == "response.completed"
    body = claude.requests[-1]["body"]
    assert body["system"] == "You are Codex."
    assert [t["name"] for t in body["tools"]] == ["get_weather", "web_search", "mcp__files__read"]  # namespace flattened
    assert body["tools"][1] == {"type": "web_search_20250305", "name": "web_search"}  # Anthropic's own web search
    assert body["messages"][1] == {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]}
    assert body["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}


async def test_thinking_survives_the_round_trip_through_reasoning_items(client, claude):
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    first = await client.responses.create(model=CLAUDE, input="think", extra_body=thinking)
    reasoning = first.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "Let me think."
    assert reasoning.encrypted_content.startswith("rg1:")
    replay = [{"role": "user", "content": "think"}, reasoning.model_dump(exclude_none=True), *[
        {"role": "assistant", "content": first.output_text}], {"role": "user", "content": "again"}]
    await client.responses.create(model=CLAUDE, input=replay, extra_body=thinking)
    assistant = claude.requests[-1]["body"]["messages"][1]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "Let me think.", "signature": SIGNATURE}
    async with client.responses.stream(model=CLAUDE, input="think", extra_body=thinking) as stream:
        kinds = [e.type async for e in stream]
        streamed = (await stream.get_final_response()).output[0]
    assert "response.reasoning_summary_text.delta" in kinds
    assert streamed.encrypted_content == reasoning.encrypted_content and streamed.summary[0].text == "Let me think."


async def test_previous_response_id_on_a_converting_channel_is_a_clear_400(client, claude):
    for model in (CLAUDE, CHAT_ONLY):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(model=model, input="and then?", previous_response_id="resp_123")
        assert "previous_response_id" in caught.value.message and "keeps no conversation state" in caught.value.message
    assert claude.requests == []


# --- conversion to a chat-only openai channel -----------------------------------------------


async def test_chat_only_openai_channel_gets_chat_completions(client, upstream):
    items = [
        {"role": "developer", "content": "Be terse."},
        {"role": "user", "content": "call it"},
        {"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": '{"city":"Rome"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "rain"},
        {"role": "user", "content": "thanks"},
    ]
    response = await client.responses.create(model=CHAT_ONLY, input=items, tools=[WEATHER_TOOL], reasoning={"effort": "low"})
    assert response.output_text == "echo: thanks"
    received = upstream.requests[-1]
    assert received["path"] == "/v1/chat/completions"
    body = received["body"]
    assert [m["role"] for m in body["messages"]] == ["developer", "user", "assistant", "tool", "user"]
    assert body["messages"][2]["tool_calls"][0]["id"] == "call_9" and body["messages"][3]["tool_call_id"] == "call_9"
    assert body["tools"][0] == {"type": "function", "function": {k: WEATHER_TOOL[k] for k in ("name", "description", "parameters")}}
    assert body["reasoning_effort"] == "low" and "input" not in body


async def test_chat_only_stream_converted_with_usage(client, upstream):
    async with client.responses.stream(model=CHAT_ONLY, input="x y") as stream:
        final = await stream.get_final_response()
    assert final.output_text == "echo: x y" and final.usage.output_tokens == 3
    assert upstream.requests[-1]["body"]["stream_options"] == {"include_usage": True}


async def test_raw_codex_stream_framing(start_gateway, gateway_key, claude):
    """What Codex reads: SSE with event names, every item done before response.completed."""
    import aiohttp

    from gateway_core.sse import SSESplitter, frame_fields

    gateway = start_gateway()
    claude.tool_uses = [{"id": "toolu_7", "name": "shell", "input": {"cmd": ["ls"]}}]
    body = {"model": CLAUDE, "stream": True, "store": False, "instructions": None, "tools": CODEX_TOOLS,
            "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sys"}]},
                      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}]}  # fmt: skip
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/responses", json=body, headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            assert response.status == 200 and response.headers["Content-Type"].startswith("text/event-stream")
            raw = await response.read()
    frames = [frame_fields(f) for f in SSESplitter().feed(raw)]
    names = [name for name, _ in frames]
    payloads = [json.loads(data) for _, data in frames]
    assert all(name == payload["type"] for name, payload in zip(names, payloads))
    assert names[-1] == "response.completed" and names[-2] == "response.output_item.done"
    added = [p["item"]["id"] for p in payloads if p["type"] == "response.output_item.added"]
    done = [p["item"] for p in payloads if p["type"] == "response.output_item.done"]
    assert added == [i["id"] for i in done] and done[0]["call_id"] == "toolu_7" and json.loads(done[0]["arguments"]) == {"cmd": ["ls"]}
    assert payloads[-1]["response"]["output"] == done
