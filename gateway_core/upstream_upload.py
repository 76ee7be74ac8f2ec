"""Sending an upload on to an upstream as it arrives (see :mod:`gateway_core.uploads`).

Like :func:`gateway_core.upstream.post` (the channel's own headers added), but
the body is the client's upload,
streamed: the first-byte timeout starts once the last byte went out (a large
upload on a slow link is not a silent upstream), a body the client breaks (too
large, gone) fails with that reason rather than as an upstream failure, and a
failure after part of the body went out is never retried elsewhere (the body
cannot be sent twice).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp

from .channel_type import Exchange
from .errors import GatewayError, UpstreamError, UpstreamTimeoutError
from .upstream import ERROR_BODY_LIMIT, ErrorMessage, channel_headers, error_for_status
from .uploads import Upload


async def post_upload(
    exchange: Exchange,
    url: str,
    upload: Upload,
    *,
    headers: dict[str, str],
    replace: Mapping[str, str],
    error_message: ErrorMessage,
) -> aiohttp.ClientResponse:
    """POST the upload (its fields ``replace``-d) and return the response once its
    head arrived with a 2xx status; the caller reads or releases it."""
    try:
        return await _post(exchange, url, upload, headers, replace, error_message)
    except GatewayError as error:
        if upload.consumed:
            error.retryable = False
        raise


async def _post(
    exchange: Exchange,
    url: str,
    upload: Upload,
    headers: dict[str, str],
    replace: Mapping[str, str],
    error_message: ErrorMessage,
) -> aiohttp.ClientResponse:
    timeouts = exchange.timeouts
    loop = asyncio.get_running_loop()
    deadline = asyncio.timeout(None)

    def sent() -> None:
        deadline.reschedule(loop.time() + timeouts.first_byte)

    headers = channel_headers(exchange, headers)
    length = upload.length(replace)
    if length is not None:
        headers["Content-Length"] = str(length)
    client_timeout = aiohttp.ClientTimeout(total=None, connect=timeouts.connect, sock_read=timeouts.idle)
    try:
        async with deadline:
            response: aiohttp.ClientResponse = await exchange.session.post(
                url,
                data=upload.body(replace, on_end=sent),
                headers=headers,
                timeout=client_timeout,
                allow_redirects=False,
            )
    except TimeoutError:
        _client_broke(upload)
        raise UpstreamTimeoutError(f"the upstream did not answer within {timeouts.first_byte:g} s", retryable=True) from None
    except aiohttp.ClientConnectorError as exc:
        raise UpstreamError(f"could not connect to the upstream: {exc.os_error or exc}", retryable=True) from None
    except aiohttp.ServerTimeoutError:
        _client_broke(upload)
        raise UpstreamTimeoutError("the upstream timed out", retryable=True) from None
    except aiohttp.ClientError as exc:
        _client_broke(upload)
        raise UpstreamError(f"the upstream connection failed: {type(exc).__name__}", retryable=True) from None
    if response.status < 400:
        return response
    try:
        data = await response.content.read(ERROR_BODY_LIMIT)
    except (aiohttp.ClientError, TimeoutError):
        data = b""
    finally:
        response.release()
    _client_broke(upload)
    raise error_for_status(response.status, data, error_message, response.headers.get("retry-after"))


def _client_broke(upload: Upload) -> None:
    """Raise why the client's body broke, when it did: that is the real failure."""
    if upload.error is not None:
        raise upload.error
