"""Routing when channels are out, through the real gateway over loopback HTTP
against fake upstreams: the last resort when every channel cools down, a 429 in
the caller's shape when every upstream key is rate limited, and streams that
break after their head counted as the channel's failures."""

from __future__ import annotations

import asyncio
import time
from typing import Any

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
from gateway_core.testing import free_port
from gateway_openai.fake_upstream import Fault, FakeOpenAI

MODEL = "gpt-resilient"
CHAT = [{"role": "user", "content": "one two three four"}]


@pytest.fixture
def config(relaygate_config) -> Config:
    timeouts = Timeouts(connect=1.0, first_byte=2.0, idle=1.0)
    return attrs.evolve(relaygate_config, timeouts=timeouts, breaker_failures=2, breaker_cooldown=30.0, breaker_last_resort=0.3)


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


async def status_of(gateway, secret: str) -> int:
    try:
        await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT)
        return 200
    except openai.APIStatusError as error:
        return error.status_code


# --- the last resort ---------------------------------------------------------------------------


async def test_when_every_channel_cools_down_the_one_that_failed_longest_ago_serves(seed, key, fake_upstream, start_gateway, config):
    blip = await fake_upstream(FakeOpenAI())
    seed.channel("blip", type="openai", base_url=blip.url, models=[MODEL], priority=10)
    seed.channel("dead", type="openai", base_url=f"http://127.0.0.1:{free_port()}", models=[MODEL])
    gateway = start_gateway(config)
    blip.fail_next(Fault(status=500), Fault(status=500))  # a short blip: two errors
    assert [await status_of(gateway, key), await status_of(gateway, key)] == [502, 502]
    health = gateway.services.health
    assert {health.health(c).breaker.state for c in (1, 2)} == {"open"}  # both out for 30 s
    assert health.health(1).breaker.opened_at < health.health(2).breaker.opened_at
    await asyncio.sleep(0.4)  # past breaker_last_resort, far within the cool-down
    answer = await client(gateway, key).chat.completions.create(model=MODEL, messages=CHAT)
    assert answer.choices[0].message.content == "echo: one two three four"
    last = rows(seed)[-1]
    assert (last["status"], last["channel_name"], [a["channel"] for a in last["attempts"]]) == (200, "blip", ["blip"])
    assert health.health(1).breaker.state == "closed"  # its success closed the breaker
    assert health.health(2).breaker.state == "open"
    assert await status_of(gateway, key) == 200  # and it is back in rotation
    assert len(blip.requests) == 4


async def test_a_channel_that_is_really_down_gets_a_last_resort_at_most_once_per_interval(seed, key, start_gateway, config):
    seed.channel("dead", type="openai", base_url=f"http://127.0.0.1:{free_port()}", models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, breaker_last_resort=30.0))
    assert [await status_of(gateway, key) for _ in range(2)] == [502, 502]  # opened
    assert [await status_of(gateway, key) for _ in range(5)] == [503] * 5  # no last resort before 30 s
    assert all(len(row["attempts"]) == 0 for row in rows(seed)[2:])


# --- every key rate limited ----------------------------------------------------------------------


async def ask(protocol: str, gateway, secret: str) -> Exception:
    """One call through ``protocol``'s official SDK; the error it raised."""
    try:
        if protocol == "openai":
            await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT)
        elif protocol == "anthropic":
            api = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
            await api.messages.create(model=MODEL, max_tokens=20, messages=CHAT)
        else:
            api = genai.Client(api_key=secret, http_options=genai_types.HttpOptions(base_url=gateway.url, api_version="v1beta"))
            try:
                await api.aio.models.generate_content(model=MODEL, contents="one two three four")
            finally:
                await api.aio.aclose()
    except Exception as error:  # noqa: BLE001 - the SDK's own class is what the test checks
        return error
    raise AssertionError("the call succeeded")


def answer_of(error: Exception) -> tuple[int, Any, dict]:
    """The status, headers and body the SDK's error carries."""
    if isinstance(error, genai_errors.APIError):
        return error.code, error.response.headers, error.details
    return error.status_code, error.response.headers, orjson.loads(error.response.content)


