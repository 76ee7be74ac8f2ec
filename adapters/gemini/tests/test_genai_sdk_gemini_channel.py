"""The official ``google-genai`` SDK against the gateway over real loopback HTTP,
to a gemini channel (the same-protocol fast path), with both API versions."""

from __future__ import annotations

import attrs
import pytest
from google import genai
from google.genai import errors, types

from gateway_gemini.fake_upstream import EXPECTED_KEY, SIGNATURE, Fault

# the models the conftest's channels serve
EMBED_MODEL = "text-embedding-test"
GEMINI_MODEL = "gemini-test"
GEMINI_UPSTREAM_MODEL = "gemini-2.5-flash"
OPENAI_MODEL = "gpt-test"



pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")


@pytest.fixture(params=["v1beta", "v1"])
def client(request, genai_client, gateway_key):
    return genai_client(gateway_key, request.param)


async def test_lists_the_models_of_the_key(client):
    models = [m async for m in await client.models.list()]
    assert sorted(m.name for m in models) == sorted(f"models/{m}" for m in (EMBED_MODEL, GEMINI_MODEL, OPENAI_MODEL))
    assert all(m.display_name for m in models)


async def test_list_pages_with_page_size(client):
    pager = await client.models.list(config={"page_size": 2})
    assert len(pager.page) == 2
    names = [m.name async for m in pager]
    assert len(names) == 3 and len(set(names)) == 3


async def test_gets_one_model(client):
    model = await client.models.get(model=GEMINI_MODEL)
    assert model.name == f"models/{GEMINI_MODEL}"
    with pytest.raises(errors.ClientError) as caught:
        await client.models.get(model="no-such-model")
    assert (caught.value.code, caught.value.status) == (404, "NOT_FOUND")


async def test_generate_content_passes_through_with_the_channel_key(client, gemini_upstream, gateway_key, seed):
    response = await client.models.generate_content(model=GEMINI_MODEL, contents="hello there")
    assert response.text == "echo: hello there"
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.usage_metadata.candidates_token_count == 3
    received = gemini_upstream.requests[-1]
    assert received["model"] == GEMINI_UPSTREAM_MODEL and received["method"] == "generateContent"
    assert received["path"].startswith("/v1beta/models/gemini-2.5-flash:generateContent")
    assert received["headers"]["x-goog-api-key"] == EXPECTED_KEY
    assert gateway_key not in str(received["headers"]) and "key=" not in received["path"]
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["protocol"], row["model"], row["upstream_model"], row["status"]) == ("gemini", GEMINI_MODEL, GEMINI_UPSTREAM_MODEL, 200)
    assert (row["output_tokens"], row["estimated"]) == (3, 0)


async def test_unknown_fields_reach_google_untouched(client, gemini_upstream):
    config = types.GenerateContentConfig(
        safety_settings=[types.SafetySetting(category="HARM_CATEGORY_HATE_SPEECH", threshold="BLOCK_ONLY_HIGH")],
        thinking_config=types.ThinkingConfig(thinking_budget=256, include_thoughts=True),
        temperature=0.2,
    )
    await client.models.generate_content(model=GEMINI_MODEL, contents="hi", config=config)
    body = gemini_upstream.requests[-1]["body"]
    assert body["safetySettings"] == [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_ONLY_HIGH"}]
    thinking = body["generationConfig"]["thinkingConfig"]  # the SDK writes this one in snake_case
    assert thinking == {"thinking_budget": 256, "include_thoughts": True}


async def test_generate_content_stream(client, gemini_upstream, seed):
    chunks = [c async for c in await client.models.generate_content_stream(model=GEMINI_MODEL, contents="one two three")]
    assert "".join(c.text or "" for c in chunks) == "echo: one two three"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert gemini_upstream.requests[-1]["path"].endswith(":streamGenerateContent?alt=sse")
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["stream"], row["output_tokens"], row["estimated"], row["end_reason"]) == (1, 4, 0, "done")


