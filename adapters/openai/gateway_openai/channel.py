"""The ``openai`` channel type: an OpenAI (or OpenAI-compatible) upstream.

It serves chat, Responses, embeddings, images, audio, legacy completions and
moderations. Chat is in this module, the others in :mod:`.channel_media` and
:mod:`.channel_text`. A Responses request is a
chat call in the core's terms: a channel that speaks the Responses API natively
(:func:`~.channel_responses.speaks_responses`) forwards it as it came (the relay
converted it to a core request too, which such a channel does not use); any
other channel sends the core request as a Chat Completions request, and the
client's writer turns the answer back into Responses events. A request that
needs conversation state (``previous_response_id`` …) reaches only this
channel type, and a chat-only channel refuses it with a 400 (give such a channel
``endpoints`` without ``responses`` to have the router skip it for those).

Channel settings: ``responses`` (a bool: whether the upstream serves
``/v1/responses``; default: whether the channel's declared ``endpoints`` name
``responses``, and with none declared, only ``api.openai.com`` does);
``max_tokens_param`` (the Chat Completions field a converted request's output cap
goes in: ``max_completion_tokens``, the default, which every OpenAI model takes and
its reasoning models require, or ``max_tokens`` for older compatible servers).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import (
    ChannelType,
    Exchange,
    InvalidRequestError,
    JsonReply,
    ModelQuery,
    Reply,
    Setting,
    StreamReply,
    Target,
    UpstreamError,
    endpoints,
)
from gateway_core.echo_ids import SEPARATOR, plain_id
from gateway_core.model import ChatRequest
from gateway_core.sessions import UpstreamSession
from gateway_core.upstream import parse_answer, post, read_all, sse_frames

from .calls import (
    CHAT_WIRE,
    EMBEDDINGS_WIRE,
    IMAGE_EDITS_WIRE,
    IMAGES_WIRE,
    RESPONSES_WIRE,
    SPEECH_WIRE,
    TRANSCRIPTIONS_WIRE,
    TRANSLATIONS_WIRE,
)
from .channel_media import send_media
from .channel_responses import RESPONSES, send_responses, speaks_responses
from .channel_text import PATHS as TEXT_PATHS
from .channel_text import send_text
from .chat_request import request_to_wire
from .chat_response import response_from_wire, usage_from_wire
from .chat_stream import FrameDecoder
from .completions import COMPLETIONS_WIRE
from .error_body import upstream_error_message
from .listing import list_models
from .moderations import MODERATIONS_WIRE
from .protocol import stateful_message
from .realtime import REALTIME_WIRE, open_upstream

WIRES = {
    endpoints.CHAT: CHAT_WIRE,
    endpoints.RESPONSES: RESPONSES_WIRE,
    endpoints.EMBEDDINGS: EMBEDDINGS_WIRE,
    endpoints.IMAGES_GENERATIONS: IMAGES_WIRE,
    endpoints.IMAGES_EDITS: IMAGE_EDITS_WIRE,
    endpoints.AUDIO_SPEECH: SPEECH_WIRE,
    endpoints.AUDIO_TRANSCRIPTIONS: TRANSCRIPTIONS_WIRE,
    endpoints.REALTIME: REALTIME_WIRE,
    endpoints.AUDIO_TRANSLATIONS: TRANSLATIONS_WIRE,
    endpoints.COMPLETIONS: COMPLETIONS_WIRE,
    endpoints.MODERATIONS: MODERATIONS_WIRE,
}
CHAT_PATH = "/v1/chat/completions"
MAX_TOKENS_PARAM = Setting(
    "max_tokens_param", "choice", default="max_completion_tokens", choices=("max_completion_tokens", "max_tokens"),
    help="the chat field a request converted from another protocol carries its output cap in",
)  # fmt: skip


def strip_version(base_url: str) -> str:
    """``https://api.openai.com/v1/`` → ``https://api.openai.com``: the path adds ``/v1``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class OpenAIChannel(ChannelType):
    """The ``openai`` channel type, and the base of channel types whose upstream
    speaks OpenAI's wire format at other URLs or with other credentials.

    Its extension point is two methods (``docs/adapters/openai.md``, "Extending the
    openai channel type"): :meth:`upstream_url` says where each call goes and
    :meth:`auth_headers` how it is authenticated; everything else (the conversion,
    streaming, usage, errors) is this type's. A subclass sets its own ``name``,
    ``settings`` and, when it serves fewer endpoints, :meth:`wire`.
    """

    name = "openai"
    settings: tuple[Setting, ...] = (RESPONSES, MAX_TOKENS_PARAM)

    def wire(self, endpoint: str) -> str | None:
        return WIRES.get(endpoint)

    def normalize_base_url(self, base_url: str) -> str:
        return strip_version(base_url)

    def upstream_url(self, target: Target, path: str) -> str:
        """The URL of one upstream call. ``path`` is OpenAI's own, starting with
        ``/v1/`` (``/v1/chat/completions``, ``/v1/responses/{id}`` with the id
        quoted); ``target`` is the channel and its mapped model
        (``target.upstream_model``). Default: the channel's base URL and ``path``."""
        return target.channel.base_url + path

    async def auth_headers(self, exchange: Exchange) -> dict[str, str]:
        """The headers that authenticate one upstream call with the target's key
        (``exchange.target.api_key``); the core adds the channel's own headers.
        Awaited once per attempt, so it may fetch or refresh a token (through
        ``exchange.session``). Default: ``Authorization: Bearer <key>``."""
        return {"Authorization": f"Bearer {exchange.target.api_key}"}

    async def open_session(self, exchange: Exchange) -> UpstreamSession:
        return await open_upstream(exchange)  # the Realtime API (realtime.py)

    async def list_models(self, query: ModelQuery) -> list[str]:
        return await list_models(query)  # GET /v1/models (listing.py)

    async def send(self, exchange: Exchange) -> Reply:
        target, call = exchange.target, exchange.call
        channel = target.channel
        headers = await self.auth_headers(exchange)

        def url(path: str) -> str:
            return self.upstream_url(target, path)

        if call.wire == RESPONSES_WIRE:
            if speaks_responses(channel):
                return await send_responses(exchange, _json_headers(headers, call.stream), url)
            if call.endpoint == endpoints.RESPONSES:  # needs state: only a native channel may serve it
                raise InvalidRequestError(stateful_message(call.model, str(call.options.get("stateful"))))
        elif call.endpoint in TEXT_PATHS:
            body = passthrough_body(call.body, target.upstream_model, call.stream)
            return await send_text(exchange, _json_headers(headers, call.stream), body, url)
        elif call.endpoint != endpoints.CHAT:
            return await send_media(exchange, headers, url)
        return await self._chat(exchange, _json_headers(headers, call.stream))

    async def _chat(self, exchange: Exchange, headers: dict[str, str]) -> Reply:
        target, call = exchange.target, exchange.call
        if exchange.passthrough:
            body = passthrough_body(call.body, target.upstream_model, call.stream)
        elif isinstance(exchange.request, ChatRequest):
            field = str(MAX_TOKENS_PARAM.read(target.channel.settings))
            body = request_to_wire(exchange.request, target.upstream_model, max_tokens_field=field)
        else:
            raise UpstreamError("an openai channel was handed a request it cannot convert to chat")
        url = self.upstream_url(target, CHAT_PATH)
        response = await post(exchange, url, headers=headers, body=orjson.dumps(body), error_message=upstream_error_message)
        if call.stream:
            frames = sse_frames(response, FrameDecoder().decode)
            return StreamReply(frames=frames, close=frames.aclose)
        data = await read_all(response)
        answer = parse_answer(data)
        usage = usage_from_wire(answer.get("usage"))
        if exchange.passthrough:
            # no usage reported: parse the answer so that its content (not its JSON) is counted
            parsed = response_from_wire(answer) if usage is None else None
            return JsonReply(body=data, response=parsed, usage=usage, model=answer.get("model"))
        return JsonReply(body=None, response=response_from_wire(answer), usage=usage)


