"""What an upstream answers is the upstream's fault, never the client's: usage with
counts that are no counts (strings, negative numbers, objects) is treated as missing
— billed on an estimate, the row marked estimated, no negative count stored — and an
answer whose content has the wrong shape is a 502 (a gemini channel once said 400).

The property test has each channel type (fake upstreams in the providers' wire)
answer a valid body with one field, anywhere, replaced by an arbitrary JSON value,
for clients of every protocol, converted and on the fast path: the client gets a 200
or a 502 in its protocol's shape, and every usage row holds counts of 0 or more.
"""

from __future__ import annotations

import asyncio
import http.client
import json
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given, strategies as st

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.testing import Fault, paths_of, replaced
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI

ANSWERS: dict[str, Any] = {  # a valid non-streaming answer of each channel type
    "openai": {
        "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "hi",
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}},
    },
    "anthropic": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}],
        "usage": {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": 0},
    },
    "gemini": {
        "responseId": "r1", "modelVersion": "m",
        "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [{"text": "hi"}, {"functionCall": {"name": "f", "args": {"a": 1}}}]}}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
    },
}
USAGE_FIELDS = {"openai": ("usage", "prompt_tokens"), "anthropic": ("usage", "input_tokens"), "gemini": ("usageMetadata", "promptTokenCount")}
CLIENTS = {  # protocol: (path, body) asking model M
    "openai": ("/v1/chat/completions", {"model": "M", "messages": [{"role": "user", "content": "hello"}]}),
    "anthropic": ("/v1/messages", {"model": "M", "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]}),
    "gemini": ("/v1beta/models/M:generateContent", {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}),
}


@pytest.fixture
async def fakes(fake_upstream):
    return {"openai": await fake_upstream(FakeOpenAI()), "anthropic": await fake_upstream(FakeAnthropic()), "gemini": await fake_upstream(FakeGemini())}


@pytest.fixture
def gateway(seed, start_gateway, relaygate_config, fakes):
    user = seed.user("alice", balance_usd=100)
    _, key = seed.key(user)
    seed.channel("oai", type="openai", base_url=fakes["openai"].url + "/v1", models=["via-openai"])
    seed.channel("ant", type="anthropic", base_url=fakes["anthropic"].url, models=["via-anthropic"], api_keys=[ANTHROPIC_KEY])
    seed.channel("gem", type="gemini", base_url=fakes["gemini"].url + "/v1beta", models=["via-gemini"])
    for model in ("via-openai", "via-anthropic", "via-gemini"):
        seed.price(model, 1_000_000, 2_000_000)
    # every malformed answer is a channel failure: keep the breakers out of the way
    config = attrs.evolve(relaygate_config, breaker_failures=1_000_000, max_attempts=1)
    return start_gateway(config), key


def call(gateway, protocol: str, model: str) -> tuple[int, bytes]:
    server, key = gateway
    path, body = CLIENTS[protocol]
    headers = {"content-type": "application/json"}
    headers |= {"anthropic": {"x-api-key": key, "anthropic-version": "2023-06-01"}, "gemini": {"x-goog-api-key": key}}.get(protocol, {"authorization": f"Bearer {key}"})
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", path.replace("/M:", f"/{model}:"), body=json.dumps({**body, "model": model} if "model" in body else body), headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def with_usage_count(channel_type: str, value: Any) -> Any:
    answer = json.loads(json.dumps(ANSWERS[channel_type]))
    table, name = USAGE_FIELDS[channel_type]
    answer[table][name] = value
    return answer


@pytest.mark.parametrize("channel_type", ANSWERS)
@pytest.mark.parametrize("count", ["twelve", -5, {"n": 1}, 2**64 - 1, 10**12], ids=["string", "negative", "object", "past-int64", "trillion"])
async def test_usage_that_is_no_count_is_estimated_and_never_negative(gateway, fakes, seed, channel_type, count):
    fakes[channel_type].fail_next(Fault(status=200, body=with_usage_count(channel_type, count)))
    status, answer = await asyncio.to_thread(call, gateway, "openai", f"via-{channel_type}")
    assert status == 200, answer
    row = seed.rows("SELECT input_tokens, output_tokens, estimated, cost_micros FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert row["estimated"] == 1 and row["input_tokens"] > 0 and row["output_tokens"] >= 0 and row["cost_micros"] > 0, row


async def test_a_valid_usage_is_billed_as_reported(gateway, fakes, seed):
    fakes["gemini"].fail_next(Fault(status=200, body=with_usage_count("gemini", 30)))
    status, _ = await asyncio.to_thread(call, gateway, "anthropic", "via-gemini")
    assert status == 200
    row = seed.rows("SELECT input_tokens, output_tokens, estimated FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert row == {"input_tokens": 30, "output_tokens": 2, "estimated": 0}


@pytest.mark.parametrize("client", ["openai", "anthropic"])  # a gemini client's fast path forwards the answer as it is
async def test_a_malformed_gemini_answer_is_a_502_not_the_clients_400(gateway, fakes, client):
    answer = json.loads(json.dumps(ANSWERS["gemini"]))
    answer["candidates"][0]["content"]["parts"] = [{"text": 5}]
    fakes["gemini"].fail_next(Fault(status=200, body=answer))
    status, body = await asyncio.to_thread(call, gateway, client, "via-gemini")
    assert status == 502, body
    assert b"malformed" in body


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**64), max_value=2**64) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


@pytest.mark.parametrize("channel_type", ANSWERS)
async def test_property_any_value_in_any_field_of_an_answer_is_a_200_or_a_502(gateway, fakes, seed, channel_type):
    base = ANSWERS[channel_type]

    @given(path=st.sampled_from(paths_of(base)), value=json_values, client=st.sampled_from(list(CLIENTS)))
    def check(path, value, client):
        body = replaced(base, path, value)
        fakes[channel_type].fail_next(Fault(status=200, body=json.dumps(body).encode()))
        status, answer = call(gateway, client, f"via-{channel_type}")
        assert status in (200, 502), (status, answer[:300])
        if status == 502:
            error = orjson.loads(answer)
            assert error.get("error") and (client != "anthropic" or error["type"] == "error")

    await asyncio.to_thread(check)
    negative = seed.rows(
        "SELECT COUNT(*) AS n FROM usage_logs WHERE input_tokens < 0 OR output_tokens < 0 OR cached_tokens < 0 OR cost_micros < 0"
    )
    assert negative == [{"n": 0}]
