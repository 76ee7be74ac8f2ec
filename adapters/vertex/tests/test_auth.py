"""A vertex channel's OAuth2 tokens, through the gateway over loopback to the fake Vertex
and the fake Google token endpoint: one token for many requests; a short-lived one
refreshed before it expires by one fetch two concurrent requests share; a revoked one
(Vertex's 401) replaced within the same request; the environment's default credentials;
a key that is not a service account's, or one Google refuses, said clearly and never
quoted. Also the URLs a channel's settings make (``global``, a region, a multi-region)."""

from __future__ import annotations

import asyncio

import openai
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from gateway_core import ChannelRecord, Target, UpstreamError
from gateway_vertex.channel import VertexChannel, api_base, model_url, publisher_of

from .fake_vertex import PROJECT, ServiceAccount

GEMINI = "gemini-2.5-flash"


def add_channel(seed, vertex, key: str, name: str = "vx", models=(GEMINI,), **settings) -> None:
    seed.channel(name, type="vertex", base_url=vertex.url, api_keys=[key], models=list(models),
                 settings={"project": PROJECT, "location": "global", **settings})  # fmt: skip


@pytest.fixture
def gateway_key(seed):
    _, secret = seed.key(seed.user("alice"))
    return secret


@pytest.fixture
def client(start_gateway, gateway_key, seed, vertex, oauth, account):
    add_channel(seed, vertex, account.json(oauth.token_uri))
    return openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)


async def ask(client, text="hi", model=GEMINI):
    answer = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
    return answer.choices[0].message.content


def bearer(request) -> str:
    return request["headers"]["Authorization"].removeprefix("Bearer ")


async def test_one_token_serves_many_requests_at_the_global_location(client, vertex, oauth):
    assert await ask(client, "one") == "echo: one"
    assert await ask(client, "two") == "echo: two"
    assert len(oauth.requests) == 1 and oauth.requests[0]["body"]["assertion"] == "<assertion>"
    assert bearer(vertex.requests[0]) == bearer(vertex.requests[1]) and oauth.valid(bearer(vertex.requests[0]))
    assert vertex.requests[0]["path"] == f"/v1/projects/{PROJECT}/locations/global/publishers/google/models/{GEMINI}:generateContent"


async def test_a_short_lived_token_is_refreshed_before_expiry_by_one_shared_fetch(client, vertex, oauth):
    oauth.lifetime, oauth.answer_delay = 2, 0.3  # refreshed after half its life; the fetch slow enough to overlap
    assert await ask(client) == "echo: hi"
    first = bearer(vertex.requests[-1])
    await asyncio.sleep(1.2)  # past the refresh point, before the token's end: still valid upstream
    assert oauth.valid(first)
    answers = await asyncio.gather(ask(client, "a"), ask(client, "b"))
    assert sorted(answers) == ["echo: a", "echo: b"]
    assert len(oauth.requests) == 2  # two requests, one refresh
    second, third = bearer(vertex.requests[-2]), bearer(vertex.requests[-1])
    assert second == third != first
    await asyncio.sleep(2.2)  # the new token ended too
    assert not oauth.valid(second)
    assert await ask(client, "later") == "echo: later" and len(oauth.requests) == 3


async def test_a_slow_token_fetch_does_not_hold_up_other_requests(start_gateway, gateway_key, seed, vertex, oauth, account):
    """The refresh runs in a thread: while one channel waits for Google's token endpoint,
    the gateway's event loop serves another channel's request at once."""
    add_channel(seed, vertex, account.json(oauth.token_uri), name="vx-a", models=("model-a",))
    add_channel(seed, vertex, account.json(oauth.token_uri), name="vx-b", models=("model-b",))
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    assert await ask(client, "warm", model="model-a") == "echo: warm"  # vx-a holds a token
    oauth.answer_delay = 1.5
    loop = asyncio.get_running_loop()
    started = loop.time()
    slow = asyncio.ensure_future(ask(client, "slow", model="model-b"))  # vx-b fetches its first token
    await asyncio.sleep(0.2)
    assert await ask(client, "quick", model="model-a") == "echo: quick"
    assert loop.time() - started < 1.0 and not slow.done()
    assert await slow == "echo: slow" and loop.time() - started >= 1.5


