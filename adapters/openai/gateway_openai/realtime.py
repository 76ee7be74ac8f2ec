"""The Realtime API over WebSocket (``/v1/realtime?model=…``), relayed to openai channels.

Client side (the session relay of the core does the pumping and the billing,
:mod:`gateway_core.request.session_relay`):

- the key comes from ``Authorization: Bearer …`` (the SDKs' server-side
  clients), else from the ``openai-insecure-api-key.<key>`` WebSocket
  subprotocol browsers send; the subprotocol accepted is ``realtime`` when
  offered (never the key's);
- the call names the model of the ``model`` query parameter;
- a session's refusal or end is told with a Realtime ``error`` event.

Upstream side (:class:`RealtimeUpstream`): ``ws(s)://<base>/v1/realtime?model=<upstream
model>`` with the channel's key in ``Authorization`` (never the client's), the
operator's channel headers and the client's ``OpenAI-Beta`` header, messages at
most ``max_frame_bytes``. Each upstream text message is classified by its
``type`` read from its head: ``response.created`` starts a response,
``response.output_text.delta`` / ``response.output_audio_transcript.delta``
(and the beta names) carry its text for an estimate, ``response.done`` carries
its ``usage`` — ``input_tokens`` (``input_token_details.cached_tokens`` of them
cached) and ``output_tokens``, audio tokens included in both: the model's prices
apply to them alike. Only those messages are parsed; audio deltas go through
untouched.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import aiohttp
import orjson

from gateway_core import (
    AuthenticationError,
    Call,
    Exchange,
    InvalidRequestError,
    PartDelta,
    StopReason,
    StreamEvent,
    StreamFinish,
    StreamStart,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
    Usage,
    UsageReport,
    endpoints,
)
from gateway_core.key_header import bearer_key, plain_key
from gateway_core.sessions import SessionMessage, UpstreamSession
from gateway_core.tally import ImplausibleUsage, token_count
from gateway_core.upstream import channel_headers

from .error_body import error_to_wire

REALTIME_WIRE = "openai.realtime"
KEY_SUBPROTOCOL = "openai-insecure-api-key."
SUBPROTOCOL = "realtime"
_TYPE = re.compile(r'"type"\s*:\s*"([^"]{1,64})"')
_HEAD = 256  # the type is read from a message's first characters
_TEXT_DELTAS = frozenset((
    "response.output_text.delta", "response.output_audio_transcript.delta",
    "response.text.delta", "response.audio_transcript.delta",
))  # fmt: skip


# --- the client side -----------------------------------------------------------------


def session_key(headers: Mapping[str, str]) -> str:
    """The client's key: ``Authorization``, else the key subprotocol."""
    if headers.get("authorization"):
        return bearer_key(headers.get("authorization"))
    for offered in headers.get("sec-websocket-protocol", "").split(","):
        offered = offered.strip()
        if offered.startswith(KEY_SUBPROTOCOL):
            return plain_key(offered[len(KEY_SUBPROTOCOL) :], "Sec-WebSocket-Protocol")
    raise AuthenticationError(
        "No API key provided. Send it in the header 'Authorization: Bearer <key>' "
        f"or as the WebSocket subprotocol '{KEY_SUBPROTOCOL}<key>'.",
        code="missing_api_key",
    )


def session_call(headers: Mapping[str, str], query: Mapping[str, str]) -> Call:
    model = query.get("model") or ""
    if not model:
        raise InvalidRequestError("The Realtime session needs a model: connect to /v1/realtime?model=<model>.", param="model")
    beta = headers.get("openai-beta")
    return Call("openai", endpoints.REALTIME, REALTIME_WIRE, model, True, {}, {"openai_beta": beta} if beta else {})


def accepted_subprotocol(offered: Sequence[str]) -> str | None:
    return SUBPROTOCOL if SUBPROTOCOL in offered else None


def error_event(error: Any, request_id: str) -> str:
    """A Realtime ``error`` event for a gateway error."""
    body = error_to_wire(error, request_id)["error"]
    return orjson.dumps({"type": "error", "event_id": f"event_{request_id}", "error": {**body, "event_id": None}}).decode()


