"""The official ``openai`` SDK against the gateway, to a gemini channel."""

from __future__ import annotations

import json

import openai
import pytest

from gateway_core.echo_ids import SEPARATOR
from gateway_gemini.fake_upstream import EXPECTED_KEY, SIGNATURE

# the models the conftest's channels serve
GEMINI_MODEL = "gemini-test"
GEMINI_UPSTREAM_MODEL = "gemini-2.5-flash"


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


@pytest.fixture
def client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


async def test_chat_completion(client, gemini_upstream, gateway_key):
    completion = await client.chat.completions.create(
        model=GEMINI_MODEL,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}],
        temperature=0.5,
        max_tokens=64,
    )
    assert completion.choices[0].message.content == "echo: hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens == 3
    received = gemini_upstream.requests[-1]
    assert received["path"] == f"/v1beta/models/{GEMINI_UPSTREAM_MODEL}:generateContent"
    assert received["headers"]["x-goog-api-key"] == EXPECTED_KEY and gateway_key not in str(received["headers"])
    body = received["body"]
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hello there"}]}]
    assert body["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 64}


async def test_stream_with_usage(client, gemini_upstream, seed):
    stream = await client.chat.completions.create(
        model=GEMINI_MODEL, messages=[{"role": "user", "content": "one two three"}], stream=True, stream_options={"include_usage": True}
    )
    text, usage, finish = "", None, None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            usage = chunk.usage
    assert text == "echo: one two three"
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens == 4
    assert gemini_upstream.requests[-1]["path"].endswith(":streamGenerateContent?alt=sse")
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["output_tokens"], row["estimated"]) == ("openai", 4, 0)


async def test_thoughts_are_reasoning_and_billed_as_output(client, gemini_upstream, seed):
    gemini_upstream.thoughts = True
    gemini_upstream.cached_tokens = 2
    completion = await client.chat.completions.create(model=GEMINI_MODEL, messages=[{"role": "user", "content": "a b"}])
    assert completion.usage.completion_tokens == 3 + 5
    assert completion.usage.completion_tokens_details.reasoning_tokens == 5
    assert completion.usage.prompt_tokens_details.cached_tokens == 2
    assert completion.choices[0].message.content == "echo: a b"


async def test_tool_calls_round_trip(client, gemini_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    messages = [{"role": "user", "content": "weather in Paris?"}]
    completion = await client.chat.completions.create(model=GEMINI_MODEL, messages=messages, tools=TOOLS, tool_choice="required")
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert call.id.startswith("call_get_weather_0")
    sent = gemini_upstream.requests[-1]["body"]
    assert sent["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["required"] == ["city"]
    assert sent["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    gemini_upstream.function_call = None
    messages += [choice.message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    answer = await client.chat.completions.create(model=GEMINI_MODEL, messages=messages, tools=TOOLS)
    assert answer.choices[0].message.content == 'echo: get_weather gave {"output":"sunny"}'
    contents = gemini_upstream.requests[-1]["body"]["contents"]
    plain = call.id.partition(SEPARATOR)[0]  # the call's thought signature rode in its id
    assert contents[1]["parts"][0]["functionCall"]["id"] == plain
    assert contents[1]["parts"][0]["thoughtSignature"] == SIGNATURE
    assert contents[2]["parts"] == [{"functionResponse": {"id": plain, "name": "get_weather", "response": {"output": "sunny"}}}]


async def test_streamed_tool_calls(client, gemini_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Rome"}}
    stream = await client.chat.completions.create(
        model=GEMINI_MODEL, messages=[{"role": "user", "content": "rome?"}], tools=TOOLS, stream=True
    )
    names, arguments, finish = [], "", None
    async for chunk in stream:
        delta = chunk.choices[0].delta
        for call in delta.tool_calls or []:
            if call.function.name:
                names.append(call.function.name)
            arguments += call.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert names == ["get_weather"] and json.loads(arguments) == {"city": "Rome"}
    assert finish == "tool_calls"


async def test_json_mode_reaches_gemini(client, gemini_upstream):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
    await client.chat.completions.create(
        model=GEMINI_MODEL,
        messages=[{"role": "user", "content": "a number"}],
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}},
        reasoning_effort="low",
    )
    config = gemini_upstream.requests[-1]["body"]["generationConfig"]
    assert config["responseMimeType"] == "application/json" and config["responseJsonSchema"] == schema
    assert config["thinkingConfig"] == {"thinkingBudget": 1024}


async def test_channel_key_refused_by_google_is_a_502(client, gemini_upstream):
    gemini_upstream.api_key = "sk-other"
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model=GEMINI_MODEL, messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 502
