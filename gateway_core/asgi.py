"""Small ASGI helpers for the request path: reading bodies, sending responses."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import InvalidRequestError, RequestTooLargeError
from .types import Scope

HeaderList = list[tuple[bytes, bytes]]

SSE_TYPE = "text/event-stream"
_STREAM_HEADERS: dict[str, HeaderList] = {}


def stream_headers(content_type: str) -> HeaderList:
    """Headers of a streamed answer: never cached, never buffered by a proxy."""
    headers = _STREAM_HEADERS.get(content_type)
    if headers is None:
        value = content_type + "; charset=utf-8" if content_type == SSE_TYPE else content_type
        headers = _STREAM_HEADERS[content_type] = [
            (b"content-type", value.encode("latin-1")),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
    return list(headers)


def declared_length(scope: Scope, limit: int) -> int | None:
    """The body's ``Content-Length`` (``None`` when not given), refusing one above
    ``limit`` with 413 before a byte of the body is read."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                raise InvalidRequestError("The Content-Length header is not a number.") from None
            if declared > limit:
                raise too_large(limit)
            return declared
    return None


async def read_body(scope: Scope, receive, limit: int) -> bytes:
    """The whole request body, refusing more than ``limit`` bytes with 413."""
    declared_length(scope, limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def too_large(limit: int) -> RequestTooLargeError:
    return RequestTooLargeError(f"The request body is larger than the limit of {limit} bytes.")


class ClientGone(Exception):
    """The client disconnected before the gateway could answer."""


async def wait_for_disconnect(receive) -> None:
    """Return when the client goes away (the body has been read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def send_body(send, status: int, body: bytes, content_type: bytes, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    raw = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    raw.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def encode_headers(headers: Mapping[str, str]) -> HeaderList:
    return [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in headers.items()]


class ClientAddress:
    """Finds the client's address: the socket peer, or the forwarded address when
    the peer is one of the operator's trusted proxies."""

    def __init__(self, trusted_proxies: Sequence[str]) -> None:
        self._trusted = tuple(ipaddress.ip_network(p, strict=False) for p in trusted_proxies)

    def __call__(self, scope: Scope) -> str | None:
        client = scope.get("client")
        peer = client[0] if client else None
        if not self._trusted or peer is None or not self._is_trusted(peer):
            return peer
        forwarded = _forwarded_for(scope["headers"])
        # walk from the nearest hop back while hops are trusted proxies
        for address in reversed(forwarded):
            if not self._is_trusted(address):
                return address
        return forwarded[0] if forwarded else peer

    def _is_trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self._trusted)


def _forwarded_for(headers: HeaderList) -> list[str]:
    hops: list[str] = []
    for name, value in headers:
        if name == b"x-forwarded-for":
            hops.extend(h.strip() for h in value.decode("latin-1").split(",") if h.strip())
        elif name == b"forwarded":
            for element in value.decode("latin-1").split(","):
                for pair in element.split(";"):
                    key, _, val = pair.strip().partition("=")
                    if key.lower() == "for" and val:
                        hops.append(_strip_forwarded_node(val))
    return hops


def _strip_forwarded_node(value: str) -> str:
    value = value.strip().strip('"')
    if value.startswith("["):  # [2001:db8::1]:443
        return value[1 : value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:  # 192.0.2.1:80
        return value.split(":", 1)[0]
    return value
