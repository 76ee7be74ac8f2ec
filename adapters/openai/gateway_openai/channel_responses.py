"""An ``openai`` channel's Responses API, for channels that speak it natively.

Whether a channel does is its setting ``responses`` (:data:`RESPONSES`,
``true``/``false``); without it, whether the endpoints the channel declares (``relaygate channel add
--endpoints``) name ``responses``; a channel that declares none speaks it when it
is ``api.openai.com`` (OpenAI-compatible servers mostly serve chat only). A Responses request for a native channel is forwarded as it
came, only the model mapped — every field, item id and tool type (``namespace``,
``web_search`` …) untouched — and its answer comes back as it is, marked with the
Responses wire so the client's writer forwards it (see :attr:`Frame.wire`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import orjson

from gateway_core import (
    ChannelRecord,
    Exchange,
    Frame,
    JsonReply,
    NotFoundError,
    Reply,
    Setting,
    StreamReply,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
    Usage,
    endpoints,
)
from gateway_core.echo_ids import SEPARATOR, plain_id
from gateway_core.errors import excerpt
from gateway_core.sse import frame_fields
from gateway_core.upstream import channel_headers, error_for_status, parse_answer, parse_frame_json, post, read_all, sse_frames

from .calls import RESPONSES_WIRE
from .error_body import upstream_error_message
from .responses_response import usage_from_wire
from .responses_stream import TERMINAL, ResponsesDecoder

NATIVE_HOSTS = frozenset(("api.openai.com",))
RESPONSES = Setting(
    "responses", "bool",
    help="whether the upstream serves /v1/responses itself (not set: whether --endpoints names responses, else only api.openai.com does)",
)  # fmt: skip


def speaks_responses(channel: ChannelRecord) -> bool:
    """Whether the channel's upstream serves ``/v1/responses`` itself: its setting
    ``responses``, else whether its declared ``endpoints`` name ``responses``, else
    whether it is ``api.openai.com``."""
    setting = RESPONSES.read(channel.settings)
    if setting is not None:
        return bool(setting)
    if channel.endpoints:
        return endpoints.RESPONSES in channel.endpoints
    return (urlsplit(channel.base_url).hostname or "") in NATIVE_HOSTS


STORED_METHOD = "stored_method"  # Call.options of a kept response read or deleted at its upstream


async def send_responses(exchange: Exchange, headers: dict[str, str], url_for: Callable[[str], str]) -> Reply:
    """Forward a Responses call to ``url_for("/v1/responses")`` (a kept response's
    read or delete to ``url_for("/v1/responses/{id}")``)."""
    call, target = exchange.call, exchange.target
    method = call.options.get(STORED_METHOD)
    if method:
        response_id = str(call.body.get("id"))
        return await send_stored(exchange, headers, str(method), response_id, url_for(f"/v1/responses/{quote(response_id, safe='')}"))
    body = {**call.body, "model": target.upstream_model}
    if isinstance(body.get("input"), list):
        body["input"] = plain_item_ids(body["input"])
    url = url_for("/v1/responses")
    response = await post(exchange, url, headers=headers, body=orjson.dumps(body), error_message=upstream_error_message)
    if call.stream:
        frames = sse_frames(response, ResponsesFrames().decode)
        return StreamReply(frames=frames, close=frames.aclose)
    data = await read_all(response)
    answer = parse_answer(data)
    return JsonReply(body=data, response=None, usage=usage_from_wire(answer.get("usage")), model=answer.get("model"), wire=RESPONSES_WIRE)


class ResponsesFrames:
    """Decodes one Responses upstream's SSE frames, marked with their wire."""

    __slots__ = ("_events",)

    def __init__(self) -> None:
        self._events = ResponsesDecoder()

    def decode(self, raw: bytes) -> Frame:
        name, data = frame_fields(raw)
        if not data.strip():
            return Frame(raw, wire=RESPONSES_WIRE)  # a comment or keep-alive
        payload = parse_frame_json(data)
        if name and "type" not in payload:
            payload = {**payload, "type": name}
        try:
            events = self._events.feed(payload)
        except UpstreamError as error:
            error.upstream_body = excerpt(data)
            raise
        return Frame(raw, tuple(events), terminal=payload.get("type") in TERMINAL, wire=RESPONSES_WIRE)


async def send_stored(exchange: Exchange, headers: dict[str, str], method: str, response_id: str, url: str) -> JsonReply:
    """``GET`` or ``DELETE`` the response's ``url`` (``/v1/responses/{id}``) at the
    upstream that holds it; its 404 is the client's 404. Nothing is billed (an
    empty usage)."""
    timeouts = exchange.timeouts
    try:
        async with asyncio.timeout(timeouts.first_byte + timeouts.idle):
            response = await exchange.session.request(
                method, url, headers=channel_headers(exchange, headers), allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=None, connect=timeouts.connect),
            )  # fmt: skip
            status, retry_after = response.status, response.headers.get("retry-after")
            data = await read_all(response, exchange.limits.answer_bytes)
    except TimeoutError:
        raise UpstreamTimeoutError("the upstream did not answer in time", retryable=True) from None
    except aiohttp.ClientError as exc:
        raise UpstreamUnavailableError(f"the upstream connection failed: {type(exc).__name__}", retryable=True) from None
    if status == 404:
        raise NotFoundError(f"Response with id '{response_id}' not found.", param="response_id")
    if status >= 400:
        raise error_for_status(status, data, upstream_error_message, retry_after)
    return JsonReply(body=data, response=None, usage=Usage(), wire=RESPONSES_WIRE)


def plain_item_ids(items: list[Any]) -> list[Any]:
    """Responses ``input`` items whose ``call_id`` is without a token another channel
    folded in (:mod:`gateway_core.echo_ids`); the same list when none has one."""
    if not any(isinstance(item, dict) and SEPARATOR in str(item.get("call_id")) for item in items):
        return items
    return [
        {**item, "call_id": plain_id(item["call_id"])} if isinstance(item, dict) and isinstance(item.get("call_id"), str) else item
        for item in items
    ]
