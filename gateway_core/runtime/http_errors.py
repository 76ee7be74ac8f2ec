"""Answers the HTTP server gives by itself, to requests it cannot parse.

A request that is not valid HTTP/1.1 — a header with a bare CR or bytes HTTP
forbids, headers larger than the server reads (16 KiB), a ``Transfer-Encoding``
other than chunked, a broken chunk — never reaches the app: hypercorn answers
400, 431 or 501 itself, with an empty body. :func:`install` makes those answers
JSON errors with a request id (uvicorn's protocol in
:mod:`gateway_core.runtime.server_uvicorn` writes the same with :func:`raw_answer`) (also in ``X-Request-Id`` and the log), in a
shape the bundled client protocols' SDKs all read (``error`` with ``type`` and
``message``, a numeric ``code`` and a ``status`` name): no protocol is known for
a request whose head could not be read. The connection closes after
them, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import orjson
import structlog

from ..request.context import new_request_id

log = structlog.get_logger("relaygate.http")

MESSAGES = {
    400: "The request is not valid HTTP/1.1 (a malformed request line, header or chunk; a header with a bare CR or a forbidden byte).",
    413: "The request is larger than the server accepts.",
    431: "The request's headers are larger than the server accepts (16 KiB in all).",
    501: "The request uses a Transfer-Encoding the server does not support (only chunked is).",
    505: "The request's HTTP version is not supported (HTTP/1.0, HTTP/1.1 and HTTP/2 are).",
}
STATUS_NAMES = {400: "INVALID_ARGUMENT", 413: "INVALID_ARGUMENT", 431: "INVALID_ARGUMENT", 501: "UNIMPLEMENTED", 505: "UNIMPLEMENTED"}


def error_body(status: int, request_id: str) -> bytes:
    message = MESSAGES.get(status, "The server could not read the request.")
    error = {
        "type": "invalid_request_error",
        "message": f"{message} (request id: {request_id})",
        "code": status,
        "status": STATUS_NAMES.get(status, "INVALID_ARGUMENT"),
    }
    return orjson.dumps({"type": "error", "error": error, "request_id": request_id})


def refused(status: int, client: Any) -> tuple[str, bytes]:
    """A new request id and the JSON body for a request the server refuses with
    ``status`` (logged once)."""
    request_id = new_request_id()
    log.info("request refused by the HTTP layer", request_id=request_id, status=status, client=client and client[0])
    return request_id, error_body(status, request_id)


REASONS = {400: b"Bad Request", 413: b"Content Too Large", 431: b"Request Header Fields Too Large", 501: b"Not Implemented", 505: b"HTTP Version Not Supported"}


def raw_answer(status: int, client: Any, extra: Sequence[tuple[bytes, bytes]] = ()) -> bytes:
    """The whole HTTP/1.1 response (head and JSON body, ``Connection: close``)
    refusing a request with ``status``, for a server that writes bytes itself."""
    request_id, body = refused(status, client)
    head = [b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, b"Bad Request"))]
    for name, value in [*extra, *_fixed(body, request_id)]:
        head.append(name + b": " + value + b"\r\n")
    return b"".join(head) + b"\r\n" + body


def _fixed(body: bytes, request_id: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        (b"x-request-id", request_id.encode()),
    ]


async def _send_error_response(self: Any, status_code: int) -> None:
    """hypercorn's ``H11Protocol._send_error_response``, with a JSON body."""
    import h11

    request_id, body = refused(status_code, self.client)
    headers = list(chain(_fixed(body, request_id), self.config.response_headers("h11")))
    await self._send_h11_event(h11.Response(status_code=status_code, headers=headers))
    await self._send_h11_event(h11.Data(data=body))
    await self._send_h11_event(h11.EndOfMessage())


def install() -> None:
    """Put the JSON answers in place of hypercorn's empty ones (once per process)."""
    from hypercorn.protocol.h11 import H11Protocol

    if getattr(H11Protocol._send_error_response, "__module__", None) != __name__:
        H11Protocol._send_error_response = _send_error_response  # type: ignore[method-assign]
