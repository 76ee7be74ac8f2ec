"""HTTP work shared by channel types that call an upstream over HTTP.

``post`` sends one request with the exchange's timeouts (and the channel's own
headers, see :func:`channel_headers`) and turns every failure
into a ``GatewayError`` that says whether another channel may succeed
(``retryable``) and keeps the upstream's status and a bounded body excerpt for
the log. ``sse_frames``, ``ndjson_frames`` and ``json_array_frames`` cut a
streaming response into frames as they arrive; ``split_frames`` does it with a
framing of the channel type's own (a binary one).
"""

from __future__ import annotations

import asyncio
import errno
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import orjson
from yarl import URL

from .channel_type import AnswerLimits, Exchange
from .client_protocol import Frame
from .base.coarse_timers import deadline
from .errors import (
    GatewayError,
    InvalidRequestError,
    RateLimitError,
    RequestTooLargeError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
    excerpt,
)
from .base.frame_stream import FrameStream, Splitter
from .base.frame_stream import read_by_read as read_by_read  # the relay's, kept here
from .framing import JSONArraySplitter, NDJSONSplitter
from .sse import SSESplitter

ERROR_BODY_LIMIT = 64 * 1024

# the limits of the exchange each successful response answers (set by ``post``)
_LIMITS: weakref.WeakKeyDictionary[aiohttp.ClientResponse, AnswerLimits] = weakref.WeakKeyDictionary()
_DEFAULT_LIMITS = AnswerLimits()
# a pooled connection the upstream closed as the request went out: it never got the
# request (None: aiohttp could not write the body to the closing connection)
_STALE_ERRNOS = frozenset((errno.ECONNRESET, errno.EPIPE, None))

ErrorMessage = Callable[[int, bytes], str]
_TIMEOUTS: dict[tuple[float, float], aiohttp.ClientTimeout] = {}


async def post(
    exchange: Exchange,
    url: str | URL,
    *,
    headers: dict[str, str],
    body: bytes,
    error_message: ErrorMessage,
) -> aiohttp.ClientResponse:
    """POST ``body`` and return the response once its head arrived with a 2xx status.

    ``headers`` are the channel type's own; the operator's headers of the channel
    are added (:func:`channel_headers`). The caller owns the response: read it,
    or release it when done. A ``yarl.URL(..., encoded=True)`` goes out exactly
    as given (a signed request's path must not be re-quoted).
    """
    headers = channel_headers(exchange, headers)
    timeouts = exchange.timeouts
    # aiohttp's read timeout also runs while the head is awaited: the head gets the
    # first-byte timeout (below), the body the idle timeout once the head is here
    sock_read = max(timeouts.idle, timeouts.first_byte)
    client_timeout = _client_timeout(timeouts.connect, sock_read)
    try:
        async with deadline(timeouts.first_byte):
            try:
                response = await exchange.session.post(
                    url, data=body, headers=headers, timeout=client_timeout, allow_redirects=False
                )
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if not _stale_connection(exc):
                    raise
                # the upstream closed an idle pooled connection as the request went out
                # (its keep-alive ended): the request never reached it; once more, on another
                response = await exchange.session.post(
                    url, data=body, headers=headers, timeout=client_timeout, allow_redirects=False
                )
    except TimeoutError:
        raise UpstreamTimeoutError(
            f"the upstream did not answer within {timeouts.first_byte:g} s", retryable=True
        ) from None
    except aiohttp.ClientConnectorError as exc:
        raise _unavailable(f"could not connect to the upstream: {exc.os_error or exc}") from None
    except aiohttp.ServerTimeoutError:
        raise UpstreamTimeoutError("the upstream timed out", retryable=True) from None
    except aiohttp.ClientError as exc:
        raise _unavailable(f"the upstream connection failed: {type(exc).__name__}") from None
    if response.status < 400:
        if timeouts.idle < sock_read:
            _idle_timeout(response, timeouts.idle)
        _LIMITS[response] = exchange.limits
        return response
    try:
        data = await response.content.read(ERROR_BODY_LIMIT)
    except (aiohttp.ClientError, TimeoutError):
        data = b""
    finally:
        response.release()
    raise error_for_status(response.status, data, error_message, response.headers.get("retry-after"))


