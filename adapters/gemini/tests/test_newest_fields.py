"""What the newest Gemini clients send (``google.genai.types`` of the installed SDK),
over loopback.

On a gemini channel every field reaches Google as it was sent (``thinkingConfig``
with a level or a budget, ``responseJsonSchema``, ``mediaResolution``,
``serviceTier``, fields of next year …) and every chunk field reaches the client;
``usageMetadata`` is billed whole: ``promptTokenCount`` (the cached part at the
cached price) plus ``toolUsePromptTokenCount`` as input, ``candidatesTokenCount``
plus ``thoughtsTokenCount`` as output."""

from __future__ import annotations

import httpx
import orjson
import pytest
from google.genai import types

from gateway_core.billing import testing as kit
from gateway_gemini.fake_upstream import prompt_tokens

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

GEMINI_MODEL, GEMINI_UPSTREAM_MODEL = "gemini-test", "gemini-2.5-flash"  # the conftest's channel
SCHEMA = {"type": "OBJECT", "properties": {"reasoning": {"type": "STRING"}, "model_choice": {"type": "STRING"}}, "required": ["reasoning"]}
BODY = {
    "contents": [{"role": "user", "parts": [{"text": "route this"}]}],
    "systemInstruction": {"role": "user", "parts": [{"text": "You route requests."}]},
    "generationConfig": {
        "temperature": 0, "topP": 1, "maxOutputTokens": 1024,
        "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "LOW"},
        "responseMimeType": "application/json", "responseJsonSchema": SCHEMA,
        "mediaResolution": "MEDIA_RESOLUTION_LOW", "aFieldOfNextYear": {"kept": True},
    },
    "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    "serviceTier": "flex",
    "tools": [{"googleSearch": {}}, {"urlContext": {}}],
}  # fmt: skip
CHUNK_EXTRA = {"modelStatus": {"modelStage": "STABLE"}, "someFieldOfNextYear": [1, 2]}


@pytest.fixture
def priced(seed, gateway_key):
    """A key whose user has money, for a priced Gemini model (the channels: the conftest's)."""
    seed.price(GEMINI_MODEL, kit.INPUT, kit.OUTPUT, cached_input_micros_per_mtok=kit.CACHED)
    _, secret = seed.key(seed.user("carol", balance_usd=10))
    return secret


