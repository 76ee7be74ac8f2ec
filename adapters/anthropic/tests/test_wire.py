"""The gateway's Anthropic routes on the wire, as coding agents call them (raw HTTP)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from gateway_core.sse import SSESplitter, frame_fields
from gateway_anthropic.fake_upstream import EXPECTED_KEY, Fault

BETAS = "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"


def agent_headers(key: str) -> dict[str, str]:
    return {"x-api-key": key, "anthropic-version": "2023-06-01", "anthropic-beta": BETAS, "content-type": "application/json"}


async def read_events(response: aiohttp.ClientResponse) -> list[tuple[str, dict[str, Any]]]:
    splitter, events = SSESplitter(), []
    async for chunk in response.content.iter_any():
        for frame in splitter.feed(chunk):
            name, data = frame_fields(frame)
            assert name is not None and frame.startswith(b"event: "), frame  # the Python SDK skips frames without event:
            events.append((name, orjson.loads(data)))
    assert not splitter.flush().strip()
    return events


def assert_well_formed(events: list[tuple[str, dict[str, Any]]]) -> None:
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-1] == "message_stop"
    started = [p["index"] for n, p in events if n == "content_block_start"]
    stopped = [p["index"] for n, p in events if n == "content_block_stop"]
    assert started == list(range(len(started))) and sorted(stopped) == started
    assert names.index("message_delta") > max((i for i, n in enumerate(names) if n == "content_block_stop"), default=-1)


async def test_claude_code_request_passes_through_untouched(gateway, gateway_key, anthropic_upstream, examples, models, seed) -> None:
    body = {**examples.json("messages_request_claude_code.json"), "model": models.claude}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/messages?beta=true", data=orjson.dumps(body), headers=agent_headers(gateway_key)) as response:
            assert response.status == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = await read_events(response)
    assert_well_formed(events)
    assert [n for n, _ in events][:3] == ["message_start", "content_block_start", "ping"]
    sent = anthropic_upstream.requests[-1]
    assert sent["body"] == {**body, "model": models.claude_upstream}  # every field the gateway does not interpret, untouched
    assert sent["path"] == "/v1/messages?beta=true"
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert (headers["x-api-key"], headers["anthropic-version"], headers["anthropic-beta"]) == (EXPECTED_KEY, "2023-06-01", BETAS)
    assert "authorization" not in headers
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["end_reason"], row["estimated"], row["status"]) == ("done", 0, 200)


async def test_claude_code_request_on_an_openai_channel(gateway, gateway_key, openai_upstream, examples, models) -> None:
    body = {**examples.json("messages_request_claude_code.json"), "model": models.gpt}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/messages?beta=true", data=orjson.dumps(body), headers=agent_headers(gateway_key)) as response:
            assert response.status == 200
            events = await read_events(response)
    assert_well_formed(events)
    text = "".join(p["delta"]["text"] for n, p in events if n == "content_block_delta")
    assert text.startswith("echo: <system-reminder>") and text.endswith("list the files")
    delta = next(p for n, p in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "end_turn" and delta["usage"]["output_tokens"] > 0
    sent = openai_upstream.requests[-1]["body"]
    assert sent["messages"][0]["role"] == "system" and sent["max_completion_tokens"] == 32000
    assert sent["user"] == "user_2f3e_account_9c1d_session_77aa"
    assert [t["function"]["name"] for t in sent["tools"]] == ["Bash"]  # the server tool has no OpenAI form
    assert not {"thinking", "output_config", "context_management", "metadata"} & set(sent)


async def test_a_stream_error_event_follows_stopped_blocks(gateway, gateway_key, anthropic_upstream, models, seed) -> None:
    anthropic_upstream.fail_next(Fault(error_after=4))
    body = {"model": models.claude, "max_tokens": 50, "stream": True, "messages": [{"role": "user", "content": "a b c d"}]}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/messages", json=body, headers=agent_headers(gateway_key)) as response:
            events = await read_events(response)
    names = [n for n, _ in events]
    assert names[-2:] == ["content_block_stop", "error"] and "message_stop" not in names
    assert events[-1][1]["error"]["type"] == "overloaded_error"
    assert seed.rows("SELECT end_reason FROM usage_logs")[-1]["end_reason"] == "upstream_error"


async def test_an_overloaded_channel_fails_over_to_the_next(gateway, gateway_key, anthropic_upstream, models, seed) -> None:
    seed.channel("claude-backup", type="anthropic", base_url=anthropic_upstream.url, models=[models.claude], api_keys=(EXPECTED_KEY,), priority=-1)
    anthropic_upstream.fail_next(Fault(status=529))
    gateway.services.router.invalidate()
    body = {"model": models.claude, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/messages", json=body, headers=agent_headers(gateway_key)) as response:
            assert response.status == 200
            assert (await response.json())["content"][0]["text"] == "echo: hi"
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert row["channel_name"] == "claude-backup"
    assert [a["status"] for a in orjson.loads(row["attempts"])] == [529, 200]


async def test_models_route_is_shared_with_openai_clients(gateway, gateway_key) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway.url + "/v1/models", headers={"x-api-key": gateway_key, "anthropic-version": "2023-06-01"}) as response:
            anthropic_page = await response.json()
        async with http.get(gateway.url + "/v1/models", headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            openai_page = await response.json()
    assert set(anthropic_page) == {"data", "has_more", "first_id", "last_id"} and anthropic_page["data"][0]["type"] == "model"
    assert openai_page["object"] == "list" and openai_page["data"][0]["object"] == "model"


async def test_probe_missing_key_and_unknown_paths(gateway, gateway_key) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.head(gateway.url + "/") as response:
            assert response.status == 200
        async with http.post(gateway.url + "/v1/messages", json={}, headers={"anthropic-version": "2023-06-01"}) as response:
            body = await response.json()
            assert response.status == 401 and body["error"]["type"] == "authentication_error"
            assert body["request_id"] == response.headers["x-request-id"] == response.headers["request-id"]
        async with http.post(gateway.url + "/v1/v1/messages", json={}) as response:
            body = await response.json()
            assert response.status == 404 and body["type"] == "error" and "repeats the '/v1' segment" in body["error"]["message"]
        async with http.get(gateway.url + "/v1/files", headers={"x-api-key": gateway_key}) as response:
            assert response.status == 404 and (await response.json())["error"]["type"] == "not_found_error"
        async with http.get(gateway.url + "/v1/files", headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            assert response.status == 404 and "param" in (await response.json())["error"]  # OpenAI's shape


async def test_invalid_bodies_are_invalid_request_errors(gateway, gateway_key, models) -> None:
    async with aiohttp.ClientSession() as http:
        for body in (b"{not json", b"[]", b'{"model": "claude-test"}', b'{"messages": [{"role": "user", "content": "x"}]}'):
            async with http.post(gateway.url + "/v1/messages", data=body, headers=agent_headers(gateway_key)) as response:
                payload = await response.json()
                assert response.status == 400, body
                assert payload["type"] == "error" and payload["error"]["type"] == "invalid_request_error"