def _client_timeout(connect: float, sock_read: float) -> aiohttp.ClientTimeout:
    """aiohttp's timeout object for these two values, made once (each channel has a
    few; making one costs several microseconds per request)."""
    key = (connect, sock_read)
    timeout = _TIMEOUTS.get(key)
    if timeout is None:
        if len(_TIMEOUTS) >= 256:  # settings changed many times: start over
            _TIMEOUTS.clear()
        timeout = _TIMEOUTS[key] = aiohttp.ClientTimeout(total=None, connect=connect, sock_read=sock_read)
    return timeout


def channel_headers(exchange: Exchange, headers: Mapping[str, str]) -> dict[str, str]:
    """The headers of one upstream request: the channel's own (set by its operator
    with ``relaygate channel add --header``), the trace context when the channel
    forwards it (``exchange.trace_headers``), then the channel type's ``headers``,
    which win when several name one (names compared without case)."""
    operator, trace = exchange.target.channel.headers, exchange.trace_headers
    if not operator and not trace:
        return dict(headers)
    own = {name.lower() for name in headers}
    merged = {name: value for name, value in operator.items() if name.lower() not in own}
    merged.update((name, value) for name, value in trace.items() if name not in own)
    merged.update(headers)
    return merged


def error_for_status(
    status: int, body: bytes, error_message: ErrorMessage, retry_after: str | None = None
) -> GatewayError:
    """The gateway error for an upstream error status.

    A request the upstream refused for its own content (400, 413, 422) is the
    client's to fix: same status, no retry. Everything else (the channel's key
    refused — marked ``key_refused`` —, rate limits, server errors, an unknown
    path) may succeed elsewhere.
    """
    message = error_message(status, body)
    error: GatewayError
    if status in (400, 422):
        error = InvalidRequestError(f"the upstream rejected the request: {message}", status=400)
    elif status == 413:
        error = RequestTooLargeError(f"the upstream rejected the request as too large: {message}")
    elif status == 429:
        error = RateLimitError(
            f"the upstream is rate limiting: {message}",
            retry_after=_seconds(retry_after),
            retryable=True,
        )
    elif status in (408, 504):
        error = UpstreamTimeoutError(f"the upstream timed out ({status})", retryable=True)
    elif status in (503, 529):
        error = UpstreamUnavailableError(f"the upstream is overloaded ({status}): {message}", retryable=True)
    elif status in (401, 403):
        error = UpstreamError(f"the upstream refused the channel's key ({status}): {message}", retryable=True)
        error.key_refused = True
    else:
        error = UpstreamError(f"the upstream failed ({status}): {message}", retryable=True)
    error.upstream_status = status
    error.upstream_body = excerpt(body)
    return error


def sse_frames(
    response: aiohttp.ClientResponse, decode: Callable[[bytes], Frame], *, max_frame_bytes: int | None = None
) -> FrameStream:
    """The SSE frames of ``response``, each as soon as it is complete.

    ``decode`` turns a frame's bytes into a :class:`Frame` (and may raise a
    ``GatewayError`` for an error event). A silent or dropped upstream ends the
    iteration with a ``GatewayError``, as does a frame over ``max_frame_bytes``
    (default: the exchange's ``limits.frame_bytes``, the ``max_frame_bytes``
    setting), which closes the upstream connection.
    """
    return FrameStream(response, SSESplitter(_frame_limit(response, max_frame_bytes)), decode, b"\n\n")


def ndjson_frames(
    response: aiohttp.ClientResponse, decode: Callable[[bytes], Frame], *, max_frame_bytes: int | None = None
) -> FrameStream:
    """Like :func:`sse_frames` for newline-delimited JSON: ``decode`` gets each
    line with its line end (a blank line too, which it may take for a keep-alive)."""
    return FrameStream(response, NDJSONSplitter(_frame_limit(response, max_frame_bytes)), decode, b"")


