"""Small ASGI helpers for the request path: reading bodies, sending responses."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .coarse_timers import deadline
from ..errors import InvalidRequestError, RequestTooLargeError
from ..types import Scope

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


async def read_body(scope: Scope, receive, limit: int, timeout: float) -> bytes:
    """The whole request body, refusing more than ``limit`` bytes with 413 (at once
    when ``Content-Length`` says so; otherwise as soon as the bytes read pass it,
    dropping them) and a body still incomplete ``timeout`` seconds after the
    headers with 408."""
    declared_length(scope, limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async with deadline(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone()
                chunk = message.get("body", b"")
                if chunk:
                    size += len(chunk)
                    if size > limit:
                        chunks.clear()  # released now, not when the error is
                        raise too_large(limit)
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise body_timeout(timeout) from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def too_large(limit: int) -> RequestTooLargeError:
    return RequestTooLargeError(f"The request body is larger than the limit of {limit} bytes.")


def body_timeout(seconds: float) -> InvalidRequestError:
    return InvalidRequestError(
        f"The request body did not arrive within {seconds:g} s of its headers.", status=408, code="request_timeout"
    )


DRAIN_BYTES = 64 * 1024 * 1024  # bytes of an unwanted body read and dropped after an early answer
DRAIN_SECONDS = 10.0


def announces_body(scope: Scope) -> bool:
    """Whether the request says a body follows its headers (a ``Content-Length``
    other than 0, or a ``Transfer-Encoding``)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() != b"0"
        if name == b"transfer-encoding":
            return True
    return False


async def finish_early_answer(scope: Scope, receive, send, message: dict[str, Any], *, drain: bool = True) -> None:
    """Send ``message``, the last of an answer given before the request body was
    read to its end (its head said ``Connection: close``), and end the connection.

    The whole answer goes out first. Then the rest of the body is read and dropped,
    up to :data:`DRAIN_BYTES` and :data:`DRAIN_SECONDS` (nothing when the declared
    ``Content-Length`` is larger, or without ``drain``: a body too slow): HTTP clients that send their whole body before
    reading (httpx, so the official SDKs) see the answer only when they could send
    all of it, and one cut off mid-upload reports a broken connection instead. Memory
    stays flat: each chunk is dropped as it comes. Last, the server closes the
    connection — it hands the app an ``http.disconnect`` first, through the queue
    of body messages, which a still-sending client keeps full: a drain runs
    meanwhile (a few messages: the server stops reading the request once the
    answer is complete)."""
    await send({"type": "http.response.body", "body": message.get("body", b""), "more_body": True})
    declared = _content_length(scope)
    if drain and (declared is None or declared <= DRAIN_BYTES):
        await drop_body(receive, DRAIN_BYTES, DRAIN_SECONDS)
    dropping = asyncio.ensure_future(_drop_until_disconnect(receive))
    try:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        if not dropping.done():
            dropping.cancel()


async def drop_body(receive, max_bytes: int, seconds: float) -> None:
    """Read and drop the rest of a request body, at most ``max_bytes`` of it for at
    most ``seconds``; returns at once when the client has left."""
    dropped = 0
    try:
        async with asyncio.timeout(seconds):
            while dropped <= max_bytes:
                message = await receive()
                if message["type"] == "http.disconnect" or not message.get("more_body", False):
                    return
                dropped += len(message.get("body", b""))
    except TimeoutError:
        return


async def _drop_until_disconnect(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


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
