"""A WebSocket upgrade the gateway does not serve, declined in a way clients understand.

A path served over HTTP (``/v1/responses``, ``/v1/chat/completions``,
``/v1/messages`` …) answers 426 Upgrade Required: a client that can fall back to
HTTP (Codex does on exactly this status) sends the request again as HTTP. A path
that does not exist answers 404. Both carry the request id, in the body (the
protocol's error shape) and in ``X-Request-Id``, and are logged; never a 500 with
an empty body. Servers without ASGI's WebSocket denial response close the
handshake instead (their own 403).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from ..client_protocol import RenderedError
from .context import new_request_id
from ..errors import GatewayError

log = structlog.get_logger("relaygate.app")
DENIAL = "websocket.http.response"  # the ASGI extension a server offers for it


async def decline_upgrade(scope: Any, receive: Any, send: Any, served_over_http: bool, render: Callable[[GatewayError, str], RenderedError]) -> None:
    """Answer a WebSocket handshake on a path no WebSocket route serves."""
    request_id = new_request_id()
    path = scope.get("path", "")
    if served_over_http:
        error = GatewayError(f"{path} is served over HTTP, not WebSocket: send the request as an HTTP request.", status=426, code="websocket_not_supported")
    else:
        error = GatewayError(f"Unknown path: WebSocket {path}. See the API reference for the endpoints served here.", status=404, code="unknown_path")
    log.info("websocket declined", request_id=request_id, path=path, status=error.status)
    await refuse_handshake(receive, send, scope, render(error, request_id), request_id, error.message, close_connection=served_over_http)


async def refuse_handshake(receive: Any, send: Any, scope: Any, rendered: RenderedError, request_id: str, reason: str, *, close_connection: bool = False) -> None:
    """Answer a WebSocket handshake with an HTTP error (``rendered``: status and
    body in the protocol's shape, ``X-Request-Id``) instead of accepting it; a
    server without the denial extension closes the handshake (code 1008, ``reason``)."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if DENIAL not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008, "reason": reason.encode("utf-8")[:120].decode("utf-8", "ignore")})
        return
    headers = [(b"content-type", rendered.content_type.encode()), (b"x-request-id", request_id.encode())]
    headers += [(name.lower().encode("latin-1"), str(value).encode("latin-1")) for name, value in rendered.headers.items()]
    if close_connection:
        headers.append((b"connection", b"close"))
    await send({"type": "websocket.http.response.start", "status": rendered.status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": rendered.body, "more_body": False})
