"""The fake Vertex AI and the fake Google token endpoint, proven with the official clients
before any gateway is involved: ``google.genai.Client(vertexai=True)`` with service-account
credentials (google-auth signs the assertion the fake OAuth server verifies) for Gemini,
``anthropic.AnthropicVertex`` for Claude; a token the fake did not mint is refused as
Vertex refuses it."""

from __future__ import annotations

import asyncio

import anthropic
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from google.oauth2 import service_account

from .fake_vertex import PROJECT, SCOPE

LOCATION = "us-central1"
GEMINI, CLAUDE = "gemini-2.5-flash", "claude-sonnet-4-5@20250929"


def genai_client(vertex, oauth, account) -> genai.Client:
    credentials = service_account.Credentials.from_service_account_info(account.info(oauth.token_uri), scopes=[SCOPE])
    return genai.Client(vertexai=True, project=PROJECT, location=LOCATION, credentials=credentials,
                        http_options=types.HttpOptions(base_url=vertex.url, api_version="v1"))  # fmt: skip


async def test_google_genai_generates_and_streams_on_the_fake(vertex, oauth, account):
    client = genai_client(vertex, oauth, account).aio
    answer = await client.models.generate_content(model=GEMINI, contents="hello vertex")
    assert answer.text == "echo: hello vertex"
    assert answer.usage_metadata.candidates_token_count == 3
    sent = vertex.requests[-1]
    assert sent["path"] == f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/{GEMINI}:generateContent"
    assert len(oauth.requests) == 1 and oauth.requests[0]["body"]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"

    chunks = [c async for c in await client.models.generate_content_stream(model=GEMINI, contents="one two three")]
    assert "".join(c.text or "" for c in chunks) == "echo: one two three" and len(chunks) == 4
    assert vertex.requests[-1]["path"].endswith(f"{GEMINI}:streamGenerateContent?alt=sse")
    counted = await client.models.count_tokens(model=GEMINI, contents="count me")
    assert counted.total_tokens > 0


async def test_a_token_the_fake_did_not_mint_is_refused(vertex, oauth, account):
    client = anthropic.AsyncAnthropicVertex(region=LOCATION, project_id=PROJECT, base_url=vertex.url + "/v1", access_token="ya29.not-minted", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as refused:
        await client.messages.create(model=CLAUDE, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.body["error"]["status"] == "UNAUTHENTICATED"


async def test_a_wrongly_signed_assertion_is_refused(vertex, oauth, account):
    import asyncio

    import google.auth.exceptions
    import google.auth.transport.requests
    from cryptography.hazmat.primitives.asymmetric import rsa

    from .fake_vertex import ServiceAccount

    impostor = ServiceAccount(rsa.generate_private_key(public_exponent=65537, key_size=2048), email=account.email)
    credentials = service_account.Credentials.from_service_account_info(impostor.info(oauth.token_uri), scopes=[SCOPE])
    with pytest.raises(google.auth.exceptions.RefreshError, match="invalid_grant: Invalid JWT Signature"):
        await asyncio.to_thread(credentials.refresh, google.auth.transport.requests.Request())
    assert oauth.issued == {} and vertex.requests == []


async def test_anthropic_vertex_messages_and_stream_on_the_fake(vertex, oauth, account):
    credentials = service_account.Credentials.from_service_account_info(account.info(oauth.token_uri), scopes=[SCOPE])
    import google.auth.transport.requests

    await asyncio.to_thread(credentials.refresh, google.auth.transport.requests.Request())  # the client takes a ready token
    client = anthropic.AsyncAnthropicVertex(region=LOCATION, project_id=PROJECT, base_url=vertex.url + "/v1", access_token=credentials.token, max_retries=0)
    message = await client.messages.create(model=CLAUDE, max_tokens=50, messages=[{"role": "user", "content": "bonjour"}])
    assert message.content[0].text == "echo: bonjour" and message.stop_reason == "end_turn"
    sent = vertex.requests[-1]
    assert sent["path"] == f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/anthropic/models/{CLAUDE}:rawPredict"
    assert sent["body"]["anthropic_version"] and "model" not in sent["body"]  # the SDK's own version string

    async with client.messages.stream(model=CLAUDE, max_tokens=50, messages=[{"role": "user", "content": "a b c"}]) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == "echo: a b c" and final.usage.output_tokens == 4
    assert vertex.requests[-1]["path"].endswith(f"{CLAUDE}:streamRawPredict")

    vertex.claude.tool_uses = [{"id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]
    tool = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    message = await client.messages.create(model=CLAUDE, max_tokens=50, tools=[tool], messages=[{"role": "user", "content": "weather?"}])
    assert (message.stop_reason, message.content[0].name, message.content[0].input) == ("tool_use", "get_weather", {"city": "Paris"})


async def test_vertex_errors_reach_the_genai_client_in_their_shape(vertex, oauth, account):
    from gateway_core.testing import Fault

    client = genai_client(vertex, oauth, account).aio
    vertex.fail_next(Fault(status=429))
    with pytest.raises(genai_errors.ClientError) as limited:
        await client.models.generate_content(model=GEMINI, contents="x")
    assert (limited.value.code, limited.value.status) == (429, "RESOURCE_EXHAUSTED")


async def test_google_genai_embeds_through_predict_on_the_fake(vertex, oauth, account):
    client = genai_client(vertex, oauth, account).aio
    result = await client.models.embed_content(model="text-embedding-005", contents=["ab", "xyz"], config=types.EmbedContentConfig(output_dimensionality=4))
    assert [e.values for e in result.embeddings] == [[2.0, 97.0, 98.0, 0.0], [3.0, 120.0, 121.0, 122.0]]
    assert result.embeddings[0].statistics.token_count == 1
    sent = vertex.requests[-1]
    assert sent["path"] == f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/text-embedding-005:predict"
    assert sent["body"]["instances"][0]["content"] == "ab" and sent["body"]["parameters"]["outputDimensionality"] == 4
