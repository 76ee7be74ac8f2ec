"""Failover through the real gateway, over loopback HTTP, against fault-injecting
fake OpenAI upstreams: which channel is tried when, what the client gets, and
what the usage log says about every attempt."""

from __future__ import annotations

import asyncio
import time

import anthropic
import attrs
import openai
import orjson
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from gateway_core.channel_type import Timeouts
from gateway_core.config import Config
from gateway_core.records import key_fingerprint
from gateway_core.store.channels import disable_channel_key
from gateway_core.testing import free_port
from gateway_openai.fake_upstream import EXPECTED_KEY, Fault, FakeOpenAI

MODEL = "gpt-route"
CHAT = [{"role": "user", "content": "hello there"}]


class Upstream(FakeOpenAI):
    """A FakeOpenAI that accepts any key (``keys_seen`` says which came)."""

    def __init__(self) -> None:
        super().__init__(api_key=None)

    @property
    def keys_seen(self) -> list[str]:
        return [r["headers"].get("Authorization", "").removeprefix("Bearer ") for r in self.requests]


@pytest.fixture
def config(relaygate_config) -> Config:
    """Short timeouts; the store of the ``seed`` fixture."""
    timeouts = Timeouts(connect=1.0, first_byte=1.0, idle=1.0)
    return attrs.evolve(relaygate_config, timeouts=timeouts, breaker_failures=2, breaker_cooldown=0.5)


@pytest.fixture
def make_upstream(fake_upstream):
    async def make() -> Upstream:
        return await fake_upstream(Upstream())

    return make


@pytest.fixture
def key(seed):
    _, secret = seed.key(seed.user("alice"))
    return secret


def client(gateway, secret) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)


def last_row(seed) -> dict:
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    row["attempts"] = orjson.loads(row["attempts"])
    return row


FAULTS = {
    "500": (Fault(status=500), 500),
    "503": (Fault(status=503), 503),
    "429 with Retry-After": (Fault(status=429, headers={"retry-after": "7"}), 429),
    "slow first byte": (Fault(first_byte_delay=1.5), 504),
    "malformed JSON": (Fault(malformed=True), 200),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_failing_primary_fails_over_to_the_backup(fault, seed, key, make_upstream, start_gateway, config):
    primary, backup = await make_upstream(), await make_upstream()
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL], priority=0)
    gateway = start_gateway(config)
    injected, logged_status = FAULTS[fault]
    primary.fail_next(injected)
    answer = await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert answer.choices[0].message.content == "echo: hello there"
    assert len(primary.requests) == 1 and len(backup.requests) == 1
    row = last_row(seed)
    assert (row["status"], row["channel_name"]) == (200, "backup")
    first, second = row["attempts"]
    assert (first["channel"], first["status"], second["channel"], second["status"]) == ("primary", logged_status, "backup", 200)
    assert first["error"] and first["key_index"] == 0 and first["latency_ms"] > 0
    assert EXPECTED_KEY not in orjson.dumps(row["attempts"]).decode()


async def test_a_closed_port_fails_over(seed, key, make_upstream, start_gateway, config):
    backup = await make_upstream()
    seed.channel("refused", type="openai", base_url=f"http://127.0.0.1:{free_port()}", models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(config)
    await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    attempts = last_row(seed)["attempts"]
    assert [a["channel"] for a in attempts] == ["refused", "backup"]
    assert "could not connect" in attempts[0]["error"] and attempts[0]["status"] == 502


async def test_a_request_error_is_not_retried(seed, key, make_upstream, start_gateway, config):
    primary, backup = await make_upstream(), await make_upstream()
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(config)
    body = {"error": {"message": "max_tokens is too large", "type": "invalid_request_error", "param": "max_tokens", "code": None}}
    primary.fail_next(Fault(status=400, body=body))
    with pytest.raises(openai.BadRequestError, match="max_tokens is too large"):
        await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert backup.requests == []
    assert [a["status"] for a in last_row(seed)["attempts"]] == [400]


async def test_no_retry_after_the_first_byte(seed, key, make_upstream, start_gateway, config):
    primary, backup = await make_upstream(), await make_upstream()
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(config)
    primary.fail_next(Fault(drop_after=2))
    stream = await client(gateway, key).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a b c d"}], stream=True)
    text = ""
    with pytest.raises(openai.APIError):
        async for chunk in stream:
            text += chunk.choices[0].delta.content or ""
    assert text == "echo:"
    assert backup.requests == []
    row = last_row(seed)
    assert (row["status"], row["end_reason"], [a["channel"] for a in row["attempts"]]) == (200, "upstream_error", ["primary"])


async def test_the_same_channel_key_is_never_tried_twice(seed, key, make_upstream, start_gateway, config):
    busy, backup = await make_upstream(), await make_upstream()
    keys = ("sk-busy-one-0123456789", "sk-busy-two-0123456789")
    seed.channel("busy", type="openai", base_url=busy.url, models=[MODEL], priority=10, api_keys=keys)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(config)
    for _ in range(2):
        busy.fail_next(Fault(status=429))  # rate limits are the key's: the next key of the channel is tried
    await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert sorted(busy.keys_seen) == sorted(keys)  # each key once
    attempts = last_row(seed)["attempts"]
    assert [(a["channel"], a["status"]) for a in attempts] == [("busy", 429), ("busy", 429), ("backup", 200)]
    assert {a["key_index"] for a in attempts[:2]} == {0, 1}


async def test_attempts_stop_at_max_attempts_and_the_last_error_is_a_502(seed, key, make_upstream, start_gateway, config):
    upstreams = [await make_upstream() for _ in range(4)]
    for n, upstream in enumerate(upstreams):
        seed.channel(f"c{n}", type="openai", base_url=upstream.url, models=[MODEL])
        upstream.fail_next(Fault(status=500))
    gateway = start_gateway(config)  # max_attempts = 3
    with pytest.raises(openai.InternalServerError) as caught:
        await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert caught.value.status_code == 502
    assert caught.value.response.headers["x-request-id"] in caught.value.message
    assert "after 3 attempts" in caught.value.message
    assert sum(len(u.requests) for u in upstreams) == 3
    row = last_row(seed)
    assert (row["status"], row["upstream_status"], len(row["attempts"])) == (502, 500, 3)


async def test_the_attempt_deadline_bounds_every_attempt(seed, key, make_upstream, start_gateway, config):
    slow, backup = await make_upstream(), await make_upstream()
    seed.channel("slow", type="openai", base_url=slow.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, timeouts=Timeouts(first_byte=10.0), attempt_deadline=0.4))
    slow.fail_next(Fault(first_byte_delay=3))
    started = time.monotonic()
    with pytest.raises(openai.InternalServerError) as caught:
        await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert caught.value.status_code == 504 and time.monotonic() - started < 2
    assert backup.requests == []  # no attempt starts after the deadline
    assert last_row(seed)["status"] == 504