def _json_headers(headers: dict[str, str], stream: bool) -> dict[str, str]:
    out = {**headers, "Content-Type": "application/json"}
    if stream:
        out["Accept"] = "text/event-stream"
    return out


def passthrough_body(body: dict[str, Any], model: str, stream: bool) -> dict[str, Any]:
    """The client's body with the upstream model, asking for usage when streaming,
    and tool-call ids without data another channel folded into them."""
    out = dict(body)
    out["model"] = model
    if isinstance(body.get("messages"), list):
        out["messages"] = plain_chat_ids(body["messages"])
    if stream:
        options = out.get("stream_options")
        out["stream_options"] = {**options, "include_usage": True} if isinstance(options, dict) else {"include_usage": True}
    return out




def plain_chat_ids(messages: list[Any]) -> list[Any]:
    """Chat ``messages`` whose ``tool_calls[].id`` and ``tool_call_id`` are without a
    token another channel folded in (:mod:`gateway_core.echo_ids`: a Gemini thought
    signature, foreign here and too long for OpenAI's 40-character ids); the same
    list when none has one."""
    out = list(messages)
    changed = False
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        call_id = message.get("tool_call_id")
        calls = message.get("tool_calls")
        if isinstance(call_id, str) and SEPARATOR in call_id:
            out[i] = message = {**message, "tool_call_id": plain_id(call_id)}
            changed = True
        if isinstance(calls, list) and any(isinstance(c, dict) and SEPARATOR in str(c.get("id")) for c in calls):
            plain = [{**c, "id": plain_id(c["id"])} if isinstance(c, dict) and isinstance(c.get("id"), str) else c for c in calls]
            out[i] = {**message, "tool_calls": plain}
            changed = True
    return out if changed else messages