RATE_LIMIT_ERRORS = {"openai": openai.RateLimitError, "anthropic": anthropic.RateLimitError, "gemini": genai_errors.ClientError}


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
async def test_every_key_rate_limited_is_a_429_with_the_shortest_retry_after(protocol, seed, key, fake_upstream, start_gateway, config):
    first, second = await fake_upstream(FakeOpenAI(api_key=None)), await fake_upstream(FakeOpenAI(api_key=None))
    seed.channel("first", type="openai", base_url=first.url, models=[MODEL], priority=10, api_keys=("sk-first-a-0123456789", "sk-first-b-0123456789"))
    seed.channel("second", type="openai", base_url=second.url, models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, max_attempts=5))
    first.fail_next(Fault(status=429, headers={"retry-after": "40"}), Fault(status=429, headers={"retry-after": "9"}))
    second.fail_next(Fault(status=429, headers={"retry-after": "25"}))
    first_sent = time.monotonic()
    error = await ask(protocol, gateway, key)
    assert type(error) is RATE_LIMIT_ERRORS[protocol], repr(error)
    status, headers, body = answer_of(error)
    assert status == 429
    assert headers["retry-after"] == "9"  # the soonest any key is usable again
    if protocol == "openai":
        assert body["error"]["code"] == "upstream_rate_limited" and f"'{MODEL}'" in body["error"]["message"]
    elif protocol == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    else:
        assert body["error"]["code"] == 429 and body["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert (len(first.requests), len(second.requests)) == (2, 1)
    row = rows(seed)[-1]
    assert row["status"] == 429 and [a["status"] for a in row["attempts"]] == [429, 429, 429]
    # the next request finds every key cooling down: 429 at once, no upstream called
    started = time.monotonic()
    again = await ask(protocol, gateway, key)
    assert type(again) is RATE_LIMIT_ERRORS[protocol] and time.monotonic() - started < 3
    assert 9 - (time.monotonic() - first_sent) - 1 <= int(answer_of(again)[1]["retry-after"]) <= 9
    assert (len(first.requests), len(second.requests)) == (2, 1)
    assert rows(seed)[-1]["attempts"] == []


async def test_one_key_rate_limited_and_another_channel_down_is_still_a_503(seed, key, fake_upstream, start_gateway, config):
    limited = await fake_upstream(FakeOpenAI(api_key=None))
    seed.channel("limited", type="openai", base_url=limited.url, models=[MODEL], priority=10)
    seed.channel("dead", type="openai", base_url=f"http://127.0.0.1:{free_port()}", models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, breaker_failures=1, breaker_last_resort=0))
    limited.fail_next(Fault(status=429, headers={"retry-after": "20"}))
    assert await status_of(gateway, key) == 502  # limited's key out, then dead refused: opened
    assert await status_of(gateway, key) == 503  # not every candidate is out for a rate limit


# --- streams that break after their head ---------------------------------------------------------


async def stream_text(gateway, secret: str) -> tuple[str, bool]:
    """The streamed text, and whether the stream ended in an error."""
    text = ""
    try:
        stream = await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, stream=True)
        async for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
    except openai.APIError:
        return text, True
    return text, False


async def test_a_channel_whose_streams_keep_breaking_is_taken_out(seed, key, fake_upstream, start_gateway, config):
    flaky, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("flaky", type="openai", base_url=flaky.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, breaker_failures=3, breaker_last_resort=0))
    flaky.fail_next(*[Fault(drop_after=2)] * 3)
    for _ in range(3):
        text, broken = await stream_text(gateway, key)
        assert broken and text == "echo:"  # each head arrived, then the stream dropped
    assert gateway.services.health.health(1).breaker.state == "open"
    assert await stream_text(gateway, key) == ("echo: one two three four", False)
    assert (len(flaky.requests), len(backup.requests)) == (3, 1)
    assert [row["channel_name"] for row in rows(seed)] == ["flaky"] * 3 + ["backup"]
    assert [row["end_reason"] for row in rows(seed)] == ["upstream_error"] * 3 + ["done"]


async def test_broken_streams_and_plain_errors_add_up_and_a_whole_stream_resets_them(seed, key, fake_upstream, start_gateway, config):
    flaky, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("flaky", type="openai", base_url=flaky.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, breaker_failures=3, breaker_last_resort=0))
    breaker = gateway.services.health.health(1).breaker
    flaky.fail_next(Fault(drop_after=2), Fault(drop_after=2))
    await stream_text(gateway, key)
    await stream_text(gateway, key)
    assert (breaker.state, breaker.failures) == ("closed", 2)
    assert await stream_text(gateway, key) == ("echo: one two three four", False)  # whole: the count starts over
    assert breaker.failures == 0
    flaky.fail_next(Fault(drop_after=2), Fault(status=500), Fault(drop_after=2))
    await stream_text(gateway, key)  # broken
    await stream_text(gateway, key)  # a 500, failed over to the backup
    assert breaker.failures == 2
    await stream_text(gateway, key)  # broken again: the third failure in a row
    assert breaker.state == "open"
