"""Health through the real gateway: breakers opening and recovering, upstream keys
disabled after a 401, keep-alives before a slow first byte, silent upstreams
ending streams with each protocol's error event, and client disconnects
cancelling the upstream call."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import anthropic
import attrs
import openai
import orjson
import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.channel_type import Timeouts
from gateway_core.config import Config
from gateway_core.routing.health_report import describe_health
from gateway_core.records import mask_secret
from gateway_core.store.channel_health import list_breakers
from gateway_core.store.channels import get_channel
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import EXPECTED_KEY, Fault, FakeOpenAI

MODEL = "gpt-health"
CLAUDE = "claude-health"
GEMINI = "gemini-health"
CHAT = [{"role": "user", "content": "one two three four"}]


@pytest.fixture
def config(relaygate_config) -> Config:
    timeouts = Timeouts(connect=1.0, first_byte=2.0, idle=0.4)
    return attrs.evolve(relaygate_config, timeouts=timeouts, breaker_failures=2, breaker_cooldown=0.6)


@pytest.fixture
def key(seed):
    _, secret = seed.key(seed.user("alice"))
    return secret


def client(gateway, secret) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)


def rows(seed) -> list[dict]:
    out = seed.rows("SELECT * FROM usage_logs ORDER BY id")
    for row in out:
        row["attempts"] = orjson.loads(row["attempts"])
    return out


async def wait_until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        await asyncio.sleep(0.02)


def health_of(seed, name: str) -> dict:
    conn = seed.store.connect()
    try:
        channel = get_channel(conn, name)
        return describe_health(channel, [r for r in list_breakers(conn) if r.channel_id == channel.id], time.time())
    finally:
        conn.close()


# --- breakers ---------------------------------------------------------------------------------


async def test_the_breaker_opens_after_failures_and_recovers_after_a_probe(seed, key, fake_upstream, start_gateway, config):
    primary, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(config)
    api = client(gateway, key)
    for _ in range(2):  # two consecutive failures open primary's breaker
        primary.fail_next(Fault(status=500))
        await api.chat.completions.create(model=MODEL, messages=CHAT)
    opened_at = time.monotonic()
    await wait_until(lambda: health_of(seed, "primary")["state"] == "open")
    health = health_of(seed, "primary")
    assert "2 failure(s)" in health["summary"] and "fake failure 500" in health["summary"]
    await api.chat.completions.create(model=MODEL, messages=CHAT)  # cooling down: not even tried
    assert len(primary.requests) == 2 and len(backup.requests) == 3
    assert [a["channel"] for a in rows(seed)[-1]["attempts"]] == ["backup"]
    await asyncio.sleep(max(0.0, 0.65 - (time.monotonic() - opened_at)))
    assert health_of(seed, "primary")["state"] == "half_open"
    await api.chat.completions.create(model=MODEL, messages=CHAT)  # the probe, which succeeds
    assert len(primary.requests) == 3 and rows(seed)[-1]["channel_name"] == "primary"
    await wait_until(lambda: health_of(seed, "primary")["state"] == "ok")
    await api.chat.completions.create(model=MODEL, messages=CHAT)
    assert rows(seed)[-1]["channel_name"] == "primary"


async def test_a_failed_probe_opens_the_breaker_again(seed, key, fake_upstream, start_gateway, config):
    primary, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(config)
    api = client(gateway, key)
    for _ in range(3):
        primary.fail_next(Fault(status=503))
    for _ in range(2):
        await api.chat.completions.create(model=MODEL, messages=CHAT)
    await asyncio.sleep(0.7)
    await api.chat.completions.create(model=MODEL, messages=CHAT)  # the probe fails: open again at once
    assert len(primary.requests) == 3
    await api.chat.completions.create(model=MODEL, messages=CHAT)
    assert len(primary.requests) == 3 and len(backup.requests) == 4


async def test_an_upstream_401_disables_that_key_for_good(seed, key, fake_upstream, start_gateway, config):
    upstream = await fake_upstream(FakeOpenAI())
    bad = "sk-revoked-0123456789abcdef"
    channel_id = seed.channel("multi", type="openai", base_url=upstream.url, models=[MODEL], api_keys=(bad, EXPECTED_KEY))
    gateway = start_gateway(config)
    api = client(gateway, key)
    answer = await api.chat.completions.create(model=MODEL, messages=CHAT)  # key #0 first: refused, then key #1
    assert answer.choices[0].message.content.startswith("echo:")
    attempts = rows(seed)[-1]["attempts"]
    assert [(a["key_index"], a["status"]) for a in attempts] == [(0, 401), (1, 200)]
    assert bad not in orjson.dumps(attempts).decode()
    await wait_until(lambda: bool(seed.rows("SELECT disabled_keys FROM channels WHERE id = ?", (channel_id,))[0]["disabled_keys"] != "[]"))
    (mark,) = orjson.loads(seed.rows("SELECT disabled_keys FROM channels WHERE id = ?", (channel_id,))[0]["disabled_keys"])
    assert mark["index"] == 0 and "401" in mark["reason"] and "Incorrect API key" in mark["reason"] and bad not in mark["reason"]
    for _ in range(4):
        await api.chat.completions.create(model=MODEL, messages=CHAT)
    sent = [r["headers"]["Authorization"] for r in upstream.requests]
    assert sent.count(f"Bearer {bad}") == 1  # never again
    health = health_of(seed, "multi")
    assert health["state"] == "degraded" and health["keys"][0]["state"] == "disabled"
    assert health["keys"][0]["key"] == mask_secret(bad)


# --- client disconnects ----------------------------------------------------------------------------


async def test_a_client_hanging_up_on_a_plain_request_cancels_the_upstream_at_once(seed, key, fake_upstream, start_gateway, config):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("slow", type="openai", base_url=upstream.url, models=[MODEL], concurrency=1)
    gateway = start_gateway(attrs.evolve(config, timeouts=Timeouts(first_byte=30.0)))
    upstream.fail_next(Fault(first_byte_delay=20))
    started = time.monotonic()
    async with aiohttp.ClientSession() as http:
        with pytest.raises(asyncio.TimeoutError):
            await http.post(gateway.url + "/v1/chat/completions", json={"model": MODEL, "messages": CHAT},
                            headers={"Authorization": f"Bearer {key}"}, timeout=aiohttp.ClientTimeout(total=0.3))  # fmt: skip
    await wait_until(lambda: upstream.cancelled == 1, timeout=3)
    assert time.monotonic() - started < 2  # not the 20 s the upstream would take
    await wait_until(lambda: bool(seed.rows("SELECT id FROM usage_logs")))
    row = rows(seed)[-1]
    assert (row["status"], row["end_reason"]) == (499, "client_gone")
    assert row["attempts"][0]["status"] == 499 and row["duration_ms"] < 2000
    # the concurrency slot is free again: the capped channel takes the next request
    answer = await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert answer.choices[0].message.content.startswith("echo:")


async def test_a_client_hanging_up_on_a_stream_frees_the_channels_slot(seed, key, fake_upstream, start_gateway, config):
    upstream = await fake_upstream(FakeOpenAI(chunk_delay=0.2))
    seed.channel("capped", type="openai", base_url=upstream.url, models=[MODEL], concurrency=1)
    gateway = start_gateway(attrs.evolve(config, timeouts=Timeouts(idle=5.0)))
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": " ".join(["w"] * 30)}]}
    async with aiohttp.ClientSession() as http:
        response = await http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        await response.content.readany()
        response.close()
    await wait_until(lambda: upstream.cancelled == 1)
    await wait_until(lambda: bool(seed.rows("SELECT id FROM usage_logs")))
    assert rows(seed)[-1]["end_reason"] == "client_gone"
    upstream.chunk_delay = 0
    answer = await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert answer.choices[0].message.content.startswith("echo:")


# --- keep-alives -------------------------------------------------------------------------------------


async def read_stream(gateway, path: str, body: dict, headers: dict) -> tuple[int, list[tuple[float, bytes]]]:
    """Status and (time since the request, bytes) of every piece of a streamed answer."""
    pieces = []
    started = time.monotonic()
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + path, json=body, headers=headers) as response:
            async for chunk in response.content.iter_any():
                pieces.append((time.monotonic() - started, chunk))
            return response.status, pieces


async def test_keep_alives_arrive_before_a_slow_first_byte(seed, key, fake_upstream, start_gateway, config):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("slow", type="openai", base_url=upstream.url, models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, keepalive_interval=0.15))
    upstream.fail_next(Fault(first_byte_delay=0.8))
    status, pieces = await read_stream(gateway, "/v1/chat/completions", {"model": MODEL, "messages": CHAT, "stream": True}, {"Authorization": f"Bearer {key}"})
    assert status == 200
    data = b"".join(chunk for _, chunk in pieces)
    head, _, rest = data.partition(b"data: ")
    assert head.count(b": keep-alive\n\n") >= 3 and head.replace(b": keep-alive\n\n", b"") == b""
    assert pieces[0][0] < 0.5  # the first keep-alive came long before the first byte
    assert rest.endswith(b"data: [DONE]\n\n")
    # and the official SDK reads such a stream as usual
    upstream.fail_next(Fault(first_byte_delay=0.5))
    stream = await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT, stream=True)
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
    assert text == "echo: one two three four"


async def test_anthropic_keep_alives_are_ping_events(seed, key, fake_upstream, start_gateway, config):
    upstream = await fake_upstream(FakeAnthropic())
    seed.channel("claude", type="anthropic", base_url=upstream.url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,))
    gateway = start_gateway(attrs.evolve(config, keepalive_interval=0.15))

    upstream.fail_next(Fault(first_byte_delay=0.6))
    body = {"model": CLAUDE, "max_tokens": 20, "messages": CHAT, "stream": True}
    status, pieces = await read_stream(gateway, "/v1/messages", body, {"x-api-key": key, "anthropic-version": "2023-06-01"})
    data = b"".join(chunk for _, chunk in pieces)
    head, _, _ = data.partition(b"event: message_start")
    assert status == 200 and head.count(b"event: ping\n") >= 2
    assert data.rstrip().endswith(b'{"type":"message_stop"}')


async def test_after_keep_alives_an_upstream_error_ends_the_stream_without_failover(seed, key, fake_upstream, start_gateway, config):
    primary, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, keepalive_interval=0.1))
    primary.fail_next(Fault(status=500, first_byte_delay=0.4))
    status, pieces = await read_stream(gateway, "/v1/chat/completions", {"model": MODEL, "messages": CHAT, "stream": True}, {"Authorization": f"Bearer {key}"})
    data = b"".join(chunk for _, chunk in pieces)
    assert status == 200 and data.startswith(b": keep-alive\n\n")
    last = orjson.loads(data.rstrip().rpartition(b"data: ")[2])
    assert last["error"]["code"] == "upstream_error" and "fake failure 500" in last["error"]["message"]
    assert backup.requests == []
    row = rows(seed)[-1]
    assert (row["status"], row["end_reason"], row["upstream_status"], row["cost_micros"]) == (200, "upstream_error", 500, 0)


# --- a silent upstream mid-stream ----------------------------------------------------------------------

IDLE_CASES = {
    # client protocol, channel type
    ("openai", "openai"),
    ("anthropic", "anthropic"),
    ("anthropic", "openai"),
    ("gemini", "gemini"),
    ("gemini", "openai"),
}


@pytest.mark.parametrize(("protocol", "channel_type"), sorted(IDLE_CASES))
async def test_an_upstream_silent_mid_stream_ends_it_with_the_protocols_error_event(protocol, channel_type, seed, key, fake_upstream, start_gateway, config):
    if channel_type == "openai":
        upstream = await fake_upstream(FakeOpenAI(chunk_delay=1.5))
        model, keys = MODEL, (EXPECTED_KEY,)
    elif channel_type == "anthropic":
        upstream = await fake_upstream(FakeAnthropic(chunk_delay=1.5))
        model, keys = CLAUDE, (ANTHROPIC_KEY,)
    else:
        upstream = await fake_upstream(FakeGemini(chunk_delay=1.5))
        model, keys = GEMINI, (EXPECTED_KEY,)
    seed.channel("silent", type=channel_type, base_url=upstream.url, models=[model], api_keys=keys)
    gateway = start_gateway(config)  # idle timeout 0.4 s
    if protocol == "openai":
        path, body, headers = "/v1/chat/completions", {"model": model, "messages": CHAT, "stream": True}, {"Authorization": f"Bearer {key}"}
    elif protocol == "anthropic":
        path, headers = "/v1/messages", {"x-api-key": key, "anthropic-version": "2023-06-01"}
        body = {"model": model, "max_tokens": 20, "messages": CHAT, "stream": True}
    else:
        path, headers = f"/v1beta/models/{model}:streamGenerateContent?alt=sse", {"x-goog-api-key": key}
        body = {"contents": [{"role": "user", "parts": [{"text": "one two three four"}]}]}
    started = time.monotonic()
    status, pieces = await read_stream(gateway, path, body, headers)
    assert status == 200 and time.monotonic() - started < 1.4
    data = b"".join(chunk for _, chunk in pieces).rstrip()
    if protocol == "openai":
        error = orjson.loads(data.rpartition(b"data: ")[2])["error"]
        assert error["code"] == "timeout" and "silent" in error["message"]
    elif protocol == "anthropic":
        name, _, payload = data.rpartition(b"event: ")[2].partition(b"\ndata: ")
        assert name == b"error" and orjson.loads(payload)["error"]["type"] == "timeout_error"
        assert b"content_block_stop" in data or b"content_block_start" not in data
    else:
        error = orjson.loads(data.rpartition(b"data: ")[2])["error"]
        assert (error["code"], error["status"]) == (504, "DEADLINE_EXCEEDED")
    row = rows(seed)[-1]
    assert (row["status"], row["end_reason"], row["error_type"]) == (200, "timeout", "timeout")
    await wait_until(lambda: upstream.cancelled == 1)  # the silent upstream was hung up on


async def test_the_anthropic_sdk_raises_the_error_event(seed, key, fake_upstream, start_gateway, config):
    upstream = await fake_upstream(FakeAnthropic(chunk_delay=1.5))
    seed.channel("silent", type="anthropic", base_url=upstream.url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,))
    gateway = start_gateway(config)
    api = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=key, max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with api.messages.stream(model=CLAUDE, max_tokens=20, messages=CHAT) as stream:
            async for _ in stream:
                pass
    assert caught.value.body["error"]["type"] == "timeout_error"
