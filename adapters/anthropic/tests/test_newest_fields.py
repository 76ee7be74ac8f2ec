"""What the newest Anthropic clients send and get back (``anthropic.types`` of the
installed SDK), over loopback with the official SDKs.

On an anthropic channel (the same-protocol path) every request field reaches the
upstream as it was sent (server tools, ``cache_control`` with a ``ttl``,
``context_management``, ``container``, ``service_tier`` …), and every stream event
reaches the client untouched — server tool blocks, their results, ``citations_delta``,
``redacted_thinking`` and event types the gateway does not know; cache writes are
billed by lifetime from the stream's ``cache_creation``. On an openai channel the
fields without an equivalent are dropped, and Claude's server-tool answer blocks
are dropped for an OpenAI client, its text kept."""

from __future__ import annotations

import anthropic
import httpx
import openai
import orjson
import pytest

from gateway_core.billing import testing as kit

SEARCH = {"type": "web_search_result", "url": "https://example.com/rg", "title": "Relaygate", "encrypted_content": "EqgfCioIARgBIiQ", "page_age": None}
CITATION = {"type": "web_search_result_location", "url": "https://example.com/rg", "title": "Relaygate", "encrypted_index": "Eo8BCioIAhgB", "cited_text": "an AI gateway"}
BLOCKS = [
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
    {"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "name": "web_search", "input": {"query": "what is relaygate"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "content": [SEARCH]},
    {"type": "text", "text": "Relaygate is an AI gateway.", "citations": [CITATION]},
]
FUTURE_EVENT = ("context_window_notice", {"type": "context_window_notice", "remaining_tokens": 12_345})
REQUEST = {
    "max_tokens": 2000,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "What is relaygate?", "cache_control": {"type": "ephemeral", "ttl": "5m"}}]}],
    "tools": [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2, "allowed_domains": ["example.com"]},
        {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 1, "citations": {"enabled": True}},
        {"type": "code_execution_20250825", "name": "code_execution"},
    ],
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "service_tier": "auto",
    "metadata": {"user_id": "user-7"},
}
EXTRA = {  # fields of newer API versions, sent as extra_body as a client on a newer SDK would
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 30_000}}]},
    "container": "container_011CPR5CNjB747bTd36fQLFk",
    "output_config": {"effort": "medium"},
    "inference_geo": "us",
    "some_field_of_next_year": {"kept": True},
}
BETAS = "context-management-2025-06-27,web-fetch-2025-09-10,code-execution-2025-08-25,extended-cache-ttl-2025-04-11"


@pytest.fixture
def priced(seed, gateway_key, models):
    """A key whose user has money, for a priced Claude model (the channels: the conftest's)."""
    seed.price(models.claude, kit.INPUT, kit.OUTPUT, cache_write_micros_per_mtok=3_125_000, cache_write_1h_micros_per_mtok=5_000_000)
    _, secret = seed.key(seed.user("carol", balance_usd=10))
    return secret


