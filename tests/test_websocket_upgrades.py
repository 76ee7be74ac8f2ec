"""A WebSocket upgrade the gateway does not serve: 426 on a path served over HTTP
(clients such as Codex fall back to HTTP on exactly that), 404 on a path that does
not exist, each with the request id and an error body in the caller's shape; never
a 500 with an empty body. ``/v1/realtime`` and ``/v1/responses`` (Responses over
WebSocket, tested with the openai adapter) upgrade."""

from __future__ import annotations

import json

import pytest
import websockets
from websockets.exceptions import InvalidStatus

pytestmark = pytest.mark.usefixtures("bundled_adapters")  # the paths of the openai and anthropic protocols


@pytest.fixture
def gateway(seed, start_gateway):
    seed.user("alice")
    return start_gateway()


async def refused(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict, dict]:
    with pytest.raises(InvalidStatus) as caught:
        async with websockets.connect(url, additional_headers=headers or {}, open_timeout=10):
            pass
    response = caught.value.response
    return response.status_code, dict(response.headers), json.loads(response.body or b"{}")


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
async def test_a_path_served_over_http_declines_with_426(gateway, path):
    status, headers, body = await refused(gateway.url.replace("http", "ws") + path)
    assert status == 426
    assert headers["x-request-id"].startswith("req_") and body["error"]["code"] == "websocket_not_supported"
    assert "served over HTTP" in body["error"]["message"]


async def test_an_anthropic_client_gets_its_own_shape(gateway):
    status, headers, body = await refused(gateway.url.replace("http", "ws") + "/v1/messages", {"anthropic-version": "2023-06-01", "x-api-key": "sk-x"})
    assert status == 426 and body["type"] == "error" and body["error"]["type"] and body["request_id"] == headers["x-request-id"]


async def test_an_unknown_path_declines_with_404(gateway):
    status, headers, body = await refused(gateway.url.replace("http", "ws") + "/v1/nowhere")
    assert status == 404 and body["error"]["code"] == "unknown_path" and headers["x-request-id"].startswith("req_")
