"""What the HTTP server answers by itself to requests it cannot parse — a bare CR
in a header, a forbidden byte, headers over 16 KiB, an unsupported
Transfer-Encoding, a broken chunk — is a JSON error with a request id (in the
body and ``X-Request-Id``), never an empty body; and the connection closes.
Unknown paths and wrong methods on API routes answer JSON in the protocol's shape."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from gateway_core.config import Config

pytestmark = pytest.mark.usefixtures("bundled_adapters")  # the error shapes of the openai, anthropic and gemini protocols

HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai", "anthropic", "gemini", "console"))


async def exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` as it is; the answer's status, headers and body (read until the gateway closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout=10)  # to the end: the connection closes
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (HEAD + b"X-Bad: a\rb\r\n\r\n", 400),  # a bare CR inside a header value
        (HEAD + b"X-Bad: \x00\r\n\r\n", 400),  # a forbidden byte
        (HEAD + b"X-Big: " + b"a" * 200_000 + b"\r\n\r\n", 431),  # headers over 16 KiB
        (HEAD + b"Transfer-Encoding: gzip\r\n\r\n", 501),
        (b"NOT HTTP AT ALL\r\n\r\n", 400),
    ],
)
async def test_the_http_layer_answers_json_with_a_request_id(start_gateway, request_bytes, status):
    gateway = start_gateway()
    got, headers, body = await exchange(gateway.port, request_bytes)
    assert got == status
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    answer = orjson.loads(body)
    request_id = headers["x-request-id"]
    assert request_id.startswith("req_") and answer["request_id"] == request_id
    # the shape the SDKs read: OpenAI and Anthropic (error.type, error.message), Gemini (error.code, error.status)
    assert answer["type"] == "error" and answer["error"]["type"] == "invalid_request_error"
    assert answer["error"]["code"] == status and answer["error"]["status"]
    assert request_id in answer["error"]["message"]


async def test_a_broken_chunk_in_the_middle_of_a_body_is_a_json_400(start_gateway):
    gateway = start_gateway()
    data = HEAD + b"Authorization: Bearer sk-x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZZ\r\n"
    status, headers, body = await exchange(gateway.port, data)
    assert status == 400 and orjson.loads(body)["request_id"] == headers["x-request-id"]


@pytest.mark.parametrize(
    "path, method, shape",
    [
        ("/v1/chat/completions", "GET", "openai"),  # a GET on an API route
        ("/v1/nowhere", "GET", "openai"),
        ("/v1/messages", "GET", "anthropic"),
        ("/v1beta/nothing", "GET", "gemini"),
        ("/console/v1/chat/completions", "GET", "openai"),  # under /console but an API path
    ],
)
async def test_api_paths_answer_json_in_the_protocols_shape(start_gateway, path, method, shape):
    gateway = start_gateway()
    data = f"{method} {path} HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n".encode()
    if shape == "anthropic":
        data = data.replace(b"Connection", b"anthropic-version: 2023-06-01\r\nConnection")
    status, headers, body = await exchange(gateway.port, data)
    assert status in (404, 405) and headers["content-type"].startswith("application/json")
    answer = orjson.loads(body)
    if shape == "openai":
        assert answer["error"]["message"]
    elif shape == "anthropic":
        assert answer["type"] == "error" and answer["error"]["type"]
    else:
        assert answer["error"]["code"] == status and answer["error"]["status"]
