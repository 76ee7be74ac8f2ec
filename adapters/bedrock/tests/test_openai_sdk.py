"""The official ``openai`` SDK through the gateway to bedrock channels (IAM-signed and API-key)."""

from __future__ import annotations

import base64
import json

import openai
import pytest

from gateway_bedrock.fake_upstream import ACCESS_KEY_ID, BEARER_KEY, IAM_KEY, Fault

CLAUDE_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake-image").decode()
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]  # fmt: skip


async def test_chat_completion_signed_with_sigv4(openai_client, bedrock, gateway_key):
    completion = await openai_client.chat.completions.create(
        model="claude-test", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}],
        temperature=0.5, top_p=0.9, max_tokens=64, stop=["END"],
    )  # fmt: skip
    assert completion.choices[0].message.content == "echo: hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (4, 3)
    received = bedrock.requests[-1]
    assert received["raw_path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    assert received["headers"]["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/")
    assert gateway_key not in json.dumps(received["headers"])
    assert received["body"] == {
        "messages": [{"role": "user", "content": [{"text": "hello there"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 64, "temperature": 0.5, "stopSequences": ["END"]},  # Claude 4.5 takes no top_p beside temperature
    }


async def test_a_bedrock_api_key_is_sent_as_bearer(openai_client, bedrock):
    completion = await openai_client.chat.completions.create(model="llama-test", messages=[{"role": "user", "content": "hi"}], top_p=0.9, temperature=0.2)
    assert completion.choices[0].message.content == "echo: hi"
    received = bedrock.requests[-1]
    assert received["headers"]["Authorization"] == f"Bearer {BEARER_KEY}"
    assert received["raw_path"] == "/model/meta.llama3-3-70b-instruct-v1%3A0/converse"
    assert received["body"]["inferenceConfig"] == {"temperature": 0.2, "topP": 0.9}


async def test_stream_with_usage_and_its_usage_row(openai_client, bedrock, seed):
    bedrock.cache_read = 5
    stream = await openai_client.chat.completions.create(
        model="nova-test", messages=[{"role": "user", "content": "one two three"}], stream=True, stream_options={"include_usage": True}
    )
    text, usage, finish = "", None, None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            usage = chunk.usage
    assert (text, finish) == ("echo: one two three", "stop")
    assert (usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details.cached_tokens) == (3 + 5, 4, 5)
    assert bedrock.requests[-1]["raw_path"] == "/model/amazon.nova-pro-v1%3A0/converse-stream"
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["input_tokens"], row["output_tokens"], row["estimated"]) == ("openai", 8, 4, 0)


async def test_tool_round_trip(openai_client, bedrock):
    bedrock.tool_use = {"name": "get_weather", "input": {"city": "Paris"}}
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    first = await openai_client.chat.completions.create(model="claude-test", messages=messages, tools=TOOLS, tool_choice="required")
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls"
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
    sent = bedrock.requests[-1]["body"]["toolConfig"]
    assert sent["toolChoice"] == {"any": {}}
    assert sent["tools"][0]["toolSpec"]["inputSchema"]["json"]["required"] == ["city"]
    messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    second = await openai_client.chat.completions.create(model="claude-test", messages=messages, tools=TOOLS)
    assert second.choices[0].message.content == "echo: sunny"
    turns = bedrock.requests[-1]["body"]["messages"]
    assert turns[1] == {"role": "assistant", "content": [{"toolUse": {"toolUseId": call.id, "name": "get_weather", "input": {"city": "Paris"}}}]}
    assert turns[2] == {"role": "user", "content": [{"toolResult": {"toolUseId": call.id, "content": [{"text": "sunny"}]}}]}


async def test_streamed_tool_call(openai_client, bedrock):
    bedrock.tool_use = {"name": "get_weather", "input": {"city": "Paris"}}
    stream = await openai_client.chat.completions.create(
        model="claude-test", messages=[{"role": "user", "content": "Weather?"}], tools=TOOLS, stream=True
    )
    arguments, name, finish = "", None, None
    async for chunk in stream:
        if chunk.choices:
            for call in chunk.choices[0].delta.tool_calls or ():
                name = call.function.name or name
                arguments += call.function.arguments or ""
            finish = chunk.choices[0].finish_reason or finish
    assert (name, json.loads(arguments), finish) == ("get_weather", {"city": "Paris"}, "tool_calls")


async def test_image_input_goes_inline(openai_client, bedrock):
    content = [{"type": "text", "text": "what is it"}, {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]
    await openai_client.chat.completions.create(model="claude-test", messages=[{"role": "user", "content": content}])
    blocks = bedrock.requests[-1]["body"]["messages"][0]["content"]
    assert blocks[1] == {"image": {"format": "png", "source": {"bytes": PNG}}}


async def test_an_image_by_url_is_refused_with_a_clear_400(openai_client, bedrock):
    content = [{"type": "text", "text": "what"}, {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]
    with pytest.raises(openai.BadRequestError) as refused:
        await openai_client.chat.completions.create(model="claude-test", messages=[{"role": "user", "content": content}])
    assert "inline" in refused.value.message
    assert bedrock.requests == []


async def test_throttling_is_a_429_with_retry_advice(openai_client, bedrock):
    bedrock.fail_next(Fault(status=429, body={"message": "Too many requests, please wait before trying again."}))
    with pytest.raises(openai.RateLimitError) as throttled:
        await openai_client.chat.completions.create(model="llama-test", messages=[{"role": "user", "content": "hi"}])
    assert throttled.value.response.headers.get("retry-after") == "1"
    assert "rate limited by its upstream" in throttled.value.message and "retry in 1 s" in throttled.value.message


async def test_bad_credentials_are_a_clear_upstream_auth_error(seed, start_gateway, bedrock, user):
    _, secret = seed.key(user)
    seed.channel("aws", type="bedrock", base_url=bedrock.url, models=["claude-test"], model_map={"claude-test": CLAUDE_ID},
                 api_keys=[f"{ACCESS_KEY_ID}:not-the-secret"])  # fmt: skip
    gateway = start_gateway()
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0) as client:
        with pytest.raises(openai.APIStatusError) as refused:
            await client.chat.completions.create(model="claude-test", messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 502
    assert "refused the channel's key (403)" in refused.value.message and "signature we calculated" in refused.value.message
    assert "not-the-secret" not in refused.value.message


async def test_an_exception_frame_mid_stream_ends_the_stream_with_an_error(openai_client, bedrock):
    bedrock.stream_exception = "throttlingException"
    bedrock.fail_next(Fault(error_after=3))
    stream = await openai_client.chat.completions.create(model="nova-test", messages=[{"role": "user", "content": "a b c d e"}], stream=True)
    text = ""
    with pytest.raises(openai.APIError) as failed:
        async for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
    assert text == "echo: a"
    assert "throttlingException" in str(failed.value.message) or "rate limiting" in str(failed.value.message)


async def test_a_stream_message_over_the_frame_cap_is_an_upstream_error(seed, start_gateway, relaygate_config, bedrock, user):
    import attrs

    _, secret = seed.key(user)
    seed.channel("aws", type="bedrock", base_url=bedrock.url, models=["nova-test"], model_map={"nova-test": "amazon.nova-pro-v1:0"},
                 api_keys=[IAM_KEY])  # fmt: skip
    gateway = start_gateway(attrs.evolve(relaygate_config, max_frame_bytes=200))  # each fake event is about 170 bytes
    long_word = "x" * 300
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0) as client:
        stream = await client.chat.completions.create(model="nova-test", messages=[{"role": "user", "content": f"a {long_word}"}], stream=True)
        text = ""
        with pytest.raises(openai.APIError) as failed:
            async for chunk in stream:
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
    assert text == "echo: a"
    assert "larger than 200" in str(failed.value.message)


async def test_an_arn_round_trips_as_one_quoted_path_segment(seed, start_gateway, bedrock, user):
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
    _, secret = seed.key(user)
    seed.channel("aws", type="bedrock", base_url=bedrock.url, models=["house-claude"], model_map={"house-claude": arn}, api_keys=[IAM_KEY])
    gateway = start_gateway()
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0) as client:
        completion = await client.chat.completions.create(model="house-claude", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "echo: hi"
    received = bedrock.requests[-1]
    assert received["raw_path"] == "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fa1b2c3d4e5f6/converse"
    assert received["model"] == arn  # the signature held over the quoted path


async def test_the_stream_is_relayed_event_by_event_not_buffered(openai_client, bedrock):
    import time

    bedrock.chunk_delay = 0.15  # between the fake's event-stream messages: 9 of them
    stream = await openai_client.chat.completions.create(model="nova-test", messages=[{"role": "user", "content": "a b c d"}], stream=True)
    seen: list[float] = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            seen.append(time.monotonic())
    assert len(seen) == 5  # "echo:", " a", " b", " c", " d"
    assert seen[-1] - seen[0] >= 4 * 0.15 * 0.8  # each word reached the client as its event came


async def test_temporary_credentials_and_an_expired_token(seed, start_gateway, bedrock, user):
    bedrock.credentials["ASIAFAKETEMPORARY001"] = "temporary/secret"
    bedrock.session_tokens["ASIAFAKETEMPORARY001"] = "session-token-1"
    bedrock.expired_tokens.add("session-token-0")
    _, secret = seed.key(user)
    seed.channel("fresh", type="bedrock", base_url=bedrock.url, models=["nova-test"], model_map={"nova-test": "amazon.nova-pro-v1:0"},
                 api_keys=["ASIAFAKETEMPORARY001:temporary/secret:session-token-1"])  # fmt: skip
    seed.channel("stale", type="bedrock", base_url=bedrock.url, models=["nova-old"], model_map={"nova-old": "amazon.nova-pro-v1:0"},
                 api_keys=["ASIAFAKETEMPORARY001:temporary/secret:session-token-0"])  # fmt: skip
    gateway = start_gateway()
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0) as client:
        completion = await client.chat.completions.create(model="nova-test", messages=[{"role": "user", "content": "hi"}])
        assert completion.choices[0].message.content == "echo: hi"
        assert bedrock.requests[-1]["headers"]["X-Amz-Security-Token"] == "session-token-1"
        with pytest.raises(openai.APIStatusError) as expired:
            await client.chat.completions.create(model="nova-old", messages=[{"role": "user", "content": "hi"}])
    assert expired.value.status_code == 502 and "security token included in the request is expired" in expired.value.message
    assert "session-token-0" not in expired.value.message