# --- the upstream side ------------------------------------------------------------


async def open_upstream(exchange: Exchange) -> RealtimeUpstream:
    """Connect to the channel's Realtime endpoint with the channel's key."""
    target, timeouts = exchange.target, exchange.timeouts
    parts = urlsplit(target.channel.base_url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    url = urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/v1/realtime", f"model={quote(target.upstream_model, safe='')}", ""))
    headers = {"Authorization": f"Bearer {target.api_key}"}
    beta = exchange.call.options.get("openai_beta")
    if beta:
        headers["OpenAI-Beta"] = str(beta)
    try:
        async with asyncio.timeout(timeouts.connect + timeouts.first_byte):
            ws = await exchange.session.ws_connect(
                url, headers=channel_headers(exchange, headers), max_msg_size=exchange.limits.frame_bytes,
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=10.0), autoping=True, heartbeat=None,
                autoclose=True, compress=0,
            )  # fmt: skip
    except aiohttp.WSServerHandshakeError as exc:
        error = UpstreamError(f"the upstream refused the Realtime session ({exc.status})", retryable=exc.status >= 500 or exc.status in (401, 403, 429))
        error.upstream_status = exc.status
        error.key_refused = exc.status in (401, 403)
        raise error from None
    except TimeoutError:
        raise UpstreamTimeoutError("the upstream did not open the Realtime session in time", retryable=True) from None
    except aiohttp.ClientError as exc:
        raise UpstreamUnavailableError(f"could not open the Realtime session upstream: {type(exc).__name__}", retryable=True) from None
    return RealtimeUpstream(ws)


class RealtimeUpstream(UpstreamSession):
    """One upstream Realtime WebSocket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def send(self, data: str | bytes) -> None:
        try:
            if isinstance(data, str):
                await self.ws.send_str(data)
            else:
                await self.ws.send_bytes(data)
        except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
            raise UpstreamError(f"the upstream Realtime session is gone ({type(exc).__name__})") from None

    async def messages(self) -> AsyncIterator[SessionMessage]:
        ws = self.ws
        while True:
            message = await ws.receive()
            if message.type is aiohttp.WSMsgType.TEXT:
                yield SessionMessage(message.data, events_of(message.data))
            elif message.type is aiohttp.WSMsgType.BINARY:
                yield SessionMessage(message.data)
            elif message.type is aiohttp.WSMsgType.ERROR:
                raise UpstreamError(f"the upstream Realtime session failed: {message.data!r}"[:300])
            else:  # closing or closed
                code = ws.close_code
                if code not in (None, 1000):
                    raise UpstreamError(f"the upstream closed the Realtime session ({code})")
                return

    async def cancel_responses(self) -> None:
        await self.send('{"type":"response.cancel"}')

    async def close(self) -> None:
        if not self.ws.closed:
            await self.ws.close()


def events_of(text: str) -> tuple[StreamEvent, ...]:
    """The core events of one upstream message (most carry none and are not parsed)."""
    found = _TYPE.search(text, 0, _HEAD)
    if found is None:
        return ()
    kind = found.group(1)
    if kind == "response.created":
        return (StreamStart("", ""),)
    if kind in _TEXT_DELTAS:
        delta = _parsed(text).get("delta")
        return (PartDelta(0, delta),) if isinstance(delta, str) and delta else ()
    if kind == "response.done":
        response = _parsed(text).get("response")
        usage = usage_of(response.get("usage")) if isinstance(response, dict) else None
        return ((UsageReport(usage),) if usage is not None else ()) + (StreamFinish(StopReason.END_TURN),)
    return ()


def usage_of(usage: Any) -> Usage | None:
    """The core usage of a Realtime ``usage`` object (``None``: absent or implausible)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_token_details") if isinstance(usage.get("input_token_details"), dict) else {}
    try:
        return Usage(
            input_tokens=token_count(usage.get("input_tokens")),
            output_tokens=token_count(usage.get("output_tokens")),
            cached_input_tokens=token_count(details.get("cached_tokens")),
        )
    except ImplausibleUsage:
        return None


def _parsed(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
