"""``POST /v1/embeddings`` through the official ``openai`` SDK over real HTTP: the fast
path to an openai channel (``encoding_format`` passed through) and conversion to a
gemini channel (``batchEmbedContents``), floats and base64 alike."""

from __future__ import annotations

import base64
import struct

import aiohttp
import openai
import pytest

from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.embeddings import decode_base64, encode_base64

EMBED, EMBED_UP = "text-embed", "text-embedding-3-small"
GEMINI_EMBED, GEMINI_EMBED_UP = "gemini-embed", "gemini-embedding-001"
CLAUDE = "claude-test"


@pytest.fixture
async def google(fake_upstream):
    return await fake_upstream(FakeGemini())


@pytest.fixture
def gateway_key(seed, upstream, google):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("oai", type="openai", base_url=upstream.url, models=[EMBED], model_map={EMBED: EMBED_UP})
    seed.channel("google", type="gemini", base_url=google.url, models=[GEMINI_EMBED], model_map={GEMINI_EMBED: GEMINI_EMBED_UP})
    seed.channel("claude", type="anthropic", base_url="http://127.0.0.1:9", models=[CLAUDE])
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
def client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


def expected(text: str, size: int = 8) -> list[float]:
    """The fake upstreams' vector for a text (see their ``embeddings``)."""
    return [round((len(text) + i) / 100.0, 4) for i in range(size)]


async def test_float_embeddings_on_the_fast_path(client, upstream, seed):
    result = await client.embeddings.create(model=EMBED, input=["one", "three"], encoding_format="float", dimensions=4)
    assert [d.embedding for d in result.data] == [expected("one", 4), expected("three", 4)]
    assert result.usage.prompt_tokens == 3
    received = upstream.requests[-1]
    assert received["path"] == "/v1/embeddings" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert received["body"] == {"model": EMBED_UP, "input": ["one", "three"], "encoding_format": "float", "dimensions": 4}
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["upstream_model"], row["input_tokens"], row["output_tokens"], row["estimated"]) == (
        "embeddings", EMBED_UP, 3, 0, 0)


async def test_base64_default_of_the_sdk_passes_through(client, upstream):
    result = await client.embeddings.create(model=EMBED, input="hello")  # the SDK asks base64 and decodes it
    assert upstream.requests[-1]["body"]["encoding_format"] == "base64"
    assert result.data[0].embedding == pytest.approx(expected("hello"), rel=1e-6)


async def test_token_arrays_pass_through(client, upstream):
    result = await client.embeddings.create(model=EMBED, input=[[1, 2, 3], [4, 5]], encoding_format="float")
    assert len(result.data) == 2
    assert upstream.requests[-1]["body"]["input"] == [[1, 2, 3], [4, 5]]


@pytest.mark.parametrize("encoding", ["float", "base64"])
async def test_gemini_channel_through_conversion(client, google, seed, encoding):
    kwargs = {"encoding_format": "float"} if encoding == "float" else {}
    result = await client.embeddings.create(model=GEMINI_EMBED, input=["alpha", "be"], dimensions=5, **kwargs)
    assert [d.index for d in result.data] == [0, 1] and result.model == GEMINI_EMBED
    assert [d.embedding for d in result.data] == [pytest.approx(expected("alpha", 5), rel=1e-6), pytest.approx(expected("be", 5), rel=1e-6)]
    received = google.requests[-1]
    assert received["method"] == "batchEmbedContents" and received["model"] == GEMINI_EMBED_UP
    assert received["headers"]["x-goog-api-key"] == "sk-upstream-test"
    assert received["body"]["requests"][0] == {"model": f"models/{GEMINI_EMBED_UP}", "content": {"parts": [{"text": "alpha"}]}, "outputDimensionality": 5}
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["channel_name"], row["endpoint"], row["input_tokens"]) == ("google", "embeddings", result.usage.prompt_tokens)
    assert row["input_tokens"] > 0 and row["estimated"] == 1  # the channel's own count: Gemini reports none


async def test_gemini_answer_in_base64_is_float32_little_endian(gateway, gateway_key):
    async with aiohttp.ClientSession() as http:
        body = {"model": GEMINI_EMBED, "input": "abc", "encoding_format": "base64"}
        async with http.post(gateway.url + "/v1/embeddings", json=body, headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            data = (await response.json())["data"][0]["embedding"]
    assert isinstance(data, str)
    raw = base64.b64decode(data)
    assert list(struct.unpack("<8f", raw)) == pytest.approx(expected("abc"), rel=1e-6)
    assert decode_base64(encode_base64([0.5, -1.0])) == [0.5, -1.0]


async def test_token_arrays_cannot_cross_to_gemini(client):
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model=GEMINI_EMBED, input=[[1, 2]])
    assert "Token-id input" in caught.value.message


async def test_embeddings_for_a_chat_only_model_are_404_unsupported(client):
    with pytest.raises(openai.NotFoundError) as caught:
        await client.embeddings.create(model=CLAUDE, input="x")
    assert caught.value.code == "unsupported_endpoint"
    assert "not available for the model 'claude-test'" in caught.value.message


@pytest.mark.parametrize("body", [{"model": EMBED}, {"model": EMBED, "input": []}, {"model": EMBED, "input": [1, "a"]},
                                  {"model": EMBED, "input": "x", "encoding_format": "hex"}, {"model": EMBED, "input": "x", "dimensions": 0}])  # fmt: skip
async def test_malformed_embedding_requests_are_400(gateway, gateway_key, body):
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/embeddings", json=body, headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            assert response.status == 400