@pytest.fixture
def answering(anthropic_upstream):
    anthropic_upstream.content = BLOCKS
    anthropic_upstream.usage_extra = {"server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0}, "service_tier": "standard"}
    anthropic_upstream.extra_events = [FUTURE_EVENT]
    anthropic_upstream.cache_write, anthropic_upstream.cache_write_1h = 3000, 1000
    return anthropic_upstream


async def test_the_same_protocol_path_carries_every_field_and_event(start_gateway, seed, priced, answering, models):
    gateway = start_gateway()
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=priced, max_retries=0, default_headers={"anthropic-beta": BETAS})
    message = await client.messages.create(model=models.claude, **REQUEST, extra_body=EXTRA)
    sent = answering.requests[-1]
    assert sent["body"] == {"model": models.claude_upstream, **REQUEST, **EXTRA}  # untouched but the model
    assert sent["headers"]["anthropic-beta"] == BETAS
    assert [block.type for block in message.content] == [b["type"] for b in BLOCKS]
    assert message.content[2].content[0].encrypted_content == SEARCH["encrypted_content"]
    assert message.content[3].citations[0].cited_text == "an AI gateway"
    assert message.usage.server_tool_use.web_search_requests == 1
    assert message.usage.cache_creation.ephemeral_1h_input_tokens == 1000

    # streamed: the raw events as the upstream sent them, the unknown one included
    body = {"model": models.claude, **REQUEST, **EXTRA, "stream": True}
    headers = {"x-api-key": priced, "anthropic-version": "2023-06-01", "anthropic-beta": BETAS}
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post("/v1/messages", json=body, headers=headers)
    events = [orjson.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    types = [event["type"] for event in events]
    assert FUTURE_EVENT[1] in events
    assert types.count("content_block_start") == len(BLOCKS) and types[-1] == "message_stop"
    starts = [event["content_block"] for event in events if event["type"] == "content_block_start"]
    assert starts[0] == BLOCKS[0] and starts[2] == BLOCKS[2]
    assert {"type": "citations_delta", "citation": CITATION} in [event.get("delta") for event in events]
    row = await kit.wait_for_row(seed, response.headers["x-request-id"])
    start_usage = events[0]["message"]["usage"]
    by_hand = -(-(start_usage["input_tokens"] * kit.INPUT + 2000 * 3_125_000 + 1000 * 5_000_000 + row["output_tokens"] * kit.OUTPUT) // 10**6)
    assert (row["cache_write_tokens"], row["cost_micros"]) == (3000, by_hand)  # 1h writes at the hour's price

    # and through the SDK's stream helper, which accumulates the same blocks
    async with client.messages.stream(model=models.claude, **REQUEST, extra_body=EXTRA) as stream:
        final = await stream.get_final_message()
    assert [block.type for block in final.content] == [b["type"] for b in BLOCKS]
    assert final.content[3].citations[0].url == CITATION["url"]
    await client.close()
    kit.assert_invariants(seed)


async def test_fields_without_an_openai_equivalent_are_dropped_on_an_openai_channel(start_gateway, gateway_key, openai_upstream, models):
    gateway = start_gateway()
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway_key, max_retries=0)
    message = await client.messages.create(model=models.gpt, **REQUEST, extra_body={k: v for k, v in EXTRA.items() if k != "output_config"})
    assert message.content[-1].text == "echo: What is relaygate?"
    sent = openai_upstream.requests[-1]["body"]
    assert set(sent) <= {"model", "messages", "max_completion_tokens", "user", "service_tier"}, set(sent)
    assert "tools" not in sent  # server tools: Anthropic runs them; elsewhere nobody would
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}  # cache_control dropped
    assert sent["user"] == "user-7" and sent["service_tier"] == "auto"
    await client.close()


async def test_claudes_server_tool_blocks_are_dropped_for_an_openai_client(start_gateway, gateway_key, answering, models):
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    completion = await client.chat.completions.create(model=models.claude, messages=[{"role": "user", "content": "What is relaygate?"}])
    assert completion.choices[0].message.content == "Relaygate is an AI gateway."
    assert completion.usage.prompt_tokens_details.cached_tokens == 0
    stream = await client.chat.completions.create(model=models.claude, messages=[{"role": "user", "content": "What is relaygate?"}], stream=True)
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
    assert text == "Relaygate is an AI gateway."
    await client.close()


async def test_an_openai_clients_safety_identifier_names_the_user_to_claude(start_gateway, gateway_key, anthropic_upstream, models):
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    ask = {"model": models.claude, "messages": [{"role": "user", "content": "hi"}], "prompt_cache_key": "session-9", "verbosity": "low"}
    await client.chat.completions.create(**ask, safety_identifier="user-hash-7")
    sent = anthropic_upstream.requests[-1]["body"]
    assert sent["metadata"] == {"user_id": "user-hash-7"}
    assert not {"prompt_cache_key", "verbosity", "safety_identifier"} & set(sent)  # no Messages equivalent: dropped
    await client.chat.completions.create(**ask, safety_identifier="user-hash-7", user="legacy-user")
    assert anthropic_upstream.requests[-1]["body"]["metadata"] == {"user_id": "legacy-user"}  # the older field wins when both are sent
    await client.close()


