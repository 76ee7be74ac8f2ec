"""What Bedrock answers is Bedrock's fault, never the client's: a Converse answer with
any field replaced by any JSON value gives the client a 200 or a 502 in its own shape,
and usage that is no count is billed on an estimate, never stored negative."""

from __future__ import annotations

import asyncio
import http.client
import json

import orjson
import pytest
from hypothesis import given, strategies as st

from gateway_bedrock.fake_upstream import Fault
from gateway_core.testing.json_paths import paths_of, replaced

ANSWER = {
    "output": {"message": {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "c2ln"}}},
        {"text": "hello"},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Oslo"}}},
    ]}},
    "stopReason": "tool_use",
    "usage": {"inputTokens": 7, "outputTokens": 5, "totalTokens": 12, "cacheReadInputTokens": 1, "cacheWriteInputTokens": 2},
    "metrics": {"latencyMs": 10},
}  # fmt: skip
CLIENTS = {
    "openai": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    "anthropic": ("/v1/messages", {"max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}),
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**64), max_value=2**64) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


def call(url: str, key: str, protocol: str) -> tuple[int, bytes]:
    path, body = CLIENTS[protocol]
    headers = {"content-type": "application/json"}
    headers |= {"x-api-key": key, "anthropic-version": "2023-06-01"} if protocol == "anthropic" else {"authorization": f"Bearer {key}"}
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", path, body=json.dumps({**body, "model": "claude-test"}), headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("count", ["twelve", -5, {"n": 1}, 2**64 - 1, 10**12])
async def test_usage_that_is_no_count_is_estimated(gateway, gateway_key, bedrock, seed, count):
    answer = json.loads(json.dumps(ANSWER))
    answer["usage"]["inputTokens"] = count
    bedrock.fail_next(Fault(status=200, body=answer))
    status, body = await asyncio.to_thread(call, gateway.url, gateway_key, "openai")
    assert status == 200, body
    row = seed.rows("SELECT input_tokens, output_tokens, estimated FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert row["estimated"] == 1 and row["input_tokens"] > 0 and row["output_tokens"] >= 0, row


async def test_property_any_value_in_any_field_is_a_200_or_a_502(gateway, gateway_key, bedrock, seed):
    @given(path=st.sampled_from(paths_of(ANSWER)), value=JSON_VALUES, client=st.sampled_from(list(CLIENTS)))
    def check(path, value, client):
        bedrock.fail_next(Fault(status=200, body=json.dumps(replaced(ANSWER, path, value)).encode()))
        status, answer = call(gateway.url, gateway_key, client)
        assert status in (200, 502), (path, value, status, answer[:300])
        if status == 502:
            error = orjson.loads(answer)
            assert error.get("error") and (client != "anthropic" or error["type"] == "error")

    await asyncio.to_thread(check)
    negative = seed.rows("SELECT COUNT(*) AS n FROM usage_logs WHERE input_tokens < 0 OR output_tokens < 0 OR cached_tokens < 0 OR cost_micros < 0")
    assert negative == [{"n": 0}]
