"""The official ``openai`` SDK against the gateway, over real loopback HTTP,
with a fake OpenAI upstream speaking the real wire format."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import openai
import pytest

from gateway_openai.fake_upstream import Fault

MODEL = "gpt-test"
UPSTREAM_MODEL = "gpt-test-2026-01-01"


@pytest.fixture
def gateway_key(seed, upstream):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("up", type="openai", base_url=upstream.url + "/v1", models=[MODEL], model_map={MODEL: UPSTREAM_MODEL})
    seed.channel("demo", type="demo", base_url="local://demo", models=["demo-chat"], settings={"delay_ms": 0})
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
def client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


async def test_lists_models_of_the_key(client):
    models = await client.models.list()
    assert sorted(m.id for m in models.data) == ["demo-chat", MODEL]


async def test_chat_completion_goes_through_with_mapped_model_and_channel_key(client, upstream, gateway_key, seed):
    completion = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hello there"}])
    assert completion.choices[0].message.content == "echo: hello there"
    assert completion.usage.completion_tokens == 3
    received = upstream.requests[-1]
    assert received["body"]["model"] == UPSTREAM_MODEL
    assert received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert gateway_key not in str(received["headers"])
    rows = seed.rows("SELECT * FROM usage_logs")
    assert len(rows) == 1
    row = rows[0]
    assert (row["model"], row["upstream_model"], row["status"], row["channel_name"]) == (MODEL, UPSTREAM_MODEL, 200, "up")
    assert (row["input_tokens"], row["output_tokens"], row["estimated"]) == (completion.usage.prompt_tokens, 3, 0)


async def test_unknown_fields_reach_the_upstream_untouched(client, upstream):
    await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        seed=7,
        extra_body={"vendor_option": {"nested": [1, 2]}},
    )
    body = upstream.requests[-1]["body"]
    assert body["seed"] == 7 and body["vendor_option"] == {"nested": [1, 2]}


async def test_stream_with_usage(client, upstream):
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "one two three"}], stream=True, stream_options={"include_usage": True}
    )
    text, usage = "", None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    assert text == "echo: one two three"
    assert usage is not None and usage.completion_tokens == 4


async def test_stream_without_usage_hides_the_usage_chunk_but_bills_it(client, upstream, seed):
    stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a b"}], stream=True)
    chunks = [chunk async for chunk in stream]
    assert all(chunk.choices for chunk in chunks)
    assert upstream.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["output_tokens"], row["estimated"], row["end_reason"]) == (3, 0, "done")


async def test_first_chunk_arrives_before_the_upstream_finishes(client, upstream):
    upstream.chunk_delay = 0.25  # 8 chunks: the whole answer takes about 2 s
    started = time.monotonic()
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "w1 w2 w3 w4 w5"}], stream=True
    )
    first_at = None
    async for chunk in stream:
        if first_at is None:
            first_at = time.monotonic() - started
    total = time.monotonic() - started
    assert total > 1.5
    assert first_at < 0.6, f"first chunk after {first_at:.2f}s of {total:.2f}s"


async def test_demo_channel_answers_plain_and_streaming(client):
    completion = await client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "ping"}])
    assert completion.choices[0].message.content.endswith("You said: ping")
    assert completion.choices[0].finish_reason == "stop"
    stream = await client.chat.completions.create(
        model="demo-chat", messages=[{"role": "user", "content": "ping"}], stream=True, stream_options={"include_usage": True}
    )
    chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == completion.choices[0].message.content
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


async def test_every_response_carries_a_request_id_and_keeps_the_clients(client, seed):
    raw = await client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "x"}], extra_headers={"X-Request-Id": "client-abc"}
    )
    request_id = raw.headers["x-request-id"]
    assert request_id.startswith("req_")
    row = seed.rows("SELECT request_id, client_request_id FROM usage_logs")[-1]
    assert row == {"request_id": request_id, "client_request_id": "client-abc"}


async def test_bad_key_is_an_authentication_error(gateway):
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key="sk-not-a-real-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        await client.models.list()
    assert "sk-not-a-real-key" not in str(caught.value)


async def test_unknown_model_is_a_bad_request_naming_it(client):
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "x"}])
    assert caught.value.code == "model_not_found"
    assert "no-such-model" in caught.value.message


async def test_malformed_bodies_are_bad_requests(gateway, gateway_key):
    headers = {"Authorization": f"Bearer {gateway_key}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as http:
        for body in (b"{not json", b"[]", b'{"model": "gpt-test"}', b'{"model": 5, "messages": []}', b""):
            async with http.post(gateway.url + "/v1/chat/completions", data=body, headers=headers) as response:
                assert response.status == 400, body
                assert set((await response.json())["error"]) >= {"message", "type", "param", "code"}


async def test_duplicated_v1_is_a_404_that_says_so(gateway, gateway_key):
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1/v1", api_key=gateway_key, max_retries=0)
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert "repeats the '/v1' segment" in caught.value.message


async def test_a_base_url_without_v1_is_a_404_that_says_so(gateway, gateway_key):
    client = openai.AsyncOpenAI(base_url=gateway.url, api_key=gateway_key, max_retries=0)
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    message = caught.value.message
    assert "POST /chat/completions, but /v1/chat/completions is served" in message and "lacks '/v1'" in message
    assert caught.value.body["code"] == "unknown_path"


async def test_unknown_path_is_a_404_in_openai_shape(gateway, gateway_key):
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/nothing-here", headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            assert response.status == 404
            assert (await response.json())["error"]["message"].startswith("Unknown path")
            assert response.headers["x-request-id"].startswith("req_")


async def test_upstream_server_error_is_a_502_with_the_request_id(client, upstream, seed):
    upstream.fail_next(Fault(status=500))
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 502
    request_id = caught.value.response.headers["x-request-id"]
    assert request_id in caught.value.message
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["status"], row["upstream_status"]) == (502, 500)
    assert "fake failure 500" in row["upstream_error"]


async def test_upstream_bad_request_passes_as_400(client, upstream):
    upstream.fail_next(Fault(status=400, body={"error": {"message": "temperature too high", "type": "invalid_request_error", "param": "temperature", "code": None}}))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert "temperature too high" in caught.value.message


async def test_stream_dropped_by_the_upstream_ends_with_an_error(client, upstream, seed):
    upstream.fail_next(Fault(drop_after=3))
    stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a b c d e"}], stream=True)
    text = ""
    with pytest.raises(openai.APIError):
        async for chunk in stream:
            text += chunk.choices[0].delta.content or ""
    assert text == "echo: a"
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert row["end_reason"] == "upstream_error" and row["estimated"] == 1 and row["output_tokens"] >= 1


async def test_client_disconnect_cancels_the_upstream_stream(gateway, gateway_key, upstream, seed):
    upstream.chunk_delay = 0.2
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": " ".join(["w"] * 40)}]}
    async with aiohttp.ClientSession() as http:
        response = await http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {gateway_key}"})
        await response.content.readany()  # read the first bytes, then hang up
        response.close()
    for _ in range(50):
        rows = seed.rows("SELECT * FROM usage_logs")
        if rows:
            break
        await asyncio.sleep(0.1)
    assert rows[-1]["end_reason"] == "client_gone"
    assert rows[-1]["duration_ms"] < 3000  # well before the 8 s the whole stream would take