async def test_a_token_vertex_refuses_is_replaced_within_the_request(client, vertex, oauth, seed):
    assert await ask(client) == "echo: hi"
    oauth.issued.clear()  # every token revoked (or expired early): Vertex answers 401
    assert await ask(client, "after") == "echo: after"  # refreshed and tried once more
    assert [r["path"].rsplit(":", 1)[1] for r in vertex.requests] == ["generateContent"] * 3
    assert len(oauth.requests) == 2
    (channel,) = seed.rows("SELECT * FROM channels")
    assert channel["disabled_keys"] in (None, "", "[]")


async def test_a_base64_key_as_channel_add_takes_it(start_gateway, gateway_key, seed, vertex, oauth, account):
    import base64

    from gateway_core.commands.kit import split_list

    encoded = base64.b64encode(account.json(oauth.token_uri).encode()).decode()
    assert split_list(encoded) == [encoded]  # one key for --api-key (the raw JSON's commas would make several)
    add_channel(seed, vertex, encoded)
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    assert await ask(client) == "echo: hi" and len(oauth.requests) == 1


async def test_the_environments_default_credentials(start_gateway, gateway_key, seed, vertex, oauth, account, tmp_path, monkeypatch):
    key_file = tmp_path / "service-account.json"
    key_file.write_text(account.json(oauth.token_uri))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    add_channel(seed, vertex, "unused", credentials="default")
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    assert await ask(client) == "echo: hi"
    assert len(oauth.requests) == 1 and oauth.valid(bearer(vertex.requests[-1]))


async def test_a_key_that_is_no_service_account_is_said_without_the_key(start_gateway, gateway_key, seed, vertex):
    add_channel(seed, vertex, "AIzaSy-not-a-json-key-42")
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    with pytest.raises(openai.APIStatusError) as failed:
        await ask(client)
    assert failed.value.status_code == 502
    message = failed.value.body["message"]
    assert "is not a service account's JSON key" in message and "AIzaSy" not in message
    assert vertex.requests == []


async def test_a_key_google_refuses_is_said_without_the_key(start_gateway, gateway_key, seed, vertex, oauth, account):
    impostor = ServiceAccount(rsa.generate_private_key(public_exponent=65537, key_size=2048), email=account.email)
    add_channel(seed, vertex, impostor.json(oauth.token_uri))
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    with pytest.raises(openai.APIStatusError) as failed:
        await ask(client)
    assert failed.value.status_code == 502
    message = failed.value.body["message"]
    assert f"Google refused the credentials of {account.email}: invalid_grant: Invalid JWT Signature." in message
    assert "PRIVATE KEY" not in message and vertex.requests == []


async def test_a_missing_project_is_said_before_any_token(start_gateway, gateway_key, seed, vertex, oauth, account):
    seed.channel("vx", type="vertex", base_url=vertex.url, api_keys=[account.json(oauth.token_uri)], models=[GEMINI])
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    with pytest.raises(openai.APIStatusError) as failed:
        await ask(client)
    assert "setting project is not set" in failed.value.body["message"] and oauth.requests == []


def target(model: str, base_url: str = "https://{location}-aiplatform.googleapis.com", **settings) -> Target:
    channel = ChannelRecord(id=1, name="vx", type="vertex", base_url=VertexChannel().normalize_base_url(base_url), api_keys=("k",),
                            models=(model,), model_map={}, groups=("default",), settings={"project": "p", **settings})  # fmt: skip
    return Target(channel=channel, api_key="k", upstream_model=model)


def test_the_urls_a_channels_settings_make():
    assert api_base(target(GEMINI)) == "https://aiplatform.googleapis.com"  # location global by default
    assert api_base(target(GEMINI, location="us-east5")) == "https://us-east5-aiplatform.googleapis.com"
    assert api_base(target(GEMINI, location="eu")) == "https://aiplatform.eu.rep.googleapis.com"
    assert api_base(target(GEMINI, "https://private.example.com/v1/", location="us-east5")) == "https://private.example.com"
    claude = target("claude-opus-4-1@20250805", location="us-east5")
    assert model_url(claude, publisher_of(claude), "claude-opus-4-1@20250805", "rawPredict") == (
        "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-opus-4-1@20250805:rawPredict"
    )
    assert publisher_of(target(GEMINI)) == "google" and publisher_of(target("my-claude-tune", publisher="anthropic")) == "anthropic"
    with pytest.raises(UpstreamError, match="setting project is not set"):
        model_url(target(GEMINI, project=""), "google", GEMINI, "generateContent")
