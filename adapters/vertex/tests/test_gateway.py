"""Clients of every protocol through the gateway to a vertex channel over loopback, serving
a Gemini model and a Claude model: the ``openai``, ``anthropic`` and ``google-genai`` SDKs,
one-shot, streams, a tool round trip, counts, usage rows exact in micro-USD from the
catalogue, and an upstream 429 in each client's shape."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from gateway_core.testing import Fault

from .fake_vertex import PROJECT

GEMINI, CLAUDE, EMBED = "gemini-2.5-flash", "claude-sonnet-4-5", "gemini-embedding-001"  # the clients' names
CLAUDE_ON_VERTEX = "claude-sonnet-4-5@20250929"
LOCATION = "europe-west4"
PRICES = {GEMINI: (300_000, 2_500_000), CLAUDE: (3_000_000, 15_000_000), EMBED: (150_000, 0)}  # micro-USD per million tokens in, out (catalogue)
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


@pytest.fixture
def gateway_key(seed, vertex, oauth, account):
    _, secret = seed.key(seed.user("alice", balance_usd=10))
    seed.channel("vx", type="vertex", base_url=vertex.url + "/v1/", api_keys=[account.json(oauth.token_uri)], models=[GEMINI, CLAUDE, EMBED],
                 model_map={CLAUDE: CLAUDE_ON_VERTEX}, settings={"project": PROJECT, "location": LOCATION}, free_unpriced=False)  # fmt: skip
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


@pytest.fixture
def gemini(gateway, gateway_key):
    return genai.Client(api_key=gateway_key, http_options=types.HttpOptions(base_url=gateway.url, api_version="v1beta")).aio


def model_path(publisher: str, model: str, method: str) -> str:
    return f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/{publisher}/models/{model}:{method}"


def assert_billed(seed, model: str):
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["model"], row["status"]) == (model, 200)
    price_in, price_out = PRICES[model]
    expected = -(-(row["input_tokens"] * price_in + row["output_tokens"] * price_out) // 1_000_000)
    assert row["cost_micros"] == expected > 0
    return row


async def test_openai_client_one_shot_and_stream_on_gemini(client, vertex, oauth, seed):
    answer = await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "hello vertex"}])
    assert answer.choices[0].message.content == "echo: hello vertex"
    sent = vertex.requests[-1]
    assert sent["path"] == model_path("google", GEMINI, "generateContent")
    assert oauth.valid(sent["headers"]["Authorization"].removeprefix("Bearer "))
    row = assert_billed(seed, GEMINI)
    assert (row["upstream_model"], row["output_tokens"]) == (GEMINI, 3)

    stream = await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "one two"}], stream=True,
                                                  stream_options={"include_usage": True})  # fmt: skip
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: one two"
    assert chunks[-1].usage.completion_tokens == 3
    assert vertex.requests[-1]["path"] == model_path("google", GEMINI, "streamGenerateContent") + "?alt=sse"
    assert_billed(seed, GEMINI)
    assert len(oauth.requests) == 1  # one token for both


async def test_openai_client_one_shot_and_stream_on_claude(client, vertex, seed):
    answer = await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "bonjour"}], max_tokens=64)
    assert answer.choices[0].message.content == "echo: bonjour"
    sent = vertex.requests[-1]
    assert sent["path"] == model_path("anthropic", CLAUDE_ON_VERTEX, "rawPredict")
    assert sent["body"]["anthropic_version"] == "vertex-2023-10-16" and "model" not in sent["body"] and sent["body"]["max_tokens"] == 64
    row = assert_billed(seed, CLAUDE)
    assert row["upstream_model"] == CLAUDE_ON_VERTEX

    stream = await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "a b c"}], stream=True,
                                                  stream_options={"include_usage": True})  # fmt: skip
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: a b c"
    assert vertex.requests[-1]["path"] == model_path("anthropic", CLAUDE_ON_VERTEX, "streamRawPredict")
    assert vertex.requests[-1]["body"]["stream"] is True
    assert_billed(seed, CLAUDE)


async def test_a_tool_round_trip_from_an_openai_client_on_gemini(client, vertex):
    vertex.gemini.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    messages = [{"role": "user", "content": "weather in Paris?"}]
    answer = await client.chat.completions.create(model=GEMINI, messages=messages, tools=[WEATHER])
    call = answer.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
    assert vertex.requests[-1]["body"]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"

    vertex.gemini.function_call = None
    messages += [answer.choices[0].message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    final = await client.chat.completions.create(model=GEMINI, messages=messages, tools=[WEATHER])
    assert final.choices[0].finish_reason == "stop"
    contents = vertex.requests[-1]["body"]["contents"]
    sent_call = contents[1]["parts"][0]
    assert sent_call["functionCall"]["name"] == "get_weather" and sent_call["thoughtSignature"]  # Gemini's signature went back
    assert contents[2]["parts"][0]["functionResponse"]["name"] == "get_weather"


async def test_an_anthropic_client_on_claude_one_shot_stream_tools_and_count(claude, vertex, seed):
    message = await claude.messages.create(model=CLAUDE, max_tokens=100, messages=[{"role": "user", "content": "salut"}])
    assert message.content[0].text == "echo: salut" and message.stop_reason == "end_turn"
    assert_billed(seed, CLAUDE)

    async with claude.messages.stream(model=CLAUDE, max_tokens=50, messages=[{"role": "user", "content": "x y z"}]) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == "echo: x y z" and final.usage.output_tokens == 4
    assert_billed(seed, CLAUDE)

    vertex.claude.tool_uses = [{"id": "toolu_v1", "name": "get_weather", "input": {"city": "Paris"}}]
    tool = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    messages = [{"role": "user", "content": "weather?"}]
    message = await claude.messages.create(model=CLAUDE, max_tokens=100, tools=[tool], messages=messages)
    use = message.content[-1]
    assert (message.stop_reason, use.name, use.input) == ("tool_use", "get_weather", {"city": "Paris"})
    vertex.claude.tool_uses = None
    messages += [{"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}]  # fmt: skip
    final = await claude.messages.create(model=CLAUDE, max_tokens=100, tools=[tool], messages=messages)
    assert final.stop_reason == "end_turn"
    sent = vertex.requests[-1]["body"]["messages"]
    assert sent[1]["content"][-1]["id"] == "toolu_v1" and sent[2]["content"][0]["tool_use_id"] == "toolu_v1"

    counted = await claude.messages.count_tokens(model=CLAUDE, messages=[{"role": "user", "content": "count me"}])
    assert counted.input_tokens > 0
    sent = vertex.requests[-1]
    assert sent["path"] == model_path("anthropic", "count-tokens", "rawPredict") and sent["body"]["model"] == CLAUDE_ON_VERTEX


async def test_an_anthropic_client_on_gemini(claude, vertex, seed):
    message = await claude.messages.create(model=GEMINI, max_tokens=100, messages=[{"role": "user", "content": "guten tag"}])
    assert message.content[0].text == "echo: guten tag"
    assert vertex.requests[-1]["body"]["generationConfig"]["maxOutputTokens"] == 100
    assert_billed(seed, GEMINI)
    counted = await claude.messages.count_tokens(model=GEMINI, messages=[{"role": "user", "content": "count me"}])
    assert counted.input_tokens > 0
    sent = vertex.requests[-1]
    assert sent["path"] == model_path("google", GEMINI, "countTokens") and "contents" in sent["body"]


async def test_a_gemini_client_on_gemini_and_claude(gemini, vertex, seed):
    response = await gemini.models.generate_content(model=GEMINI, contents="hallo", config=types.GenerateContentConfig(max_output_tokens=40))
    assert response.text == "echo: hallo" and vertex.requests[-1]["body"]["generationConfig"]["maxOutputTokens"] == 40
    assert_billed(seed, GEMINI)
    chunks = [c async for c in await gemini.models.generate_content_stream(model=GEMINI, contents="x y")]
    assert "".join(c.text or "" for c in chunks) == "echo: x y"

    response = await gemini.models.generate_content(model=CLAUDE, contents="ciao")
    assert response.text == "echo: ciao" and vertex.requests[-1]["path"] == model_path("anthropic", CLAUDE_ON_VERTEX, "rawPredict")
    assert_billed(seed, CLAUDE)
    chunks = [c async for c in await gemini.models.generate_content_stream(model=CLAUDE, contents="p q")]
    assert "".join(c.text or "" for c in chunks) == "echo: p q"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


async def test_an_upstream_429_is_each_clients_429(client, claude, gemini, vertex):
    limited = {"error": {"code": 429, "message": "Resource exhausted. Please try again later.", "status": "RESOURCE_EXHAUSTED"}}
    vertex.fail_next(Fault(status=429, body=limited))
    with pytest.raises(openai.RateLimitError) as refused:
        await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "x"}])
    assert "Resource exhausted" in refused.value.body["message"]

    vertex.fail_next(Fault(status=429, body=limited))
    with pytest.raises(anthropic.RateLimitError) as refused_too:
        await claude.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert refused_too.value.body["error"]["type"] == "rate_limit_error"

    vertex.fail_next(Fault(status=429, body=limited))
    with pytest.raises(genai_errors.ClientError) as refused_gemini:
        await gemini.models.generate_content(model=CLAUDE, contents="x")
    assert (refused_gemini.value.code, refused_gemini.value.status) == (429, "RESOURCE_EXHAUSTED")


async def test_a_client_error_vertex_reports_is_the_clients_400(client, vertex):
    bad = {"error": {"code": 400, "message": "Unable to submit request because it has an empty text parameter.", "status": "INVALID_ARGUMENT"}}
    vertex.fail_next(Fault(status=400, body=bad))
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "x"}])
    assert "empty text parameter" in refused.value.body["message"]


async def test_an_anthropic_clients_claude_request_goes_as_sent(claude, vertex, seed):
    """The fast path: fields the core does not model (here ``metadata`` and a
    ``cache_control`` on a block) reach Vertex; only ``model`` moves to the URL."""
    message = await claude.messages.create(
        model=CLAUDE, max_tokens=30, metadata={"user_id": "u-42"}, extra_headers={"anthropic-beta": "context-1m-2025-08-07"},
        messages=[{"role": "user", "content": [{"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}}]}],
    )  # fmt: skip
    assert message.content[0].text == "echo: cached"
    sent = vertex.requests[-1]
    assert sent["body"]["metadata"] == {"user_id": "u-42"} and sent["body"]["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert sent["body"]["anthropic_version"] == "vertex-2023-10-16" and "model" not in sent["body"]
    assert sent["headers"]["anthropic-beta"] == "context-1m-2025-08-07"
    assert_billed(seed, CLAUDE)


async def test_a_gemini_clients_gemini_request_goes_as_sent(gemini, vertex, seed):
    config = types.GenerateContentConfig(labels={"team": "search"}, max_output_tokens=20)  # labels: a field Vertex takes
    response = await gemini.models.generate_content(model=GEMINI, contents="labelled", config=config)
    assert response.text == "echo: labelled"
    assert vertex.requests[-1]["body"]["labels"] == {"team": "search"}
    assert_billed(seed, GEMINI)


async def test_a_permission_vertex_denies_fails_over_and_keeps_the_key(client, vertex, seed):
    denied = {"error": {"code": 403, "message": "Permission 'aiplatform.endpoints.predict' denied on resource (or it may not exist).", "status": "PERMISSION_DENIED"}}
    vertex.fail_next(Fault(status=403, body=denied))
    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "x"}])
    assert failed.value.status_code == 502 and "aiplatform.endpoints.predict" in failed.value.body["message"]
    (channel,) = seed.rows("SELECT * FROM channels")
    assert channel["disabled_keys"] in (None, "", "[]")
    assert await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "y"}])


@pytest.mark.parametrize("model", [GEMINI, CLAUDE])
async def test_an_openai_responses_client_on_each_family(client, vertex, seed, model):
    response = await client.responses.create(model=model, input="respond please", max_output_tokens=50)
    assert response.output_text == "echo: respond please"
    publisher, method = ("google", "generateContent") if model == GEMINI else ("anthropic", "rawPredict")
    assert vertex.requests[-1]["path"] == model_path(publisher, CLAUDE_ON_VERTEX if model == CLAUDE else GEMINI, method)
    assert_billed(seed, model)
    async with client.responses.stream(model=model, input="s t") as stream:
        text = "".join([event.delta async for event in stream if event.type == "response.output_text.delta"])
        final = await stream.get_final_response()
    assert text == "echo: s t" and final.usage.output_tokens > 0


async def test_an_image_in_reaches_each_family_in_its_shape(client, vertex):
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    content = [{"type": "text", "text": "what is it?"}, {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{pixel}"}}]
    await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": content}])
    parts = vertex.requests[-1]["body"]["contents"][0]["parts"]
    assert {"inlineData": {"mimeType": "image/png", "data": pixel}} in parts
    await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": content}])
    blocks = vertex.requests[-1]["body"]["messages"][0]["content"]
    assert {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": pixel}} in blocks


async def test_embeddings_from_an_openai_and_a_gemini_client(client, gemini, vertex, seed):
    result = await client.embeddings.create(model=EMBED, input=["abc", "de"], encoding_format="float")
    assert [d.embedding[:2] for d in result.data] == [[3.0, 97.0], [2.0, 100.0]] and result.usage.prompt_tokens == 2
    sent = vertex.requests[-1]
    assert sent["path"] == model_path("google", EMBED, "predict") and sent["body"] == {"instances": [{"content": "abc"}, {"content": "de"}]}
    row = assert_billed(seed, EMBED)
    assert row["input_tokens"] == 2

    answer = await gemini.models.embed_content(model=EMBED, contents="hello", config=types.EmbedContentConfig(output_dimensionality=3))
    assert answer.embeddings[0].values == [5.0, 104.0, 101.0]
    assert vertex.requests[-1]["body"] == {"instances": [{"content": "hello"}], "parameters": {"outputDimensionality": 3}}
