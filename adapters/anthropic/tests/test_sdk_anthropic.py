"""The official ``anthropic`` SDK against the gateway over real loopback HTTP, on an
anthropic channel (the fast path) and on an openai channel (through the core model)."""

from __future__ import annotations

import anthropic
import orjson
import pytest
from anthropic._constants import ANTHROPIC_API_VERSION

from gateway_anthropic.fake_upstream import input_tokens

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Get the current weather in a given location",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
}


@pytest.fixture
def client(gateway, gateway_key):
    return anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway_key, max_retries=0)


async def test_messages_create(client, route, gateway_key, seed, models) -> None:
    message = await client.messages.create(model=route.model, max_tokens=100, messages=[{"role": "user", "content": "hello there"}])
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "echo: hello there"
    assert message.stop_reason == "end_turn" and message.usage.output_tokens > 0
    assert message.id.startswith("msg_")
    received = route.upstream.requests[-1]
    assert gateway_key not in str(received["headers"])
    if route.channel_type == "anthropic":
        assert received["body"]["model"] == models.claude_upstream
        assert received["headers"]["x-api-key"] == "sk-ant-upstream-test"
        assert received["headers"]["anthropic-version"] == ANTHROPIC_API_VERSION  # the client's own, passed on
    else:
        assert received["body"]["max_completion_tokens"] == 100 and "max_tokens" not in received["body"]
        assert received["headers"]["Authorization"] == "Bearer sk-upstream-test"
        assert message.model == models.gpt
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["status"], row["estimated"], row["output_tokens"]) == ("anthropic", 200, 0, message.usage.output_tokens)


async def test_messages_stream_text_and_final_message(client, route, seed) -> None:
    async with client.messages.stream(model=route.model, max_tokens=100, messages=[{"role": "user", "content": "one two three"}]) as stream:
        pieces = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    assert "".join(pieces) == "echo: one two three" and len(pieces) > 1
    assert final.content[0].text == "echo: one two three"
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["end_reason"], row["estimated"], row["stream"]) == ("done", 0, 1)


async def test_tool_use_round_trip(client, route) -> None:
    route.answer_with_tool("toolu_01A09q90qw90lq917835lq9", "get_weather", {"location": "Paris"})
    question = {"role": "user", "content": "Weather in Paris?"}
    message = await client.messages.create(model=route.model, max_tokens=200, tools=[WEATHER_TOOL], messages=[question])
    assert message.stop_reason == "tool_use"
    call = message.content[-1]
    assert (call.type, call.id, call.name, call.input) == ("tool_use", "toolu_01A09q90qw90lq917835lq9", "get_weather", {"location": "Paris"})
    async with client.messages.stream(model=route.model, max_tokens=200, tools=[WEATHER_TOOL], messages=[question]) as stream:
        streamed = await stream.get_final_message()
    assert streamed.content[-1].input == {"location": "Paris"} and streamed.stop_reason == "tool_use"
    route.answer_with_text()
    answer = await client.messages.create(
        model=route.model,
        max_tokens=200,
        tools=[WEATHER_TOOL],
        messages=[
            question,
            {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "18 C and cloudy"}]},
        ],
    )
    assert answer.content[0].type == "text"
    sent = route.upstream.requests[-1]["body"]
    if route.channel_type == "anthropic":
        assert sent["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": call.id, "content": "18 C and cloudy"}
    else:
        assert sent["messages"][1]["tool_calls"][0]["id"] == call.id
        assert sent["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": "18 C and cloudy"}
        assert sent["tools"][0]["function"]["name"] == "get_weather"


async def test_count_tokens_on_an_anthropic_channel_is_forwarded(client, anthropic_upstream, seed, models) -> None:
    counted = await client.messages.count_tokens(model=models.claude, messages=[{"role": "user", "content": "Hello, world"}])
    received = anthropic_upstream.requests[-1]
    assert received["path"] == "/v1/messages/count_tokens" and received["body"]["model"] == models.claude_upstream
    assert counted.input_tokens == input_tokens(received["body"])
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["input_tokens"], row["output_tokens"], row["estimated"]) == ("count_tokens", 0, 0, 0)


async def test_count_tokens_on_an_openai_channel_is_estimated_locally(client, models, openai_upstream, seed) -> None:
    raw = await client.messages.with_raw_response.count_tokens(model=models.gpt, messages=[{"role": "user", "content": "Hello, world!"}])
    assert raw.headers["x-relaygate-token-count"] == "estimate; encoding=o200k_base"
    assert (await raw.parse()).input_tokens == 4 + 3 + 3  # 4 text tokens, the message's and the answer's framing
    assert openai_upstream.requests == []
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["status"], row["estimated"], row["input_tokens"]) == ("count_tokens", 200, 1, 0)


