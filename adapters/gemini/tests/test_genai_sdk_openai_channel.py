"""The official ``google-genai`` SDK against the gateway, to an openai channel: every
request and answer goes through the core model."""

from __future__ import annotations

import pytest
from google.genai import errors, types

from gateway_openai.fake_upstream import Fault


pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather of a city",
            parameters=types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")}, required=["city"]),
        )
    ]
)
NO_AUTO_CALLS = types.AutomaticFunctionCallingConfig(disable=True)

# the models the conftest's channels serve
OPENAI_MODEL = "gpt-test"
OPENAI_UPSTREAM_MODEL = "gpt-test-2026-01-01"


@pytest.fixture(params=["v1beta", "v1"])
def client(request, genai_client, gateway_key):
    return genai_client(gateway_key, request.param)


async def test_generate_content_is_converted_both_ways(client, openai_upstream, seed):
    config = types.GenerateContentConfig(system_instruction="Be brief.", temperature=0.3, max_output_tokens=50, stop_sequences=["END"])
    response = await client.models.generate_content(model=OPENAI_MODEL, contents="hello there", config=config)
    assert response.text == "echo: hello there"
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.usage_metadata.candidates_token_count == 3
    assert response.model_version == OPENAI_MODEL
    body = openai_upstream.requests[-1]["body"]
    assert body["model"] == OPENAI_UPSTREAM_MODEL
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]
    assert (body["temperature"], body["max_completion_tokens"], body["stop"]) == (0.3, 50, ["END"])
    assert "max_tokens" not in body
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["channel_name"], row["output_tokens"], row["estimated"]) == ("gemini", "oai", 3, 0)


async def test_stream_ends_with_a_finish_reason_and_usage(client, openai_upstream):
    chunks = [c async for c in await client.models.generate_content_stream(model=OPENAI_MODEL, contents="one two three")]
    assert "".join(c.text or "" for c in chunks) == "echo: one two three"
    last = chunks[-1]
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata.candidates_token_count == 4
    assert all(c.candidates[0].finish_reason is None for c in chunks[:-1])


async def test_function_calling_round_trip_keeps_ids_matched(client, openai_upstream):
    openai_upstream.tool_call = {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    config = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=NO_AUTO_CALLS)
    response = await client.models.generate_content(model=OPENAI_MODEL, contents="weather in Paris?", config=config)
    call = response.function_calls[0]
    assert (call.id, call.name, call.args) == ("call_abc", "get_weather", {"city": "Paris"})
    tools = openai_upstream.requests[-1]["body"]["tools"]
    assert tools[0]["function"]["parameters"] == {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    openai_upstream.tool_call = None
    history = [
        types.Content(role="user", parts=[types.Part(text="weather in Paris?")]),
        response.candidates[0].content,
        types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(id="call_abc", name="get_weather", response={"output": "sunny"}))]),
    ]
    await client.models.generate_content(model=OPENAI_MODEL, contents=history, config=config)
    messages = openai_upstream.requests[-1]["body"]["messages"]
    assert messages[1]["tool_calls"][0]["id"] == "call_abc"
    assert messages[2] == {"role": "tool", "tool_call_id": "call_abc", "content": "sunny"}


async def test_function_calls_without_ids_get_matching_ids(client, openai_upstream):
    history = [
        types.Content(role="user", parts=[types.Part(text="weather?")]),
        types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Oslo"}))]),
        types.Content(role="user", parts=[types.Part.from_function_response(name="get_weather", response={"output": "snow"})]),
    ]
    config = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=NO_AUTO_CALLS)
    await client.models.generate_content(model=OPENAI_MODEL, contents=history, config=config)
    messages = openai_upstream.requests[-1]["body"]["messages"]
    call_id = messages[1]["tool_calls"][0]["id"]
    assert call_id and messages[2]["tool_call_id"] == call_id


async def test_streamed_function_call(client, openai_upstream):
    openai_upstream.tool_call = {"id": "call_s1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}
    config = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=NO_AUTO_CALLS)
    chunks = [c async for c in await client.models.generate_content_stream(model=OPENAI_MODEL, contents="rome?", config=config)]
    calls = [fc for c in chunks for fc in (c.function_calls or [])]
    assert [(fc.id, fc.name, fc.args) for fc in calls] == [("call_s1", "get_weather", {"city": "Rome"})]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