def json_array_frames(
    response: aiohttp.ClientResponse, decode: Callable[[bytes], Frame], *, max_frame_bytes: int | None = None
) -> FrameStream:
    """Like :func:`sse_frames` for a JSON array streamed element by element:
    ``decode`` gets each element's bytes. An array left unclosed is an error."""
    return FrameStream(response, JSONArraySplitter(_frame_limit(response, max_frame_bytes)), decode, b"")


def split_frames(
    response: aiohttp.ClientResponse,
    splitter: Callable[[int], Splitter],
    decode: Callable[[bytes], Frame],
) -> FrameStream:
    """Like :func:`sse_frames` for a framing the channel type cuts itself:
    ``splitter(max_frame_bytes)`` makes the object that cuts the body into frames
    (``feed(chunk)`` returns the frames a chunk completes, ``flush()`` what is left
    at the end, which is decoded when not blank; see :mod:`gateway_core.framing`),
    bounded by the exchange's ``limits.frame_bytes``."""
    return FrameStream(response, splitter(_frame_limit(response, None)), decode, b"")


def _frame_limit(response: aiohttp.ClientResponse, given: int | None) -> int:
    return given if given is not None else _LIMITS.get(response, _DEFAULT_LIMITS).frame_bytes


def _idle_timeout(response: aiohttp.ClientResponse, seconds: float) -> None:
    """From now on, time out after ``seconds`` without data from the upstream."""
    protocol = response.connection.protocol if response.connection is not None else None
    if protocol is not None:
        protocol.read_timeout = seconds
        protocol.start_timeout()


async def read_all(response: aiohttp.ClientResponse, max_bytes: int | None = None) -> bytes:
    """The whole body of a successful response, then the connection back to the pool.

    A body over ``max_bytes`` (default: the exchange's ``limits.answer_bytes``, the
    ``max_answer_bytes`` setting) is not read on: a retryable 502 (the channel's
    failure), its connection closed — refused at once when ``Content-Length`` says
    so, else as soon as the bytes read pass it (what was read is dropped)."""
    limit = max_bytes if max_bytes is not None else _LIMITS.get(response, _DEFAULT_LIMITS).answer_bytes
    finished = False
    try:
        declared = response.content_length
        if declared is not None and declared > limit:
            raise _answer_too_large(limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                chunks.clear()
                raise _answer_too_large(limit)
            chunks.append(chunk)
        finished = True
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except (TimeoutError, aiohttp.ServerTimeoutError):
        raise UpstreamTimeoutError("the upstream went silent while sending its answer", retryable=True) from None
    except aiohttp.ClientError as exc:
        raise UpstreamError(
            f"the upstream connection failed while reading the answer ({type(exc).__name__})", retryable=True
        ) from None
    finally:
        if finished:
            response.release()
        else:  # a body left half-read cannot go back to the pool
            response.close()


def _answer_too_large(limit: int) -> UpstreamError:
    return UpstreamError(
        f"the upstream's answer is larger than {limit} bytes, the most the gateway reads (max_answer_bytes)",
        retryable=True,
    )


def _stale_connection(exc: aiohttp.ClientError) -> bool:
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return True
    if isinstance(exc, aiohttp.ClientConnectorError):
        return False  # not connected at all: nothing was pooled
    return isinstance(exc, aiohttp.ClientOSError) and exc.errno in _STALE_ERRNOS


def parse_answer(data: bytes) -> dict[str, Any]:
    """A JSON object answer, or a retryable error keeping an excerpt of what came."""
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        error = UpstreamError("the upstream answered with something that is not a JSON object", retryable=True)
        error.upstream_status, error.upstream_body = 200, excerpt(data)
        raise error
    return answer


def parse_frame_json(data: bytes) -> dict[str, Any]:
    """The JSON object in a stream frame's data, or an error keeping an excerpt of it."""
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict):
        error = UpstreamError("the upstream sent a stream frame that is not a JSON object")
        error.upstream_body = excerpt(data)
        raise error
    return payload


def _unavailable(message: str) -> UpstreamError:
    # a 502 when no other channel succeeds: the upstream failed (a 503 says no channel was available)
    return UpstreamError(message, retryable=True)


def _seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
