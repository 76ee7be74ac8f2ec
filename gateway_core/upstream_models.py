"""Listing an upstream's models: the HTTP work of :meth:`ChannelType.list_models`.

:func:`get_page` fetches one page of a model list with the channel's headers and
timeouts, reading at most ``limits.page_bytes``; :func:`collect_pages` follows a
list's cursor from page to page, at most ``limits.pages`` pages and
``limits.models`` ids. Every failure is a ``GatewayError`` whose message an
operator can act on (the upstream refused the key, did not answer in time,
answered something that is not a model list); the fronts show it as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from .channel_type import ModelQuery
from .errors import GatewayError, UpstreamError, UpstreamTimeoutError, excerpt
from .upstream import ERROR_BODY_LIMIT, ErrorMessage, _stale_connection, error_for_status

#: one page: its ids and the cursor of the next page (``None``: the last)
Page = tuple[Iterable[str], str | None]


def not_a_model_list(data: bytes | str = b"") -> UpstreamError:
    """The error for an answer that is not the model list the type expected."""
    error = UpstreamError("the upstream answered something that is not a model list")
    error.upstream_status, error.upstream_body = 200, excerpt(data)
    return error


def entries(page: Any, name: str, *, optional: bool = False) -> list[Any]:
    """``page[name]`` when ``page`` is a JSON object holding a list there (left out:
    an error, or an empty page when ``optional``), else :func:`not_a_model_list`."""
    items = page.get(name, [] if optional else None) if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise not_a_model_list(orjson.dumps(page)[:2000])
    return items


async def get_page(query: ModelQuery, url: str, *, headers: Mapping[str, str], error_message: ErrorMessage) -> Any:
    """GET ``url`` and return its JSON answer (any JSON value: the caller checks its shape).

    ``headers`` are the channel type's own (the key); the channel's operator
    headers are added under them. The whole page must come within the channel's
    first-byte timeout and be no larger than ``limits.page_bytes``."""
    own = {name.lower() for name in headers}
    merged = {name: value for name, value in query.channel.headers.items() if name.lower() not in own}
    merged.update(headers)
    if not any(name.lower() == "accept" for name in merged):
        merged["Accept"] = "application/json"
    seconds = query.timeouts.first_byte
    try:
        async with asyncio.timeout(seconds):
            try:
                data = await _read(query, url, merged, error_message)
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if not _stale_connection(exc):
                    raise
                data = await _read(query, url, merged, error_message)  # a pooled connection the upstream had closed
    except TimeoutError:
        raise UpstreamTimeoutError(f"the upstream did not answer within {seconds:g} s") from None
    except aiohttp.ClientConnectorError as exc:
        raise UpstreamError(f"could not connect to the upstream: {exc.os_error or exc}") from None
    except aiohttp.ClientError as exc:
        raise UpstreamError(f"the upstream connection failed: {type(exc).__name__}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise not_a_model_list(data) from None


async def _read(query: ModelQuery, url: str, headers: dict[str, str], error_message: ErrorMessage) -> bytes:
    timeout = aiohttp.ClientTimeout(total=None, connect=query.timeouts.connect)
    async with query.session.get(url, headers=headers, timeout=timeout, allow_redirects=False) as response:
        if response.status >= 400:
            body = await response.content.read(ERROR_BODY_LIMIT)
            if response.status == 404:
                error: GatewayError = UpstreamError(f"the upstream serves no model list at {urlsplit(url).path} (404)")
                error.upstream_status, error.upstream_body = 404, excerpt(body)
                raise error
            raise error_for_status(response.status, body, error_message)
        if response.status != 200:
            raise UpstreamError(f"the upstream answered {response.status} instead of a model list")
        limit = query.limits.page_bytes
        if response.content_length is not None and response.content_length > limit:
            raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                response.close()
                raise _too_large(limit)
            chunks.append(chunk)
        return b"".join(chunks)


def _too_large(limit: int) -> UpstreamError:
    return UpstreamError(f"the upstream's model list is larger than {limit} bytes a page, the most the gateway reads")


async def collect_pages(query: ModelQuery, fetch: Callable[[str | None], Awaitable[Page]]) -> list[str]:
    """The ids of every page: ``fetch(None)`` gives the first page, ``fetch(cursor)``
    the next, until a page has no cursor. Ids come once each, in order; more than
    ``limits.pages`` pages or ``limits.models`` ids is an error saying so."""
    limits = query.limits
    seen: dict[str, None] = {}
    cursor: str | None = None
    for _ in range(limits.pages):
        ids, cursor = await fetch(cursor)
        for model in ids:
            seen.setdefault(model, None)
        if len(seen) > limits.models:
            raise UpstreamError(f"the upstream lists more than {limits.models} models, the most the gateway reads")
        if not cursor:
            return list(seen)
    raise UpstreamError(f"the upstream's model list goes on past {limits.pages} pages, the most the gateway reads")