async def test_a_key_with_a_space_is_an_authentication_error(gateway, gateway_key, models) -> None:
    broken = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=None, default_headers={"x-api-key": gateway_key[:6] + " " + gateway_key[6:]}, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        await broken.messages.create(model=models.claude, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    body = caught.value.body
    assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
    assert "spaces" in body["error"]["message"] and gateway_key[6:] not in body["error"]["message"]
    assert body["request_id"] == caught.value.response.headers["x-request-id"]
    unknown = anthropic.AsyncAnthropic(base_url=gateway.url, api_key="sk-not-a-real-key", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        await unknown.messages.create(model=models.claude, max_tokens=10, messages=[{"role": "user", "content": "x"}])


async def test_a_key_restricted_to_other_models_is_403_permission_error_and_an_unknown_model_404(gateway, seed, route) -> None:
    user = seed.user("bob")
    _, secret = seed.key(user, models=("other",))
    restricted = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
    with pytest.raises(anthropic.PermissionDeniedError) as caught:  # the spec: a key lacking permission for the model
        await restricted.messages.create(model=route.model, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 403 and caught.value.body["error"]["type"] == "permission_error"
    assert f"lacks permission for the model '{route.model}'" in caught.value.body["error"]["message"]
    assert "GET /v1/models" in caught.value.body["error"]["message"]
    with pytest.raises(anthropic.NotFoundError) as unknown:
        await restricted.messages.create(model="no-such-model", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert unknown.value.body["error"]["type"] == "not_found_error"


async def test_an_upstream_rate_limit_is_a_rate_limit_error(client, route) -> None:
    route.fail_next(429)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await client.messages.create(model=route.model, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert caught.value.body["error"]["type"] == "rate_limit_error"


async def test_an_unknown_model_is_not_found(client) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        await client.messages.create(model="claude-nope", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert caught.value.body["error"]["type"] == "not_found_error" and "claude-nope" in caught.value.body["error"]["message"]


async def test_a_duplicated_v1_is_a_not_found_that_says_so(gateway, gateway_key, models) -> None:
    doubled = anthropic.AsyncAnthropic(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as caught:
        await doubled.messages.create(model=models.claude, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"] == "not_found_error"
    assert "repeats the '/v1' segment" in caught.value.body["error"]["message"]


async def test_upstream_overload_is_a_503_overloaded_error(client, route, seed) -> None:
    route.fail_next(529 if route.channel_type == "anthropic" else 503)
    with pytest.raises(anthropic.ServiceUnavailableError) as caught:
        await client.messages.create(model=route.model, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert caught.value.body["error"]["type"] == "overloaded_error"
    assert caught.value.response.headers["x-request-id"] in caught.value.body["error"]["message"]
    assert seed.rows("SELECT upstream_status FROM usage_logs")[-1]["upstream_status"] in (529, 503)


async def test_a_stream_the_upstream_drops_ends_with_stopped_blocks_and_an_error(client, route, seed) -> None:
    route.drop_next_stream(after=4)
    received: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with client.messages.stream(model=route.model, max_tokens=50, messages=[{"role": "user", "content": "a b c d e f g"}]) as stream:
            async for event in stream:
                received.append(event.type)
    assert "content_block_stop" in received and received[-1] == "content_block_stop"
    assert caught.value.body["error"]["type"] == "api_error"
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert row["end_reason"] == "upstream_error" and row["estimated"] == 1


async def test_models_list_in_anthropic_shape(client, models) -> None:
    page = await client.models.list()
    assert sorted(model.id for model in page.data) == [models.claude, models.gpt]
    assert all(model.type == "model" and model.display_name for model in page.data)
    first = await client.models.list(limit=1)
    assert len(first.data) == 1 and first.has_more is True


async def test_key_rate_limits_show_in_anthropic_headers(gateway, seed, models) -> None:
    user = seed.user("carol")
    _, secret = seed.key(user, limits={"rpm": 1})
    limited = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
    raw = await limited.messages.with_raw_response.create(model=models.claude, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert raw.headers["anthropic-ratelimit-requests-limit"] == "1"
    assert raw.headers["anthropic-ratelimit-requests-remaining"] == "0"
    with pytest.raises(anthropic.RateLimitError) as caught:
        await limited.messages.create(model=models.claude, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert caught.value.body["error"]["type"] == "rate_limit_error" and int(caught.value.response.headers["retry-after"]) >= 1


async def test_count_tokens_on_a_gemini_channel_answers_the_count(fake_upstream, seed, start_gateway) -> None:
    from gateway_gemini.fake_upstream import FakeGemini

    gemini = await fake_upstream(FakeGemini())
    user = seed.user("carol")
    _, secret = seed.key(user)
    seed.channel("gem", type="gemini", base_url=gemini.url, models=["gemini-for-claude-code"])
    gateway = start_gateway()
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
    raw = await client.messages.with_raw_response.count_tokens(model="gemini-for-claude-code", messages=[{"role": "user", "content": "Hello, world"}])
    assert sorted(orjson.loads(raw.http_response.content)) == ["input_tokens"]  # {"input_tokens": N}, not a Message
    counted = await raw.parse()
    assert counted.input_tokens > 0 and gemini.requests[-1]["path"].endswith(":countTokens")