async def test_function_calling_keeps_the_thought_signature(client, gemini_upstream):
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Paris"}}
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather", description="Weather of a city",
        parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )])  # fmt: skip
    config = types.GenerateContentConfig(tools=[tool], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    response = await client.models.generate_content(model=GEMINI_MODEL, contents="weather in Paris?", config=config)
    call = response.function_calls[0]
    assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
    model_turn = response.candidates[0].content
    assert model_turn.parts[0].thought_signature is not None
    gemini_upstream.function_call = None
    follow_up = [
        types.Content(role="user", parts=[types.Part(text="weather in Paris?")]),
        model_turn,
        types.Content(role="user", parts=[types.Part.from_function_response(name="get_weather", response={"output": "sunny"})]),
    ]
    answer = await client.models.generate_content(model=GEMINI_MODEL, contents=follow_up, config=config)
    assert answer.text == 'echo: get_weather gave {"output":"sunny"}'
    sent = gemini_upstream.requests[-1]["body"]["contents"][1]["parts"][0]
    assert sent["thoughtSignature"] == SIGNATURE


async def test_count_tokens(client, gemini_upstream, seed):
    result = await client.models.count_tokens(model=GEMINI_MODEL, contents="how many tokens is this?")
    assert result.total_tokens > 0
    assert gemini_upstream.requests[-1]["method"] == "countTokens"
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["input_tokens"], row["output_tokens"]) == ("count_tokens", 0, 0)


async def test_embed_content(client, gemini_upstream, seed):
    result = await client.models.embed_content(
        model=EMBED_MODEL, contents=["first text", "second"], config=types.EmbedContentConfig(output_dimensionality=4)
    )
    assert [len(e.values) for e in result.embeddings] == [4, 4]
    received = gemini_upstream.requests[-1]
    assert received["method"] == "batchEmbedContents"
    assert {r["model"] for r in received["body"]["requests"]} == {f"models/{EMBED_MODEL}"}
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert row["endpoint"] == "embeddings" and row["input_tokens"] > 0
    assert row["estimated"] == 1  # Gemini's embedding answers report no tokens: four characters a token, said so


async def test_bad_key_is_unauthenticated(genai_client):
    client = genai_client("sk-not-a-real-key", "v1beta")
    with pytest.raises(errors.ClientError) as caught:
        await client.models.generate_content(model=GEMINI_MODEL, contents="x")
    assert (caught.value.code, caught.value.status) == (401, "UNAUTHENTICATED")
    assert "sk-not-a-real-key" not in str(caught.value)


async def test_a_forbidden_model_is_403_permission_denied_and_an_unknown_one_not_found(genai_client, seed, user):
    _, secret = seed.key(user, name="narrow", models=("other",))
    client = genai_client(secret, "v1beta")
    with pytest.raises(errors.ClientError) as caught:  # the spec: a key lacking permission for the model
        await client.models.generate_content(model=GEMINI_MODEL, contents="x")
    assert (caught.value.code, caught.value.status) == (403, "PERMISSION_DENIED")
    assert "lacks permission for the model" in caught.value.message
    with pytest.raises(errors.ClientError) as unknown:
        await client.models.generate_content(model="no-such-model", contents="x")
    assert unknown.value.code in (400, 404) and "lacks permission" not in unknown.value.message


async def test_with_hide_forbidden_models_a_forbidden_model_reads_as_an_unknown_one(start_gateway, gateway_key, relaygate_config, seed, user):
    gateway = start_gateway(attrs.evolve(relaygate_config, hide_forbidden_models=True))
    _, secret = seed.key(user, name="narrow", models=("other",))
    client = genai.Client(api_key=secret, http_options=types.HttpOptions(base_url=gateway.url, api_version="v1beta"))
    refusals = []
    try:
        for model in (GEMINI_MODEL, "no-such-model"):  # the key cannot learn which models exist elsewhere
            with pytest.raises(errors.ClientError) as caught:
                await client.aio.models.generate_content(model=model, contents="x")
            assert "was not found or is not permitted for this key" in caught.value.message
            refusals.append((caught.value.code, caught.value.status, caught.value.message.replace(model, "M")))
    finally:
        await client.aio.aclose()
    assert refusals[0] == refusals[1] and refusals[0][:2] == (400, "INVALID_ARGUMENT")


async def test_upstream_rate_limit_is_resource_exhausted_with_retry_info(client, gemini_upstream, examples):
    gemini_upstream.fail_next(Fault(status=429, body=examples.json("error_rate_limit.json")))
    with pytest.raises(errors.ClientError) as caught:
        await client.models.generate_content(model=GEMINI_MODEL, contents="x")
    assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")
    details = caught.value.details["error"]["details"]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"} in details
    assert caught.value.response.headers["retry-after"] == "37"


async def test_wrong_channel_key_is_the_channels_fault(client, gemini_upstream, seed):
    gemini_upstream.api_key = "sk-rotated"
    with pytest.raises(errors.ServerError) as caught:
        await client.models.generate_content(model=GEMINI_MODEL, contents="x")
    assert caught.value.code == 502 and "credentials" in caught.value.message
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["status"], row["upstream_status"]) == (502, 400)
    assert "API_KEY_INVALID" in row["upstream_error"]
