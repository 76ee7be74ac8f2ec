"""The Gemini routes over raw HTTP: key places, shared paths, the streamed JSON array,
SSE framing, errors in Google's shape."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import orjson
import pytest

from gateway_gemini.fake_upstream import Fault

# the models the conftest's channels serve
GEMINI_MODEL = "gemini-test"
OPENAI_MODEL = "gpt-test"


BODY = {"contents": [{"role": "user", "parts": [{"text": "w1 w2 w3 w4"}]}]}


async def post(url: str, body=BODY, headers=None):
    async with aiohttp.ClientSession() as http:
        async with http.post(url, data=orjson.dumps(body) if not isinstance(body, bytes) else body, headers=headers or {}) as response:
            return response.status, response.headers, await response.read()


@pytest.mark.parametrize("version", ["v1beta", "v1"])
@pytest.mark.parametrize("model", [GEMINI_MODEL, OPENAI_MODEL])
async def test_streamed_json_array_without_alt_sse(gateway, gateway_key, version, model):
    url = f"{gateway.url}/{version}/models/{model}:streamGenerateContent"
    status, _, data = await post(url, headers={"x-goog-api-key": gateway_key})
    assert status == 200
    chunks = orjson.loads(data)
    assert isinstance(chunks, list) and len(chunks) > 1
    assert "".join(p.get("text", "") for c in chunks for p in c["candidates"][0].get("content", {}).get("parts", [])) == "echo: w1 w2 w3 w4"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert "usageMetadata" in chunks[-1]


@pytest.mark.parametrize("model", [GEMINI_MODEL, OPENAI_MODEL])
async def test_sse_frames_are_googles(gateway, gateway_key, model):
    url = f"{gateway.url}/v1beta/models/{model}:streamGenerateContent?alt=sse"
    status, headers, data = await post(url, headers={"x-goog-api-key": gateway_key})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    frames = [f for f in data.split(b"\r\n\r\n") if f]
    assert all(f.startswith(b"data: {") for f in frames)
    assert orjson.loads(frames[-1][6:])["candidates"][0]["finishReason"] == "STOP"


async def test_json_array_chunks_go_out_as_they_arrive(gateway, gateway_key, gemini_upstream):
    gemini_upstream.chunk_delay = 0.3
    started = time.monotonic()
    first_at = None
    async with aiohttp.ClientSession() as http:
        url = f"{gateway.url}/v1beta/models/{GEMINI_MODEL}:streamGenerateContent"
        async with http.post(url, data=orjson.dumps(BODY), headers={"x-goog-api-key": gateway_key}) as response:
            data = b""
            async for piece in response.content.iter_any():
                if first_at is None and piece.strip():
                    first_at = time.monotonic() - started
                data += piece
    assert time.monotonic() - started > 1.0
    assert first_at is not None and first_at < 0.5
    assert data.startswith(b"[") and data.endswith(b"]")


@pytest.mark.parametrize("where", ["header", "query", "bearer"])
async def test_key_in_every_place(gateway, gateway_key, where):
    url = f"{gateway.url}/v1beta/models/{GEMINI_MODEL}:generateContent"
    headers = {"x-goog-api-key": gateway_key} if where == "header" else {"Authorization": f"Bearer {gateway_key}"} if where == "bearer" else {}
    if where == "query":
        url += f"?key={gateway_key}"
    status, _, data = await post(url, headers=headers)
    assert status == 200, data
    assert orjson.loads(data)["candidates"][0]["content"]["parts"][0]["text"] == "echo: w1 w2 w3 w4"


async def test_missing_key_is_unauthenticated_in_googles_shape(gateway):
    status, _, data = await post(f"{gateway.url}/v1beta/models/{GEMINI_MODEL}:generateContent")
    error = orjson.loads(data)["error"]
    assert status == 401 and (error["code"], error["status"]) == (401, "UNAUTHENTICATED")
    assert "x-goog-api-key" in error["message"]


async def test_get_v1_models_answers_each_protocol_in_its_shape(gateway, gateway_key):
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{gateway.url}/v1/models", headers={"x-goog-api-key": gateway_key}) as response:
            gemini = await response.json()
        async with http.get(f"{gateway.url}/v1/models?key={gateway_key}") as response:
            by_query = await response.json()
        async with http.get(f"{gateway.url}/v1/models", headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            openai_shape = await response.json()
    assert f"models/{GEMINI_MODEL}" in [m["name"] for m in gemini["models"]]
    assert by_query == gemini
    assert openai_shape["object"] == "list" and GEMINI_MODEL in [m["id"] for m in openai_shape["data"]]


async def test_models_paging_tokens(gateway, gateway_key):
    headers = {"x-goog-api-key": gateway_key}
    seen, token = [], None
    async with aiohttp.ClientSession() as http:
        for _ in range(5):
            query = "?pageSize=1" + (f"&pageToken={token}" if token else "")
            async with http.get(f"{gateway.url}/v1beta/models{query}", headers=headers) as response:
                page = await response.json()
            seen += [m["name"] for m in page["models"]]
            token = page.get("nextPageToken")
            if not token:
                break
        async with http.get(f"{gateway.url}/v1beta/models?pageToken=%%%", headers=headers) as response:
            assert response.status == 400 and (await response.json())["error"]["status"] == "INVALID_ARGUMENT"
    assert len(seen) == 3 and seen == sorted(seen)


async def test_unknown_method_and_path_are_404_in_googles_shape(gateway, gateway_key):
    for path in ("/v1beta/models/x:fooContent", "/v1beta/nothing"):
        status, _, data = await post(gateway.url + path, headers={"x-goog-api-key": gateway_key})
        assert status == 404, path
        assert orjson.loads(data)["error"]["status"] == "NOT_FOUND"


async def test_model_id_matches_exactly(gateway, gateway_key):
    status, _, data = await post(f"{gateway.url}/v1beta/models/{GEMINI_MODEL.upper()}:generateContent", headers={"x-goog-api-key": gateway_key})
    error = orjson.loads(data)["error"]
    assert status == 400 and error["status"] == "INVALID_ARGUMENT" and GEMINI_MODEL.upper() in error["message"]


@pytest.mark.parametrize("body", [b"{not json", b"[]", b"", orjson.dumps({"contents": []}), orjson.dumps({"contents": [{"role": "robot", "parts": [{"text": "x"}]}]})])
async def test_malformed_bodies_are_invalid_argument(gateway, gateway_key, body):
    for model in (GEMINI_MODEL, OPENAI_MODEL):
        status, _, data = await post(f"{gateway.url}/v1beta/models/{model}:generateContent", body=body, headers={"x-goog-api-key": gateway_key})
        if model == GEMINI_MODEL and body.startswith(b'{"contents":[{"role":"robot"'):
            continue  # the fast path leaves judging the roles to Google
        assert status == 400, (model, body)
        assert orjson.loads(data)["error"]["status"] == "INVALID_ARGUMENT"


async def test_stream_dropped_mid_way_ends_with_an_error_chunk(gateway, gateway_key, gemini_upstream, seed):
    gemini_upstream.fail_next(Fault(drop_after=2))
    status, _, data = await post(f"{gateway.url}/v1beta/models/{GEMINI_MODEL}:streamGenerateContent", headers={"x-goog-api-key": gateway_key})
    chunks = orjson.loads(data)
    assert status == 200 and "error" in chunks[-1] and chunks[-1]["error"]["code"] == 502
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert row["end_reason"] == "upstream_error"


async def test_candidate_count_above_one_is_refused_across_protocols(gateway, gateway_key):
    body = {**BODY, "generationConfig": {"candidateCount": 2}}
    status, _, data = await post(f"{gateway.url}/v1beta/models/{OPENAI_MODEL}:generateContent", body=body, headers={"x-goog-api-key": gateway_key})
    assert status == 400 and "candidateCount" in orjson.loads(data)["error"]["message"]


async def test_client_disconnect_cancels_the_upstream_stream(gateway, gateway_key, gemini_upstream, seed):
    gemini_upstream.chunk_delay = 0.2
    body = {"contents": [{"parts": [{"text": " ".join(["w"] * 40)}]}]}
    async with aiohttp.ClientSession() as http:
        url = f"{gateway.url}/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse"
        response = await http.post(url, data=orjson.dumps(body), headers={"x-goog-api-key": gateway_key})
        await response.content.readany()
        response.close()
    for _ in range(50):
        rows = seed.rows("SELECT * FROM usage_logs")
        if rows:
            break
        await asyncio.sleep(0.1)
    assert rows[-1]["end_reason"] == "client_gone" and rows[-1]["duration_ms"] < 3000


async def test_other_clients_do_not_get_gemini_model_objects_on_v1(gateway, gateway_key):
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{gateway.url}/v1/models/{GEMINI_MODEL}", headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            assert response.status == 200 and await response.json() == {"id": GEMINI_MODEL, "object": "model", "created": 0, "owned_by": "relaygate"}  # OpenAI's
        async with http.get(f"{gateway.url}/v1/models/{GEMINI_MODEL}", headers={"x-goog-api-key": gateway_key}) as response:
            assert response.status == 200 and (await response.json())["name"] == f"models/{GEMINI_MODEL}"
