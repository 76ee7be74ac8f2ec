"""Session affinity through the real gateway over loopback HTTP, with each
protocol's official SDK against fake upstreams of its own wire: a session's
requests keep to one channel and upstream key while it is healthy, follow the
request to another channel when that one fails, and the usage log shows the
cached tokens each upstream reported."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import anthropic
import attrs
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.config import Config
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import Fault, FakeOpenAI

MODEL = "sticky-model"
CACHED = 7  # prompt tokens each fake reports as read from its cache
SESSIONS = [f"session-{n}" for n in range(5)]
KEYS = ("sk-one-0123456789abcdef", "sk-two-0123456789abcdef")


@pytest.fixture
def config(relaygate_config) -> Config:
    return attrs.evolve(relaygate_config, session_affinity=True, breaker_failures=1, breaker_cooldown=30.0, breaker_last_resort=0)


@pytest.fixture
def key(seed):
    _, secret = seed.key(seed.user("alice"))
    return secret


FAKES = {
    "openai": lambda: FakeOpenAI(api_key=None, cached_tokens=CACHED),
    "anthropic": lambda: FakeAnthropic(api_key=None, cache_read=CACHED),
    "gemini": lambda: FakeGemini(api_key=None, cached_tokens=CACHED),
}


async def call(protocol: str, gateway, secret: str, session: str, *, stream: bool = False) -> str:
    """One request of ``session`` through ``protocol``'s SDK, named the way its
    clients name one; the answer's text."""
    if protocol == "openai":
        api = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
        messages: Any = [{"role": "user", "content": "hello again"}]
        if stream:
            chunks = await api.chat.completions.create(
                model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}, extra_body={"prompt_cache_key": session}
            )
            return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        answer = await api.chat.completions.create(model=MODEL, messages=messages, extra_body={"prompt_cache_key": session})
        return answer.choices[0].message.content or ""
    if protocol == "anthropic":
        claude = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
        messages = [{"role": "user", "content": "hello again"}]
        if stream:
            async with claude.messages.stream(model=MODEL, max_tokens=50, messages=messages, metadata={"user_id": session}) as events:
                return await events.get_final_text()
        reply = await claude.messages.create(model=MODEL, max_tokens=50, messages=messages, metadata={"user_id": session})
        return reply.content[0].text  # type: ignore[union-attr]
    options = genai_types.HttpOptions(base_url=gateway.url, api_version="v1beta", headers={"x-session-id": session})
    gemini = genai.Client(api_key=secret, http_options=options)
    try:
        if stream:
            return "".join([c.text or "" async for c in await gemini.aio.models.generate_content_stream(model=MODEL, contents="hello again")])
        return (await gemini.aio.models.generate_content(model=MODEL, contents="hello again")).text or ""
    finally:
        await gemini.aio.aclose()


def places(seed) -> list[tuple[str, int, int]]:
    """(channel, key position, cached tokens) of every request logged, in order."""
    import orjson

    rows = seed.rows("SELECT channel_name, attempts, cached_tokens FROM usage_logs ORDER BY id")
    return [(r["channel_name"], orjson.loads(r["attempts"])[-1]["key_index"], r["cached_tokens"]) for r in rows]


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
async def test_a_session_keeps_to_its_channel_and_key_and_follows_a_failover(protocol, seed, key, fake_upstream, start_gateway, config):
    fakes = {name: await fake_upstream(FAKES[protocol]()) for name in ("left", "right")}
    for name, fake in fakes.items():
        seed.channel(name, type=protocol, base_url=fake.url, models=[MODEL], api_keys=KEYS)
    gateway = start_gateway(config)
    for round_ in range(3):
        for session in SESSIONS:
            assert "hello again" in await call(protocol, gateway, key, session, stream=round_ == 1)
    logged = places(seed)
    by_session: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for n, (channel, key_index, cached) in enumerate(logged):
        by_session[SESSIONS[n % len(SESSIONS)]].add((channel, key_index))
        assert cached == CACHED  # the upstream's cache hits reach the log, streamed or not
    assert all(len(seen) == 1 for seen in by_session.values()), by_session  # one channel and key per session
    # the first session's channel fails: the request fails over, and the session follows it
    (channel, key_index), = by_session[SESSIONS[0]]
    fakes[channel].fail_next(Fault(status=500))
    await call(protocol, gateway, key, SESSIONS[0])
    moved = places(seed)[-1][:2]
    assert moved[0] != channel
    for _ in range(3):
        await call(protocol, gateway, key, SESSIONS[0])
    assert {place[:2] for place in places(seed)[-3:]} == {moved}


async def test_the_session_header_and_the_user_field_name_sessions_too(seed, key, fake_upstream, start_gateway, config):
    fakes = [await fake_upstream(FakeOpenAI(api_key=None)) for _ in range(3)]
    for n, fake in enumerate(fakes):
        seed.channel(f"c{n}", type="openai", base_url=fake.url, models=[MODEL])
    gateway = start_gateway(attrs.evolve(config, session_header="x-conversation"))
    api = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0)
    chat: Any = [{"role": "user", "content": "hi"}]
    for _ in range(4):
        await api.chat.completions.create(model=MODEL, messages=chat, extra_headers={"x-conversation": "conv-1"}, user="someone")
        await api.chat.completions.create(model=MODEL, messages=chat, user="end-user-42")
    channels = [row["channel_name"] for row in seed.rows("SELECT channel_name FROM usage_logs ORDER BY id")]
    assert len(set(channels[0::2])) == 1 and len(set(channels[1::2])) == 1


async def test_sessions_are_kept_apart_by_api_key(seed, fake_upstream, start_gateway, config):
    fakes = [await fake_upstream(FakeOpenAI(api_key=None)) for _ in range(4)]
    for n, fake in enumerate(fakes):
        seed.channel(f"c{n}", type="openai", base_url=fake.url, models=[MODEL])
    secrets = [seed.key(seed.user(f"user{n}"))[1] for n in range(6)]
    gateway = start_gateway(config)
    for secret in secrets:  # six keys naming the same session: each its own
        api = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
        for _ in range(2):
            await api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], user="shared")
    affinity = gateway.services.affinity
    assert affinity is not None and len(affinity) == 6  # type: ignore[arg-type]
    channels = [row["channel_name"] for row in seed.rows("SELECT channel_name FROM usage_logs ORDER BY id")]
    assert all(channels[n] == channels[n + 1] for n in range(0, 12, 2))


async def test_without_affinity_nothing_is_remembered(seed, key, fake_upstream, start_gateway, relaygate_config):
    fake = await fake_upstream(FakeOpenAI(api_key=None))
    seed.channel("only", type="openai", base_url=fake.url, models=[MODEL])
    gateway = start_gateway(relaygate_config)
    api = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0)
    await api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], user="someone")
    assert gateway.services.affinity is None