async def test_a_channel_at_its_concurrency_cap_is_skipped(seed, key, make_upstream, start_gateway, config):
    capped, other = await make_upstream(), await make_upstream()
    seed.channel("capped", type="openai", base_url=capped.url, models=[MODEL], priority=10, concurrency=1)
    seed.channel("other", type="openai", base_url=other.url, models=[MODEL])
    gateway = start_gateway(config)
    capped.fail_next(Fault(first_byte_delay=0.5))
    api = client(gateway, key)
    slow = asyncio.ensure_future(api.chat.completions.create(model=MODEL, messages=CHAT))
    while not capped.requests:
        await asyncio.sleep(0.01)
    await api.chat.completions.create(model=MODEL, messages=CHAT)  # while the capped channel is busy
    await slow
    rows = seed.rows("SELECT channel_name, attempts FROM usage_logs ORDER BY id")
    assert [r["channel_name"] for r in rows] == ["other", "capped"]
    assert [a["channel"] for a in orjson.loads(rows[0]["attempts"])] == ["other"]
    await api.chat.completions.create(model=MODEL, messages=CHAT)  # the slot was freed
    assert len(capped.requests) == 2


# --- the final answer in each client protocol --------------------------------------------------


async def ask(protocol: str, gateway, secret: str, model: str) -> Exception:
    """Call ``model`` through ``protocol``'s official SDK; return the error it raised."""
    try:
        if protocol == "openai":
            await client(gateway, secret).chat.completions.create(model=model, messages=CHAT)
        elif protocol == "anthropic":
            api = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
            await api.messages.create(model=model, max_tokens=20, messages=CHAT)
        else:
            api = genai.Client(api_key=secret, http_options=genai_types.HttpOptions(base_url=gateway.url, api_version="v1beta"))
            try:
                await api.aio.models.generate_content(model=model, contents="hello there")
            finally:
                await api.aio.aclose()
    except Exception as error:  # noqa: BLE001 - the SDK's own class is what the test checks
        return error
    raise AssertionError("the call succeeded")


SDK_ERRORS = {
    ("openai", 502): openai.InternalServerError,
    ("openai", 503): openai.InternalServerError,
    ("openai", 504): openai.InternalServerError,
    ("anthropic", 502): anthropic.InternalServerError,
    ("anthropic", 503): anthropic.ServiceUnavailableError,
    ("anthropic", 504): anthropic.GatewayTimeoutError,
    ("gemini", 502): genai_errors.ServerError,
    ("gemini", 503): genai_errors.ServerError,
    ("gemini", 504): genai_errors.ServerError,
}


def status_and_message(error: Exception) -> tuple[int, str, str]:
    if isinstance(error, genai_errors.APIError):
        return error.code, error.message or "", error.response.headers.get("x-request-id", "")
    return error.status_code, str(error), error.response.headers["x-request-id"]


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("case", ["upstream fails", "upstream times out", "no channel left"])
async def test_the_final_status_and_body_in_each_protocol(protocol, case, seed, key, make_upstream, start_gateway, config):
    upstreams = [await make_upstream() for _ in range(2)]
    for n, upstream in enumerate(upstreams):
        channel_id = seed.channel(f"c{n}", type="openai", base_url=upstream.url, models=[MODEL], api_keys=(f"sk-channel-{n}-0123456789",))
        if case == "no channel left":
            seed._write(disable_channel_key, channel_id, key_fingerprint(f"sk-channel-{n}-0123456789"), 0, "upstream answered 401")
        for _ in range(2):
            upstream.fail_next(Fault(status=500) if case == "upstream fails" else Fault(first_byte_delay=1.5))
    gateway = start_gateway(config)
    error = await ask(protocol, gateway, key, MODEL)
    expected = {"upstream fails": 502, "upstream times out": 504, "no channel left": 503}[case]
    assert type(error) is SDK_ERRORS[(protocol, expected)], repr(error)
    status, message, request_id = status_and_message(error)
    assert status == expected
    assert request_id and request_id in message
    if case == "no channel left":
        assert f"'{MODEL}'" in message and "no usable upstream key" in message
        assert all(u.requests == [] for u in upstreams)
    else:
        assert sum(len(u.requests) for u in upstreams) == 2
    assert last_row(seed)["status"] == expected
