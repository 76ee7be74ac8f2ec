"""``/v1/rerank`` (the Cohere/Jina shape) over real HTTP with ``httpx``, to ``rerank``
channels whose fake upstream answers in Jina's shape (``/v1/rerank``, ``usage``) and
in Cohere's (``/v2/rerank``, ``meta.billed_units``): what reaches the upstream,
what comes back, the usage row, and the errors in OpenAI's shape."""

from __future__ import annotations

import aiohttp
import httpx2 as httpx
import pytest

from gateway_core.routing.probe import probe_channel
from gateway_core.records import ChannelRecord
from gateway_openai.channel_rerank import RerankChannel
from gateway_openai.fake_upstream import Fault

JINA, JINA_UP = "jina-reranker", "jina-reranker-v2-base-multilingual"
COHERE, COHERE_UP = "cohere-reranker", "rerank-v3.5"
GPT, CLAUDE = "gpt-test", "claude-test"
DOCUMENTS = ["Berlin is the capital of Germany.", "Paris is the capital of France.", "Bananas are yellow."]


@pytest.fixture
def gateway_key(seed, upstream):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("jina", type="rerank", base_url=upstream.url + "/v1", models=[JINA], model_map={JINA: JINA_UP})
    seed.channel("cohere", type="rerank", base_url=upstream.url, models=[COHERE], model_map={COHERE: COHERE_UP},
                 settings={"path": "/v2/rerank"})  # fmt: skip
    seed.channel("oai", type="openai", base_url=upstream.url, models=[GPT])
    seed.channel("claude", type="anthropic", base_url="http://127.0.0.1:9", models=[CLAUDE])
    return secret


@pytest.fixture
async def client(start_gateway, gateway_key):
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": f"Bearer {gateway_key}"}, timeout=30) as client:
        yield client


def last_row(seed) -> dict:
    return seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]


