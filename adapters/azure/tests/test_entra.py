"""An azure channel authenticating with Microsoft Entra ID (client credentials), through
the gateway over loopback to the fake Azure resource and the fake token endpoint: one
token for many requests, a short-lived one refreshed before it expires by one fetch that
concurrent requests share, a revoked one replaced, a wrong secret or missing settings
said clearly (and the secret never in a message)."""

from __future__ import annotations

import asyncio

import openai
import pytest

from gateway_azure.channel import entra_credentials
from gateway_azure.entra import check_authority
from gateway_core import ChannelRecord, UpstreamError

CHAT = "gpt-4o-mini"


def entra_settings(entra, **more):
    return {"auth": "entra_id", "tenant_id": entra.tenant, "client_id": entra.client_id, "authority": entra.url, **more}


@pytest.fixture
def gateway_key(seed, azure, entra):
    _, secret = seed.key(seed.user("alice"))
    seed.channel("az", type="azure", base_url=azure.url, api_keys=[entra.client_secret], models=[CHAT],
                 model_map={CHAT: "chat-dep"}, settings=entra_settings(entra))  # fmt: skip
    return secret


@pytest.fixture
def client(start_gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)


async def ask(client, text="hi"):
    answer = await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": text}])
    return answer.choices[0].message.content


def bearer(request) -> str:
    assert "api-key" not in request["headers"]
    return request["headers"]["Authorization"].removeprefix("Bearer ")


async def test_one_token_serves_many_requests(client, azure, entra):
    assert await ask(client, "one") == "echo: one"
    assert await ask(client, "two") == "echo: two"
    assert len(entra.requests) == 1
    form = entra.requests[0]
    assert form["path"] == f"/{entra.tenant}/oauth2/v2.0/token"
    assert form["body"] == {"grant_type": "client_credentials", "client_id": entra.client_id, "client_secret": "<secret>",
                            "scope": "https://cognitiveservices.azure.com/.default"}  # fmt: skip
    assert bearer(azure.requests[0]) == bearer(azure.requests[1]) and entra.valid(bearer(azure.requests[0]))


async def test_a_short_lived_token_is_refreshed_before_expiry_by_one_shared_fetch(client, azure, entra):
    entra.lifetime, entra.answer_delay = 2, 0.3  # refreshed after half its life; the fetch slow enough to overlap
    assert await ask(client) == "echo: hi"
    first = bearer(azure.requests[-1])
    await asyncio.sleep(1.2)  # past the refresh point, before the token's end: still valid upstream
    assert entra.valid(first)
    answers = await asyncio.gather(ask(client, "a"), ask(client, "b"))
    assert sorted(answers) == ["echo: a", "echo: b"]
    assert len(entra.requests) == 2  # two requests, one refresh
    second, third = bearer(azure.requests[-2]), bearer(azure.requests[-1])
    assert second == third != first
    await asyncio.sleep(2.2)  # the new token ended too
    assert not entra.valid(second)
    assert await ask(client, "later") == "echo: later" and len(entra.requests) == 3


async def test_a_revoked_token_is_replaced_and_the_secret_stays_in_rotation(client, azure, entra, seed):
    assert await ask(client) == "echo: hi"
    entra.issued.clear()  # every token revoked: Azure answers 401
    try:
        await ask(client, "after")  # the relay may try again at once, with a new token
    except openai.APIStatusError as failed:
        assert failed.status_code == 502
    assert await ask(client, "again") == "echo: again"
    assert len(entra.requests) == 2
    (channel,) = seed.rows("SELECT * FROM channels")
    assert channel["disabled_keys"] in (None, "", "[]")


async def test_a_wrong_client_secret_is_said_without_the_secret(seed, azure, entra, start_gateway, gateway_key):
    seed.channel("az-wrong", type="azure", base_url=azure.url, api_keys=["not-the-secret-42"], models=["wrong"],
                 model_map={"wrong": "chat-dep"}, settings=entra_settings(entra))  # fmt: skip
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=gateway_key, max_retries=0)
    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(model="wrong", messages=[{"role": "user", "content": "x"}])
    message = failed.value.body["message"]
    assert failed.value.status_code == 502
    assert "Microsoft Entra ID refused the channel's credentials (401): invalid_client: AADSTS7000215: Invalid client secret" in message
    assert "not-the-secret-42" not in message and "Trace ID" not in message
    assert azure.requests == []


def credentials_of(**settings):
    channel = ChannelRecord(id=1, name="az", type="azure", base_url="https://x.openai.azure.com", api_keys=("s3cret",),
                            models=("m",), model_map={}, groups=("default",), settings=settings)  # fmt: skip
    return entra_credentials(channel, "s3cret")


def test_entra_settings_are_checked_before_any_call():
    assert credentials_of() is None  # auth=api_key
    with pytest.raises(UpstreamError, match="its setting tenant_id and client_id is not set"):
        credentials_of(auth="entra_id")
    with pytest.raises(UpstreamError, match="authority must be an https URL"):
        credentials_of(auth="entra_id", tenant_id="t", client_id="c", authority="http://login.example.com")
    credentials = credentials_of(auth="entra_id", tenant_id="my tenant", client_id="c")
    assert credentials is not None and "s3cret" not in repr(credentials)
    assert credentials.token_url == "https://login.microsoftonline.com/my%20tenant/oauth2/v2.0/token"
    assert check_authority("http://127.0.0.1:8123") is None and check_authority("https://login.microsoftonline.us") is None
