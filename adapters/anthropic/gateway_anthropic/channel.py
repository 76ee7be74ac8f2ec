"""The ``anthropic`` channel type: an Anthropic (or Anthropic-compatible) upstream.

It sends the channel's key as ``x-api-key`` (never the client's) with an
``anthropic-version``: on the fast path the client's own ``anthropic-version`` and
``anthropic-beta`` are passed on; otherwise the channel's ``anthropic-version``
header if it has one, else ``2023-06-01``. A base URL ending in ``/v1`` is stored
without it. Requests converted from another protocol that leave ``max_tokens`` out
get the channel setting ``default_max_tokens``, whose default is the plugin's (4096
unless ``plugins.toml`` says otherwise). Upstream errors follow the core's rules
(:func:`gateway_core.upstream.error_for_status`): 529 and 503 are "unavailable",
other 5xx "upstream", both retried on another channel before the first byte.

Its extension point (for a type serving Anthropic's wire elsewhere, such as Vertex
AI or Bedrock): :meth:`AnthropicChannel.upstream_request`,
:meth:`AnthropicChannel.auth_headers`, :meth:`AnthropicChannel.post` (a type that signs
the whole request) and :meth:`AnthropicChannel.stream_frames` (a type whose stream is
framed otherwise), and :class:`FrameDecoder` (one Anthropic stream event's SSE bytes
into core events).

Per-model parameter rules (:mod:`.model_rules`: ``top_p`` left out beside
``temperature`` for the models that refuse the pair) apply to converted requests
always, and to Anthropic clients' own requests when the channel setting
``parameter_rules`` is on.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import attrs
import orjson

from gateway_core import (
    ChannelRecord,
    ChannelType,
    ChatRequest,
    ChatResponse,
    Exchange,
    Frame,
    InvalidRequestError,
    JsonReply,
    ModelQuery,
    Reply,
    Setting,
    StreamReply,
    Target,
    Usage,
    endpoints,
)
from gateway_core.echo_ids import SEPARATOR, plain_id
from gateway_core.model import PartDelta
from gateway_core.sse import TextTemplate, frame_fields
from gateway_core.upstream import FrameStream, parse_answer, parse_frame_json, post, read_all, sse_frames

from .delta_frames import delta_template
from .error_body import upstream_error_message
from .listing import list_models
from .messages_request import DEFAULT_MAX_TOKENS, request_to_wire
from .messages_response import response_from_wire, usage_from_wire
from .messages_stream import EventDecoder
from .model_rules import apply_rules
from .protocol import COUNT_TOKENS_WIRE, MESSAGES_WIRE

DEFAULT_VERSION = "2023-06-01"
PATHS = {endpoints.CHAT: "/v1/messages", endpoints.COUNT_TOKENS: "/v1/messages/count_tokens"}
COUNTED_FIELDS = ("model", "messages", "system", "tools", "tool_choice", "thinking")  # what count_tokens takes of a Messages body
WIRES = {endpoints.CHAT: MESSAGES_WIRE, endpoints.COUNT_TOKENS: COUNT_TOKENS_WIRE}


def strip_version(base_url: str) -> str:
    """``https://api.anthropic.com/v1/`` → ``https://api.anthropic.com``: the path adds ``/v1``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


MAX_TOKENS = Setting(
    "default_max_tokens", "int", default=DEFAULT_MAX_TOKENS, min=1,
    help="max_tokens for requests from other protocols that leave it out",
)  # fmt: skip


PARAMETER_RULES = Setting(
    "parameter_rules", "bool", default=False,
    help="also apply the per-model parameter rules (top_p dropped beside temperature for Claude 4.5+) to Anthropic clients' own requests",
)  # fmt: skip