async def test_rerank_in_jinas_shape(client, upstream, gateway_key, seed):
    body = {"model": JINA, "query": "capital of France", "documents": DOCUMENTS, "top_n": 2, "truncation": True}
    response = await client.post("/v1/rerank", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [r["index"] for r in answer["results"]] == [1, 0]
    assert answer["results"][0]["document"] == {"text": DOCUMENTS[1]}
    assert answer["results"][0]["relevance_score"] > answer["results"][1]["relevance_score"]
    received = upstream.requests[-1]
    assert received["path"] == "/v1/rerank" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert received["body"] == {**body, "model": JINA_UP}  # every field as sent, the model mapped
    assert gateway_key not in str(received["headers"])
    row = last_row(seed)
    assert (row["endpoint"], row["protocol"], row["model"], row["upstream_model"], row["channel_name"], row["status"]) == (
        "rerank", "openai", JINA, JINA_UP, "jina", 200,
    )  # fmt: skip
    assert (row["input_tokens"], row["output_tokens"], row["estimated"]) == (answer["usage"]["total_tokens"], 0, 0)


async def test_rerank_of_document_objects_without_documents_returned(client, upstream):
    documents = [{"text": d} for d in DOCUMENTS]
    response = await client.post("/v1/rerank", json={"model": JINA, "query": "yellow fruit", "documents": documents, "return_documents": False})
    results = response.json()["results"]
    assert results[0]["index"] == 2 and all("document" not in r for r in results) and len(results) == 3
    assert upstream.requests[-1]["body"]["documents"] == documents


async def test_rerank_in_cohere_shape_is_estimated_from_its_texts(client, upstream, seed):
    body = {"model": COHERE, "query": "capital of Germany", "documents": DOCUMENTS}
    response = await client.post("/v1/rerank", json=body)
    answer = response.json()
    assert answer["results"][0]["index"] == 0 and answer["meta"]["billed_units"] == {"search_units": 1}
    assert upstream.requests[-1]["path"] == "/v2/rerank" and upstream.requests[-1]["body"]["model"] == COHERE_UP
    row = last_row(seed)
    chars = len("capital of Germany") + sum(len(d) for d in DOCUMENTS)
    assert (row["upstream_model"], row["input_tokens"], row["output_tokens"], row["estimated"]) == (COHERE_UP, -(-chars // 4), 0, 1)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"query": "q", "documents": ["a"]}, "model"),
        ({"model": JINA, "documents": ["a"]}, "query"),
        ({"model": JINA, "query": "", "documents": ["a"]}, "query"),
        ({"model": JINA, "query": "q"}, "documents"),
        ({"model": JINA, "query": "q", "documents": []}, "documents"),
        ({"model": JINA, "query": "q", "documents": [{"content": "a"}]}, "documents"),
        ({"model": JINA, "query": "q", "documents": ["a", 3]}, "documents"),
        ({"model": JINA, "query": "q", "documents": ["a"], "top_n": 0}, "top_n"),
        ({"model": JINA, "query": "q", "documents": ["a"], "return_documents": "yes"}, "return_documents"),
    ],
)
async def test_bad_bodies_are_400s_in_openai_shape(client, upstream, body, param):
    response = await client.post("/v1/rerank", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert upstream.requests == []


async def test_not_json_is_a_400(client):
    response = await client.post("/v1/rerank", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"


async def test_unknown_model_and_models_without_a_rerank_channel(client, upstream):
    response = await client.post("/v1/rerank", json={"model": "nobody-knows", "query": "q", "documents": ["a"]})
    assert response.status_code == 400 and response.json()["error"]["code"] == "model_not_found"
    for model in (GPT, CLAUDE):  # openai channels have no rerank (OpenAI has none); nor have anthropic ones
        response = await client.post("/v1/rerank", json={"model": model, "query": "q", "documents": ["a"]})
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["code"] == "unsupported_endpoint" and "'rerank'" in error["message"]
    assert upstream.requests == []


async def test_upstream_errors_come_back_in_openai_shape(client, upstream, seed):
    upstream.fail_next(Fault(status=422, body={"detail": "documents: too many documents"}))
    response = await client.post("/v1/rerank", json={"model": JINA, "query": "q", "documents": ["a"]})
    assert response.status_code == 400 and "too many documents" in response.json()["error"]["message"]
    upstream.fail_next(Fault(status=500), Fault(status=500), Fault(status=500))
    response = await client.post("/v1/rerank", json={"model": JINA, "query": "q", "documents": ["a"]})
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_error"
    assert last_row(seed)["status"] == 502


def test_the_rerank_channel_type_serves_rerank_only_and_stores_its_base_url_without_v1():
    channel = RerankChannel()
    assert channel.wire("rerank") == "rerank"
    assert [e for e in ("chat", "embeddings", "completions", "moderations") if channel.wire(e)] == []
    assert channel.normalize_base_url("https://api.jina.ai/v1/") == "https://api.jina.ai"


async def test_a_gemini_client_asking_to_rerank_gets_a_404_in_its_own_shape(client, gateway_key):
    response = await client.post(f"/v1beta/models/{JINA}:rerank", json={"query": "q"}, headers={"x-goog-api-key": gateway_key})
    assert response.status_code == 404
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (404, "NOT_FOUND")


async def test_the_channel_test_sends_a_small_rerank(upstream):
    channel = ChannelRecord(id=1, name="jina", type="rerank", base_url=upstream.url, api_keys=("sk-upstream-test",),
                            models=(JINA,), model_map={JINA: JINA_UP}, groups=("default",))  # fmt: skip
    async with aiohttp.ClientSession() as session:
        result = await probe_channel(RerankChannel(), session, channel)
    assert result.ok and result.status == 200, result.message
    assert upstream.requests[-1]["path"] == "/v1/rerank"
    assert upstream.requests[-1]["body"] == {"model": JINA_UP, "query": "ping", "documents": ["ping"]}
