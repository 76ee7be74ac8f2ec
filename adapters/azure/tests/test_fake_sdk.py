"""The fake Azure resource and Entra ID endpoint proven with the official clients, before
any gateway is involved: ``openai.AzureOpenAI`` / ``AsyncAzureOpenAI`` on the deployments
paths (chat, a stream, embeddings, the api-version checked, Azure's errors, a
content-filter refusal, a bearer token from the fake Entra ID), and ``openai.OpenAI`` on
the v1 paths as Microsoft documents it (openai 3.x's Azure client routes chat and
embeddings to deployment paths whatever its base URL)."""

from __future__ import annotations

import asyncio

import aiohttp
import openai
import pytest

from .fake_azure import AZURE_KEY, BLOCKED, CUT

VERSION = "2024-10-21"


def deployments_client(azure, **kwargs) -> openai.AsyncAzureOpenAI:
    options = {"api_key": AZURE_KEY, "api_version": VERSION, **kwargs}
    return openai.AsyncAzureOpenAI(azure_endpoint=azure.url, max_retries=0, **options)


async def test_chat_on_deployment_paths(azure):
    answer = await deployments_client(azure).chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "hello"}])
    assert answer.choices[0].message.content == "echo: hello"
    assert answer.model == "gpt-4o-mini-2024-07-18" and answer.usage.prompt_tokens > 0
    sent = azure.requests[-1]
    assert sent["path"] == f"/openai/deployments/chat-dep/chat/completions?api-version={VERSION}"
    assert sent["headers"]["api-key"] == AZURE_KEY and "Authorization" not in sent["headers"]


async def test_a_stream_with_azure_filter_chunks(azure):
    stream = await deployments_client(azure).chat.completions.create(
        model="chat-dep", messages=[{"role": "user", "content": "one two"}], stream=True, stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert chunks[0].choices == [] and chunks[0].prompt_filter_results[0]["prompt_index"] == 0
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: one two"
    assert chunks[-1].usage.completion_tokens == 3


async def test_embeddings_on_deployment_paths_with_the_sync_client(azure):
    client = openai.AzureOpenAI(azure_endpoint=azure.url, api_key=AZURE_KEY, api_version=VERSION, max_retries=0)
    result = await asyncio.to_thread(client.embeddings.create, model="embed-dep", input=["abc"], encoding_format="float")
    assert len(result.data[0].embedding) == 8 and result.model == "text-embedding-3-small"
    assert azure.requests[-1]["path"] == f"/openai/deployments/embed-dep/embeddings?api-version={VERSION}"


async def test_v1_paths_with_openais_own_client(azure):
    client = openai.AsyncOpenAI(base_url=azure.url + "/openai/v1/", api_key=AZURE_KEY, max_retries=0)
    answer = await client.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "echo: hi"
    assert azure.requests[-1]["path"] == "/openai/v1/chat/completions"
    stream = await client.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "a b"}], stream=True)
    assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == "echo: a b"
    result = await client.embeddings.create(model="embed-dep", input="x", encoding_format="float")
    assert len(result.data[0].embedding) == 8 and azure.requests[-1]["path"] == "/openai/v1/embeddings"
    refused = openai.AsyncOpenAI(base_url=azure.url + "/openai/v1/", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        await refused.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "hi"}])


async def test_the_api_version_is_required_and_checked(azure):
    with pytest.raises(openai.BadRequestError) as refused:
        await deployments_client(azure, api_version="2099-01-01").chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "x"}])
    assert refused.value.body == {"code": "BadRequest", "message": "API version not supported"}
    async with aiohttp.ClientSession() as session:  # no api-version at all: Azure's 404
        async with session.post(azure.url + "/openai/deployments/chat-dep/chat/completions", json={"messages": []}, headers={"api-key": AZURE_KEY}) as response:
            assert response.status == 404 and (await response.json()) == {"error": {"code": "404", "message": "Resource not found"}}


async def test_azures_errors(azure):
    with pytest.raises(openai.AuthenticationError) as wrong_key:
        await deployments_client(azure, api_key="nope").chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "x"}])
    assert wrong_key.value.body["code"] == "401"
    with pytest.raises(openai.NotFoundError) as missing:
        await deployments_client(azure).chat.completions.create(model="no-such-dep", messages=[{"role": "user", "content": "x"}])
    assert missing.value.body["code"] == "DeploymentNotFound"


async def test_content_filter_refusal_and_filtered_output(azure):
    client = deployments_client(azure)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": f"tell me about {BLOCKED}"}])
    assert refused.value.code == "content_filter" and refused.value.param == "prompt"
    assert refused.value.body["innererror"]["content_filter_result"]["violence"] == {"filtered": True, "severity": "medium"}
    answer = await client.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": CUT}])
    assert answer.choices[0].finish_reason == "content_filter" and answer.choices[0].message.content is None
    stream = await client.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": CUT}], stream=True)
    last = [c async for c in stream if c.choices][-1]
    assert last.choices[0].finish_reason == "content_filter"
    assert last.choices[0].model_extra["content_filter_results"]["violence"]["filtered"] is True


async def test_entra_id_tokens_with_the_azure_clients_token_provider(azure, entra):
    async with aiohttp.ClientSession() as session:
        form = {"grant_type": "client_credentials", "client_id": entra.client_id, "client_secret": entra.client_secret, "scope": entra.scope}
        async with session.post(f"{entra.url}/{entra.tenant}/oauth2/v2.0/token", data=form) as response:
            token = (await response.json())["access_token"]
        async with session.post(f"{entra.url}/{entra.tenant}/oauth2/v2.0/token", data={**form, "client_secret": "wrong"}) as response:
            refusal = await response.json()
    assert response.status == 401 and refusal["error"] == "invalid_client" and refusal["error_description"].startswith("AADSTS7000215")

    async def provider() -> str:
        return token

    client = openai.AsyncAzureOpenAI(azure_endpoint=azure.url, azure_ad_token_provider=provider, api_version=VERSION, max_retries=0)
    answer = await client.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "token"}])
    assert answer.choices[0].message.content == "echo: token"
    assert azure.requests[-1]["headers"]["Authorization"] == f"Bearer {token}"
    entra.issued[token] = 0.0  # expired
    with pytest.raises(openai.AuthenticationError) as expired:
        await client.chat.completions.create(model="chat-dep", messages=[{"role": "user", "content": "token"}])
    assert "expired" in expired.value.body["message"]