class AnthropicChannel(ChannelType):
    name = "anthropic"
    settings = (MAX_TOKENS, PARAMETER_RULES)

    def __init__(self, default_max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        self.max_tokens_setting = attrs.evolve(MAX_TOKENS, default=default_max_tokens)
        self.settings = (self.max_tokens_setting, PARAMETER_RULES)

    def wire(self, endpoint: str) -> str | None:
        return WIRES.get(endpoint)

    def normalize_base_url(self, base_url: str) -> str:
        return strip_version(base_url)

    async def send(self, exchange: Exchange) -> Reply:
        target, call = exchange.target, exchange.call
        channel = target.channel
        if exchange.passthrough:
            body = {**call.body, "model": target.upstream_model}
            if isinstance(body.get("messages"), list):
                body["messages"] = plain_block_ids(body["messages"])
            if call.endpoint == endpoints.CHAT and PARAMETER_RULES.read(channel.settings):
                body = apply_rules(body, target.upstream_model)
            options = call.options
        elif call.endpoint == endpoints.CHAT and isinstance(exchange.request, ChatRequest):
            body = request_to_wire(exchange.request, target.upstream_model, default_max_tokens=self.max_tokens(channel))
            body = apply_rules(body, target.upstream_model)
            options = {}
        elif call.endpoint == endpoints.COUNT_TOKENS and isinstance(exchange.request, ChatRequest):  # another protocol's count
            full = request_to_wire(exchange.request, target.upstream_model, default_max_tokens=self.max_tokens(channel))
            body = {name: value for name, value in full.items() if name in COUNTED_FIELDS}
            options = {}
        else:
            raise InvalidRequestError(f"The endpoint '{call.endpoint}' of an anthropic channel serves Anthropic clients only.")
        url, body = self.upstream_request(target, call.endpoint, body, call.stream, options)
        headers = upstream_headers(channel, target.api_key, options, call.stream)
        del headers["x-api-key"]
        headers.update(await self.auth_headers(exchange))
        response = await self.post(exchange, url, headers, orjson.dumps(body))
        if call.stream:
            frames = self.stream_frames(response)
            return StreamReply(frames=frames, close=frames.aclose)
        data = await read_all(response)
        answer = parse_answer(data)
        if call.endpoint == endpoints.COUNT_TOKENS:  # counting is free: no usage to bill
            if exchange.passthrough:
                return JsonReply(body=data, response=None, usage=Usage())
            counted = Usage(input_tokens=int(answer.get("input_tokens") or 0))
            return JsonReply(body=None, response=ChatResponse(id="", model=target.upstream_model, parts=(), stop_reason=None, usage=counted), usage=Usage())
        usage = usage_from_wire(answer.get("usage"))
        if exchange.passthrough:
            return JsonReply(body=data, response=None, usage=usage, model=answer.get("model"))
        return JsonReply(body=None, response=response_from_wire(answer), usage=usage)

    def upstream_request(self, target: Target, endpoint: str, body: dict[str, Any], stream: bool, options: Any) -> tuple[str, dict[str, Any]]:
        """The URL and body of one upstream call to ``endpoint`` (``endpoints.CHAT``
        or ``endpoints.COUNT_TOKENS``); ``body`` is the Messages body with the mapped
        model. Default: Anthropic's ``{base}/v1/messages`` (a client's ``?beta=`` kept)
        and the body as it is."""
        url = target.channel.base_url + PATHS[endpoint]
        if options.get("beta"):
            url += "?beta=" + options["beta"]
        return url, body

    async def auth_headers(self, exchange: Exchange) -> dict[str, str]:
        """The headers that authenticate one upstream call with the target's key;
        awaited once per attempt, so it may fetch or refresh a token. Default:
        ``x-api-key``."""
        return {"x-api-key": exchange.target.api_key}

    async def post(self, exchange: Exchange, url: str, headers: dict[str, str], body: bytes) -> aiohttp.ClientResponse:
        """Send one upstream call (``headers`` with :meth:`auth_headers`'s, ``body``
        the JSON as sent) and return the successful response; an error status raises
        the gateway error. Default: :func:`gateway_core.upstream.post` reading
        Anthropic's error bodies."""
        return await post(exchange, url, headers=headers, body=body, error_message=upstream_error_message)

    def stream_frames(self, response: aiohttp.ClientResponse) -> FrameStream:
        """The frames of a streamed answer, each decoded into core events with its
        raw bytes as Anthropic's SSE (what an Anthropic client is sent as it is).
        Default: the response's own SSE."""
        return sse_frames(response, FrameDecoder().decode)

    async def list_models(self, query: ModelQuery) -> list[str]:
        headers = upstream_headers(query.channel, query.api_key, {}, False)
        del headers["content-type"]  # a GET carries no body
        return await list_models(query, headers)  # GET /v1/models, page by page (listing.py)

    def max_tokens(self, channel: ChannelRecord) -> int:
        return int(self.max_tokens_setting.read(channel.settings))


def upstream_headers(channel: ChannelRecord, api_key: str, options: Any, stream: bool) -> dict[str, str]:
    """The key, the version and the betas (the channel's own ``anthropic-version``
    and ``anthropic-beta`` headers taken into account); the core adds the channel's
    other headers."""
    own = {name.lower(): value for name, value in channel.headers.items()}
    headers = {"x-api-key": api_key}
    headers["anthropic-version"] = options.get("anthropic_version") or own.get("anthropic-version") or DEFAULT_VERSION
    betas = [b for b in (own.get("anthropic-beta"), options.get("anthropic_beta")) if b]
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    headers["content-type"] = "application/json"
    if stream:
        headers["accept"] = "text/event-stream"
    return headers


class FrameDecoder:
    """Decodes one upstream stream's frames into core events; the text delta frames
    of one block by their bytes, once the first has made the stream's template
    (:mod:`gateway_anthropic.delta_frames`)."""

    __slots__ = ("_events", "_template", "_tries")

    def __init__(self) -> None:
        self._events = EventDecoder()
        self._template: TextTemplate | None = None
        self._tries = 0  # text delta frames offered as the template

    def decode(self, raw: bytes) -> Frame:
        template = self._template
        if template is not None and self._events.takes_text(template.index):
            text = template.text(raw)
            if text is not None:
                return Frame(raw, (PartDelta(template.index, text),) if text else ())
        name, data = frame_fields(raw)
        if not data:
            return Frame(raw)  # a comment or keep-alive
        payload = parse_frame_json(data)
        if name and "type" not in payload:
            payload = {**payload, "type": name}
        events = self._events.feed(payload, raw)
        if template is None and self._tries < _TRIES and name == "content_block_delta" and len(events) == 1:
            delta = events[0]
            wire_delta = payload.get("delta")
            if isinstance(delta, PartDelta) and isinstance(wire_delta, dict) and wire_delta.get("type") == "text_delta":
                self._tries += 1
                self._template = delta_template(raw, payload, delta.text, delta.index)
                if self._template is not None:
                    self._tries = _TRIES
        return Frame(raw, tuple(events), terminal=payload.get("type") == "message_stop")


_TRIES = 3  # text delta frames a stream may offer as its template before the decoder stops trying


_ID_FIELDS = {"tool_use": "id", "server_tool_use": "id", "tool_result": "tool_use_id"}


def plain_block_ids(messages: list[Any]) -> list[Any]:
    """``messages`` whose ``tool_use`` and ``tool_result`` ids are without a token
    another channel folded in (:mod:`gateway_core.echo_ids`: a Gemini thought
    signature, foreign here); the same list when none has one."""
    out = list(messages)
    changed = False
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or not any(_folded(block) for block in content):
            continue
        blocks = [_plain(block) if _folded(block) else block for block in content]
        out[i] = {**message, "content": blocks}
        changed = True
    return out if changed else messages


def _folded(block: Any) -> bool:
    key = _ID_FIELDS.get(str(block.get("type"))) if isinstance(block, dict) else None
    return key is not None and isinstance(block.get(key), str) and SEPARATOR in block[key]


def _plain(block: dict[str, Any]) -> dict[str, Any]:
    key = _ID_FIELDS[block["type"]]
    return {**block, key: plain_id(block[key])}
