"""``/v1/images/generations`` and ``/v1/images/edits`` through the official ``openai``
SDK over real HTTP: answers passed through, uploads streamed to the upstream with
their fields intact and the model mapped, size-limited (413), billed per image."""

from __future__ import annotations

import asyncio
import hashlib

import aiohttp
import openai
import pytest

from gateway_core.config import Config
from gateway_openai.fake_media import PNG_1PX

IMAGE, IMAGE_UP = "image-model", "gpt-image-1"
DALLE = "dall-e-3"
CLAUDE = "claude-test"
LIMIT = 64 * 1024


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), plugins={"openai": {"max_upload_bytes": LIMIT}})


@pytest.fixture
def gateway_key(seed, upstream):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("oai", type="openai", base_url=upstream.url, models=[IMAGE, DALLE], model_map={IMAGE: IMAGE_UP})
    seed.channel("claude", type="anthropic", base_url="http://127.0.0.1:9", models=[CLAUDE])
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
def client(gateway, gateway_key):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


async def test_generate_passes_b64_json_and_url_through(client, upstream, seed):
    result = await client.images.generate(model=IMAGE, prompt="a red fox", n=2, size="1024x1024", quality="high")
    assert [d.b64_json for d in result.data] == [PNG_1PX, PNG_1PX]
    assert result.usage.output_tokens == 544
    received = upstream.requests[-1]
    assert received["path"] == "/v1/images/generations" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert received["body"] == {"model": IMAGE_UP, "prompt": "a red fox", "n": 2, "size": "1024x1024", "quality": "high"}
    urls = await client.images.generate(model=DALLE, prompt="a fox", response_format="url")
    assert urls.data[0].url == "https://images.example/fake-0.png" and urls.data[0].revised_prompt == "a fake"
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id")[0]
    assert (row["endpoint"], row["upstream_model"], row["input_tokens"], row["output_tokens"]) == ("images.generations", IMAGE_UP, 12, 544)


async def test_edit_streams_files_and_fields_intact(client, upstream, tmp_path, seed):
    first, second, mask = b"\x89PNG first" + bytes(range(256)) * 40, b"\x89PNG second" * 500, b"\x89PNG mask" * 30
    (tmp_path / "a.png").write_bytes(first)
    result = await client.images.edit(
        model=IMAGE,
        image=[open(tmp_path / "a.png", "rb"), ("b.png", second, "image/png")],
        mask=("mask.png", mask, "image/png"),
        prompt="add a hat",
        n=1,
        size="1024x1536",
    )
    assert result.data[0].b64_json == PNG_1PX
    received = upstream.requests[-1]
    assert received["path"] == "/v1/images/edits" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert received["headers"]["Content-Type"].startswith("multipart/form-data; boundary=")
    form = received["body"]
    assert form["fields"] == {"prompt": "add a hat", "model": IMAGE_UP, "n": "1", "size": "1024x1536"}
    files = {(f["field"], f["filename"]): (f["size"], f["sha256"]) for f in form["files"]}
    assert files == {
        ("image[]", "a.png"): (len(first), hashlib.sha256(first).hexdigest()),
        ("image[]", "b.png"): (len(second), hashlib.sha256(second).hexdigest()),
        ("mask", "mask.png"): (len(mask), hashlib.sha256(mask).hexdigest()),
    }
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["status"], row["upstream_model"]) == ("images.edits", 200, IMAGE_UP)


async def test_oversized_upload_is_413_before_the_upstream_sees_it(client, upstream, seed):
    with pytest.raises(openai.APIStatusError) as caught:
        await client.images.edit(model=IMAGE, image=("big.png", b"x" * (LIMIT + 1), "image/png"), prompt="p")
    assert caught.value.status_code == 413 and caught.value.code == "request_too_large"
    assert upstream.requests == []
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["status"], row["channel_name"]) == (413, None)


async def test_upload_without_length_is_cut_at_the_limit(gateway, gateway_key, upstream):
    boundary = "XyZ"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n{IMAGE}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n"
            "Content-Type: image/png\r\n\r\n").encode()  # fmt: skip

    async def body():  # sent chunked, with no Content-Length: the limit is crossed mid-upload
        yield head
        for _ in range(LIMIT // 4096 + 2):
            await asyncio.sleep(0)
            yield b"x" * 4096
        yield f"\r\n--{boundary}--\r\n".encode()

    headers = {"Authorization": f"Bearer {gateway_key}", "Content-Type": f"multipart/form-data; boundary={boundary}"}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/images/edits", data=body(), headers=headers) as response:
            assert response.status == 413
            assert (await response.json())["error"]["code"] == "request_too_large"
    assert all(r["body"]["files"] == [] or r["body"]["files"][0]["size"] < LIMIT for r in upstream.requests)


async def test_form_without_a_model_is_a_clear_400(gateway, gateway_key, upstream):
    form = aiohttp.FormData()
    form.add_field("image", b"y" * 1024, filename="a.png", content_type="image/png")
    form.add_field("prompt", "p")
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/images/edits", data=form, headers={"Authorization": f"Bearer {gateway_key}"}) as response:
            payload = await response.json()
    assert response.status == 400 and payload["error"]["param"] == "model"
    assert upstream.requests == []


async def test_images_for_a_model_without_an_images_channel_are_404(client):
    with pytest.raises(openai.NotFoundError) as caught:
        await client.images.generate(model=CLAUDE, prompt="x")
    assert caught.value.code == "unsupported_endpoint"
    with pytest.raises(openai.NotFoundError):
        await client.images.edit(model=CLAUDE, image=("a.png", b"x", "image/png"), prompt="x")