async def test_json_schema_output_maps_to_response_format(client, openai_upstream):
    config = types.GenerateContentConfig(
        response_mime_type="application/json",
        response_json_schema={"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}, "required": ["n"]},
    )
    await client.models.generate_content(model=OPENAI_MODEL, contents="a number", config=config)
    fmt = openai_upstream.requests[-1]["body"]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def test_count_tokens_is_estimated_locally_on_a_channel_that_cannot_count(client):
    result = await client.models.count_tokens(model=OPENAI_MODEL, contents="how many tokens is this?")
    assert result.total_tokens > 0


async def test_embeddings_on_an_openai_channel_are_converted(client, openai_upstream, seed):
    config = types.EmbedContentConfig(output_dimensionality=8, task_type="RETRIEVAL_DOCUMENT")
    result = await client.models.embed_content(model=OPENAI_MODEL, contents=["first text", "second one"], config=config)
    received = openai_upstream.requests[-1]
    assert received["path"] == "/v1/embeddings"
    body = received["body"]
    assert (body["model"], body["input"], body["dimensions"], body["encoding_format"]) == (
        OPENAI_UPSTREAM_MODEL, ["first text", "second one"], 8, "float")
    assert "task_type" not in body and "taskType" not in body
    assert len(result.embeddings) == 2 and all(e.values and isinstance(e.values[0], float) for e in result.embeddings)
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["endpoint"], row["channel_name"], row["status"]) == ("gemini", "embeddings", "oai", 200)
    assert row["input_tokens"] > 0


async def test_embed_content_of_one_text_on_an_openai_channel(client, openai_upstream):
    result = await client.models.embed_content(model=OPENAI_MODEL, contents="just one")
    assert len(result.embeddings) == 1 and result.embeddings[0].values
    assert openai_upstream.requests[-1]["body"]["input"] == ["just one"]


async def test_embedding_an_image_on_an_openai_channel_is_a_clear_400(client, openai_upstream):
    image = types.Content(parts=[types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png")])
    with pytest.raises(errors.ClientError) as caught:
        await client.models.embed_content(model=OPENAI_MODEL, contents=[image])
    assert caught.value.code == 400 and "text only" in caught.value.message
    assert openai_upstream.requests == []


async def test_bad_key_is_unauthenticated(genai_client):
    client = genai_client("sk-wrong", "v1")
    with pytest.raises(errors.ClientError) as caught:
        await client.models.list()
    assert (caught.value.code, caught.value.status) == (401, "UNAUTHENTICATED")


async def test_a_forbidden_model_is_403_permission_denied_and_an_unknown_one_not_found(genai_client, seed, user):
    _, secret = seed.key(user, name="narrow", models=("other",))
    client = genai_client(secret, "v1")
    with pytest.raises(errors.ClientError) as caught:  # the spec: a key lacking permission for the model
        await client.models.generate_content(model=OPENAI_MODEL, contents="x")
    assert (caught.value.code, caught.value.status) == (403, "PERMISSION_DENIED")
    assert "lacks permission for the model" in caught.value.message
    with pytest.raises(errors.ClientError) as unknown:
        await client.models.generate_content(model="no-such-model", contents="x")
    assert unknown.value.code in (400, 404) and "lacks permission" not in unknown.value.message


async def test_rate_limit_is_resource_exhausted(client, openai_upstream):
    error = {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "param": None, "code": "rate_limit_exceeded"}}
    openai_upstream.fail_next(Fault(status=429, body=error, headers={"retry-after": "12"}))
    with pytest.raises(errors.ClientError) as caught:
        await client.models.generate_content(model=OPENAI_MODEL, contents="x")
    assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"} in caught.value.details["error"]["details"]


async def test_upstream_failure_is_a_server_error_with_the_request_id(client, openai_upstream):
    openai_upstream.fail_next(Fault(status=500))
    with pytest.raises(errors.ServerError) as caught:
        await client.models.generate_content(model=OPENAI_MODEL, contents="x")
    assert caught.value.code == 502 and caught.value.status == "INTERNAL"
    assert caught.value.response.headers["x-request-id"] in caught.value.message



@pytest.fixture
def o_series(seed, gateway_key, openai_upstream) -> str:
    seed.channel("o-series", type="openai", base_url=openai_upstream.url, models=["o-test"], model_map={"o-test": "o4-mini"})
    return gateway_key


async def test_reasoning_model_on_an_openai_channel_gets_max_completion_tokens(o_series, genai_client, openai_upstream) -> None:
    """OpenAI's reasoning models refuse ``max_tokens``: the fake upstream does too."""
    client = genai_client(o_series)
    config = types.GenerateContentConfig(max_output_tokens=77)
    response = await client.models.generate_content(model="o-test", contents="think briefly", config=config)
    assert response.text == "echo: think briefly"
    body = openai_upstream.requests[-1]["body"]
    assert (body["model"], body["max_completion_tokens"]) == ("o4-mini", 77) and "max_tokens" not in body