async def test_a_responses_clients_context_management_is_not_taken_for_claudes(start_gateway, gateway_key, anthropic_upstream, models):
    """Both APIs name a field ``context_management``, in shapes of their own: Anthropic
    would refuse OpenAI's list of compaction settings."""
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    compaction = [{"type": "compaction", "compact_threshold": 200_000}]
    response = await client.responses.create(model=models.claude, input="hi", extra_body={"context_management": compaction}, safety_identifier="user-hash-7")
    assert response.output_text == "echo: hi"
    sent = anthropic_upstream.requests[-1]["body"]
    assert "context_management" not in sent and sent["metadata"] == {"user_id": "user-hash-7"}
    await client.close()


async def test_chat_web_search_options_become_claudes_web_search(start_gateway, gateway_key, anthropic_upstream, models):
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    location = {"type": "approximate", "approximate": {"city": "Lyon", "country": "FR", "timezone": "Europe/Paris"}}
    await client.chat.completions.create(model=models.claude, messages=[{"role": "user", "content": "news?"}],
                                         web_search_options={"search_context_size": "low", "user_location": location})  # fmt: skip
    sent = anthropic_upstream.requests[-1]["body"]
    assert sent["tools"] == [{"type": "web_search_20250305", "name": "web_search",
                              "user_location": {"type": "approximate", "city": "Lyon", "country": "FR", "timezone": "Europe/Paris"}}]  # fmt: skip
    assert "web_search_options" not in sent
    await client.close()


async def test_claudes_server_tool_turns_replayed_to_an_openai_channel_send_no_empty_parts(start_gateway, gateway_key, openai_upstream, models):
    """Claude Code replays Claude's server-tool turns; on an openai channel those blocks
    (and documents) have no form and are left out, never sent as empty text parts."""
    gateway = start_gateway()
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway_key, max_retries=0)
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "What is relaygate?"}, document]},
        {"role": "assistant", "content": BLOCKS[1:]},
        {"role": "user", "content": "thanks"},
    ]
    await client.messages.create(model=models.gpt, max_tokens=100, messages=messages)
    sent = openai_upstream.requests[-1]["body"]["messages"]
    assert sent == [{"role": "user", "content": "What is relaygate?"}, {"role": "assistant", "content": "Relaygate is an AI gateway."},
                    {"role": "user", "content": "thanks"}]  # fmt: skip
    await client.close()


SERVER_TOOL_ERRORS = [  # server-tool result blocks whose content is an object, read by its ``type`` (anthropic 2.14)
    {"type": "server_tool_use", "id": "srvtoolu_01A", "name": "web_search", "input": {"query": "relaygate"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01A", "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
    {"type": "server_tool_use", "id": "srvtoolu_01B", "name": "bash_code_execution", "input": {"command": "echo 4"}},
    {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_01B", "content": {"type": "bash_code_execution_result", "stdout": "4\n", "stderr": "", "return_code": 0, "content": []}},
    {"type": "text", "text": "The search hit its limit; echo says 4."},
]


async def test_server_tool_results_holding_an_object_reach_the_sdk_as_their_typed_variant(start_gateway, gateway_key, anthropic_upstream, models):
    anthropic_upstream.content = SERVER_TOOL_ERRORS
    gateway = start_gateway()
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=gateway_key, max_retries=0)
    message = await client.messages.create(model=models.claude, **REQUEST)
    async with client.messages.stream(model=models.claude, **REQUEST) as stream:
        final = await stream.get_final_message()
    for answer in (message, final):
        assert [block.type for block in answer.content] == [b["type"] for b in SERVER_TOOL_ERRORS]
        search, bash = answer.content[1].content, answer.content[3].content
        assert (type(search).__name__, search.error_code) == ("WebSearchToolResultErrorObject", "max_uses_exceeded")
        assert (type(bash).__name__, bash.stdout, bash.return_code) == ("BashCodeExecutionResultBlock", "4\n", 0)
    await client.close()