async def test_the_same_protocol_path_carries_every_field(start_gateway, priced, gemini_upstream):
    gemini_upstream.chunk_extra = CHUNK_EXTRA
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, headers={"x-goog-api-key": priced}) as http:
        answer = await http.post(f"/v1beta/models/{GEMINI_MODEL}:generateContent", json=BODY)
        sent = gemini_upstream.requests[-1]
        assert sent["body"] == BODY and sent["model"] == GEMINI_UPSTREAM_MODEL  # untouched; the model is in the path
        assert answer.json()["modelStatus"] == CHUNK_EXTRA["modelStatus"]
        streamed = await http.post(f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse", json=BODY)
    chunks = [orjson.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert gemini_upstream.requests[-1]["body"] == BODY
    assert chunks and all(chunk["someFieldOfNextYear"] == [1, 2] for chunk in chunks)


async def test_usage_metadata_is_billed_whole(start_gateway, seed, priced, gemini_upstream, genai_client):
    gemini_upstream.thoughts, gemini_upstream.cached_tokens, gemini_upstream.tool_use_prompt_tokens = True, 4, 7
    start_gateway()
    client = genai_client(priced)
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=2048, include_thoughts=True))
    response = await client.models.generate_content(model=GEMINI_MODEL, contents="what is the weather today", config=config)
    usage = response.usage_metadata
    assert (usage.cached_content_token_count, usage.tool_use_prompt_token_count, usage.thoughts_token_count) == (4, 7, 5)
    sent = gemini_upstream.requests[-1]["body"]
    assert sent["generationConfig"]["thinkingConfig"] == {"thinking_budget": 2048, "include_thoughts": True}  # as the SDK spells it
    row = await kit.wait_for_row(seed)
    prompt = prompt_tokens(sent)
    assert (row["input_tokens"], row["cached_tokens"], row["output_tokens"]) == (prompt + 7, 4, usage.candidates_token_count + 5)
    by_hand = -(-((prompt + 7 - 4) * kit.INPUT + 4 * kit.CACHED + (usage.candidates_token_count + 5) * kit.OUTPUT) // 10**6)
    assert row["cost_micros"] == by_hand
    async for chunk in await client.models.generate_content_stream(model=GEMINI_MODEL, contents="what is the weather today", config=config):
        last = chunk
    streamed = await kit.wait_for_row(seed)
    assert streamed["id"] != row["id"] and last.usage_metadata.tool_use_prompt_token_count == 7
    assert (streamed["input_tokens"], streamed["cached_tokens"], streamed["cost_micros"]) == (prompt + 7, 4, by_hand)
    kit.assert_invariants(seed)


async def test_chat_web_search_options_become_google_search(start_gateway, gateway_key, gemini_upstream):
    import openai

    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    completion = await client.chat.completions.create(model=GEMINI_MODEL, messages=[{"role": "user", "content": "news?"}], web_search_options={})
    assert completion.choices[0].message.content == "echo: news?"
    sent = gemini_upstream.requests[-1]["body"]
    assert sent["tools"] == [{"googleSearch": {}}] and "web_search_options" not in sent
    await client.close()


async def test_a_responses_client_asking_a_reasoning_summary_gets_geminis_thoughts(start_gateway, gateway_key, gemini_upstream):
    import openai

    gemini_upstream.thoughts = True
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    response = await client.responses.create(model=GEMINI_MODEL, input="hello", reasoning={"effort": "minimal", "summary": "auto"})
    sent = gemini_upstream.requests[-1]["body"]
    assert sent["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024, "includeThoughts": True}  # minimal read as low
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].summary[0].text == "Thinking about it." and response.output_text == "echo: hello"
    assert response.usage.output_tokens_details.reasoning_tokens == 5
    await client.responses.create(model=GEMINI_MODEL, input="hello", reasoning={"effort": "high"})
    assert gemini_upstream.requests[-1]["body"]["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 24_576}  # no summary asked
    await client.close()


async def test_google_search_becomes_claudes_web_search(start_gateway, seed, gateway_key, fake_upstream):
    from gateway_anthropic.fake_upstream import EXPECTED_KEY, FakeAnthropic

    claude = await fake_upstream(FakeAnthropic())
    seed.channel("claude", type="anthropic", base_url=claude.url, models=["claude-test"], model_map={"claude-test": "claude-sonnet-4-5"}, api_keys=(EXPECTED_KEY,))
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, headers={"x-goog-api-key": gateway_key}) as http:
        answer = await http.post("/v1beta/models/claude-test:generateContent", json={**BODY, "generationConfig": {"maxOutputTokens": 1024}})
    assert answer.status_code == 200, answer.text
    sent = claude.requests[-1]["body"]
    assert sent["tools"] == [{"type": "web_search_20250305", "name": "web_search"}]  # urlContext: no equivalent, dropped
    assert "serviceTier" not in sent and "safetySettings" not in sent


@pytest.mark.parametrize(("extra", "config"), [
    ({"thinking": {"type": "adaptive"}}, {"includeThoughts": True}),
    ({"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}, {"includeThoughts": True, "thinkingBudget": 1024}),
    ({"thinking": {"type": "enabled", "budget_tokens": 3000}}, {"includeThoughts": True, "thinkingBudget": 3000}),
    ({"thinking": {"type": "enabled", "budget_tokens": 3000}, "output_config": {"effort": "max"}}, {"includeThoughts": True, "thinkingBudget": 24_576}),
    ({"output_config": {"effort": "medium"}}, {"thinkingBudget": 8192}),
    ({"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}}, None),
])  # fmt: skip
def test_anthropics_thinking_and_effort_become_a_thinking_config(extra, config):
    """Anthropic's named effort (``output_config.effort``) wins over a budget, by the
    gateway's one table, as it does towards an openai channel."""
    from gateway_core.model import ChatRequest, Message, Role, TextPart
    from gateway_gemini.request import request_to_wire

    request = ChatRequest(model="m", messages=(Message(Role.USER, (TextPart("hi"),)),), extra=extra)
    assert request_to_wire(request).get("generationConfig", {}).get("thinkingConfig") == config


async def test_the_gemini_clis_routing_call_reaches_an_openai_reasoning_model(start_gateway, seed, gateway_key, openai_upstream, examples):
    """The recorded routing call (``temperature: 0``, ``thinkingBudget: 512``, JSON output)
    on a gpt-5 model: a low effort, without the temperature it would refuse beside it."""
    seed.channel("gpt5", type="openai", base_url=openai_upstream.url, models=["router-gpt"], model_map={"router-gpt": "gpt-5-mini"})
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, headers={"x-goog-api-key": gateway_key}) as http:
        answer = await http.post("/v1beta/models/router-gpt:generateContent", json=examples.json("generate_request_cli_routing.json"))
    assert answer.status_code == 200, answer.text
    sent = openai_upstream.requests[-1]["body"]
    assert (sent["reasoning_effort"], sent["top_p"], "temperature" in sent) == ("low", 1, False)
    assert sent["response_format"]["type"] == "json_schema" and sent["max_completion_tokens"] == 1024
    assert answer.json()["usageMetadata"]["thoughtsTokenCount"] == 64  # the fake's low effort
