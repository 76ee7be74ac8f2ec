"""What the newest Responses clients send (``openai.types.responses`` of the installed
SDK), over loopback with the official SDK.

On a channel that speaks Responses every field reaches the upstream as it was sent
(``prompt_cache_key``, ``service_tier``, ``safety_identifier``, ``text.verbosity``,
``reasoning``, a replayed reasoning item with OpenAI's own ``encrypted_content`` …)
and every event reaches the client as the upstream sent it, the reasoning summary's
and an event type the gateway does not know included. On a chat-only channel the
fields chat completions shares are carried and the rest dropped."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest

from gateway_openai.fake_responses import ENCRYPTED, SUMMARY

GPT, GPT_UP = "gpt-resp", "gpt-5-2026"
CHAT_ONLY, CHAT_UP = "gpt-chat-only", "gpt-5-mini"
FUTURE = {"type": "response.future_notice", "note": "an event of a newer API"}
REPLAYED = {"type": "reasoning", "id": "rs_prev", "summary": [], "encrypted_content": "gAAAAABo-from-an-earlier-turn"}
FIELDS = {
    "prompt_cache_key": "codex-session-42",
    "prompt_cache_retention": "24h",
    "service_tier": "priority",
    "safety_identifier": "user-hash-7",
    "text": {"verbosity": "low"},
    "reasoning": {"effort": "high", "summary": "auto"},
    "include": ["reasoning.encrypted_content"],
    "store": False,
    "max_output_tokens": 500,
    "truncation": "auto",
    "top_logprobs": 0,
}
INPUT = [{"role": "user", "content": "first"}, REPLAYED, {"role": "user", "content": "hello there"}]


@pytest.fixture
def gateway_key(seed, upstream):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("native", type="openai", base_url=upstream.url, models=[GPT], model_map={GPT: GPT_UP}, settings={"responses": True})
    seed.channel("chat-only", type="openai", base_url=upstream.url, models=[CHAT_ONLY], model_map={CHAT_ONLY: CHAT_UP}, settings={"responses": False})
    return secret


async def test_the_same_protocol_path_carries_every_field_and_event(start_gateway, gateway_key, upstream, seed):
    upstream.extra_events = [FUTURE]
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    response = await client.responses.create(model=GPT, input=INPUT, **FIELDS)
    assert upstream.requests[-1]["body"] == {"model": GPT_UP, "input": INPUT, **FIELDS}  # untouched but the model
    reasoning = response.output[0]
    assert (reasoning.type, reasoning.encrypted_content, reasoning.summary[0].text) == ("reasoning", ENCRYPTED, SUMMARY)
    assert response.output_text == "echo: hello there"

    body = {"model": GPT, "input": INPUT, **FIELDS, "stream": True}
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        answer = await http.post("/v1/responses", json=body, headers={"Authorization": f"Bearer {gateway_key}"})
    events = [orjson.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    assert {**FUTURE, "sequence_number": 2} in events  # as the upstream sent it
    kinds = [event["type"] for event in events]
    assert kinds.count("response.reasoning_summary_text.delta") == 1 and kinds[-1] == "response.completed"
    done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
    assert done[0]["encrypted_content"] == ENCRYPTED

    async with client.responses.stream(model=GPT, input=INPUT, **FIELDS) as stream:
        final = await stream.get_final_response()
    assert final.output[0].encrypted_content == ENCRYPTED and final.output_text == "echo: hello there"
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["output_tokens"], row["cached_tokens"]) == (final.usage.output_tokens, 2)
    await client.close()


async def test_a_chat_only_channel_gets_the_fields_chat_completions_shares(start_gateway, gateway_key, upstream):
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    response = await client.responses.create(model=CHAT_ONLY, input=INPUT, **FIELDS)
    assert response.output_text == "echo: hello there"
    sent = upstream.requests[-1]["body"]
    assert upstream.requests[-1]["path"] == "/v1/chat/completions"
    carried = {key: sent.get(key) for key in ("prompt_cache_key", "prompt_cache_retention", "service_tier", "safety_identifier", "verbosity", "reasoning_effort", "max_completion_tokens", "store")}
    assert carried == {"prompt_cache_key": "codex-session-42", "prompt_cache_retention": "24h", "service_tier": "priority",
                       "safety_identifier": "user-hash-7", "verbosity": "low", "reasoning_effort": "high", "max_completion_tokens": 500, "store": False}  # fmt: skip
    assert not {"include", "truncation", "reasoning", "text", "top_logprobs"} & set(sent)
    assert [m["role"] for m in sent["messages"]] == ["user", "user"]  # OpenAI's own encrypted reasoning cannot cross
    assert response.usage.output_tokens_details.reasoning_tokens == 1024  # high effort, reported by the upstream
    await client.close()
