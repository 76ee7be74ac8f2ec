"""The ``gemini`` channel type: the Gemini API (``generativelanguage.googleapis.com``)
or a server speaking its wire format.

The channel's key goes in ``x-goog-api-key`` (never the client's), the mapped model
in the path: ``{base}/{version}/models/{model}:generateContent``,
``:streamGenerateContent?alt=sse`` (streams are always read as server-sent events),
``:countTokens``, ``:embedContent``, ``:batchEmbedContents`` (also for other
protocols' embeddings, converted through the core). ``version`` is the
channel setting ``api_version`` (``v1beta``, the default, ``v1`` or ``v1alpha``).
The base URL is stored without a trailing ``/v1beta`` or ``/v1``.

Channel settings (:data:`SETTINGS`): ``api_version``; ``thought_signature_placeholder``
(default ``skip_thought_signature_validator``, the value Google documents for
function calls that did not come from Gemini with a signature, which Gemini 3
requires; ``""`` sends none). A client of another protocol gets each call's
signature folded into the call's id and sends it back with it
(:mod:`gateway_gemini.content`): only calls that never had one get the placeholder.

Its extension point (for a type serving Gemini's wire elsewhere, such as Vertex AI):
:meth:`GeminiChannel.upstream_url`, :meth:`GeminiChannel.auth_headers` and
:meth:`GeminiChannel.count_body`.

Upstream errors go through :func:`gateway_core.upstream.error_for_status`, except
that a 4xx about the channel's own key or project (``API_KEY_INVALID``,
``FAILED_PRECONDITION`` …) is the channel's failure, a retryable 502, and that a
429's ``RetryInfo.retryDelay`` becomes the error's retry-after.
"""

from __future__ import annotations

from urllib.parse import quote

import orjson

from gateway_core import (
    ChannelType,
    Exchange,
    Frame,
    InvalidRequestError,
    JsonReply,
    ModelQuery,
    Reply,
    Setting,
    StreamReply,
    Target,
    UpstreamError,
    Usage,
    endpoints,
)
from gateway_core.errors import GatewayError, excerpt
from gateway_core.model import ChatRequest, EmbeddingsRequest
from gateway_core.sse import frame_fields
from gateway_core.upstream import parse_answer, parse_frame_json, post, read_all, sse_frames

from .count_tokens import count_body_to_wire, count_from_wire, count_response, passthrough_count_body
from .embeddings import BATCH_EMBED_CONTENTS, embed_body_to_wire, embed_usage, embeddings_from_wire, passthrough_embed_body
from .error_body import channel_fault, retry_delay, upstream_error_message
from .listing import list_models
from .protocol import COUNT_TOKENS_WIRE, EMBED_WIRE, GENERATE_WIRE
from .request import request_to_wire
from .response import response_from_wire, usage_from_wire
from .stream import ChunkDecoder
from .wire import JSON, field

WIRES = {endpoints.CHAT: GENERATE_WIRE, endpoints.COUNT_TOKENS: COUNT_TOKENS_WIRE, endpoints.EMBEDDINGS: EMBED_WIRE}
DEFAULT_API_VERSION = "v1beta"
DEFAULT_PLACEHOLDER = "skip_thought_signature_validator"
API_VERSION = Setting(
    "api_version", "choice", default=DEFAULT_API_VERSION, choices=(DEFAULT_API_VERSION, "v1", "v1alpha"),
    help="the API version in the upstream's paths",
)  # fmt: skip
SIGNATURE_PLACEHOLDER = Setting(
    "thought_signature_placeholder", "str", default=DEFAULT_PLACEHOLDER,
    help="the thought signature sent with function calls that came without one",
)  # fmt: skip
SETTINGS = (API_VERSION, SIGNATURE_PLACEHOLDER)


def strip_version(base_url: str) -> str:
    """``https://generativelanguage.googleapis.com/v1beta/`` → ``https://generativelanguage.googleapis.com``."""
    url = base_url.rstrip("/")
    for suffix in ("/v1beta", "/v1"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def model_path(model: str) -> str:
    """The path segment of an upstream model (``models/`` prefix dropped, quoted)."""
    return quote(model.removeprefix("models/"), safe="-._~")


class GeminiChannel(ChannelType):
    name = "gemini"
    settings = SETTINGS

    def wire(self, endpoint: str) -> str | None:
        return WIRES.get(endpoint)

    def normalize_base_url(self, base_url: str) -> str:
        return strip_version(base_url)

    async def send(self, exchange: Exchange) -> Reply:
        call, target = exchange.call, exchange.target
        upstream = target.upstream_model
        method, body = self._method_and_body(exchange)
        url = self.upstream_url(target, method)
        headers = {**await self.auth_headers(exchange), "Content-Type": "application/json"}  # the core adds the channel's
        if call.stream:
            url += "?alt=sse"
            headers["Accept"] = "text/event-stream"
        try:
            response = await post(exchange, url, headers=headers, body=orjson.dumps(body), error_message=upstream_error_message)
        except GatewayError as error:
            raise _channel_error(error) from None
        if call.stream:
            frames = sse_frames(response, FrameDecoder(echo=not exchange.passthrough).decode)
            return StreamReply(frames=frames, close=frames.aclose)
        data = await read_all(response)
        answer = parse_answer(data)
        if call.endpoint == endpoints.COUNT_TOKENS:  # counting is free: never billed
            if exchange.passthrough:
                return JsonReply(body=data, response=None, usage=Usage())
            return JsonReply(body=None, response=count_response(count_from_wire(answer), upstream), usage=Usage())
        if call.endpoint == endpoints.EMBEDDINGS:
            if exchange.passthrough:
                usage, estimated = embed_usage(answer, call.body)
                return JsonReply(body=data, response=None, usage=usage, estimated=estimated)
            usage, estimated = embed_usage(answer, body)
            return JsonReply(body=None, response=embeddings_from_wire(answer, usage), usage=usage, estimated=estimated)
        usage = usage_from_wire(field(answer, "usageMetadata"))
        if exchange.passthrough:
            return JsonReply(body=data, response=None, usage=usage, model=field(answer, "modelVersion"))
        try:
            converted = response_from_wire(answer, echo=True)
        except InvalidRequestError as error:  # the shared readers of parts say 400: here it is the upstream's fault
            raise malformed_answer(error, data) from None
        return JsonReply(body=None, response=converted, usage=usage)

    def upstream_url(self, target: Target, method: str) -> str:
        """The URL of one upstream call of ``method`` (``generateContent``,
        ``streamGenerateContent``, ``countTokens``, ``embedContent``,
        ``batchEmbedContents``) for ``target.upstream_model``; a stream's
        ``?alt=sse`` is added after. Default: the Gemini API's
        ``{base}/{api_version}/models/{model}:{method}``."""
        version = API_VERSION.read(target.channel.settings)
        return f"{target.channel.base_url}/{version}/models/{model_path(target.upstream_model)}:{method}"

    async def auth_headers(self, exchange: Exchange) -> dict[str, str]:
        """The headers that authenticate one upstream call with the target's key;
        awaited once per attempt, so it may fetch or refresh a token. Default:
        ``x-goog-api-key``."""
        return {"x-goog-api-key": exchange.target.api_key}

    def count_body(self, request: ChatRequest, upstream_model: str) -> JSON:
        """The ``countTokens`` body for another protocol's count. Default: the
        Gemini API's ``{"generateContentRequest": {"model": …, …}}``."""
        return count_body_to_wire(request, upstream_model)

    async def list_models(self, query: ModelQuery) -> list[str]:
        return await list_models(query, API_VERSION.read(query.channel.settings))  # GET /{version}/models (listing.py)

    def _method_and_body(self, exchange: Exchange) -> tuple[str, JSON]:
        call, upstream = exchange.call, exchange.target.upstream_model
        if call.endpoint == endpoints.EMBEDDINGS:
            if isinstance(exchange.request, EmbeddingsRequest):  # another protocol's, through the core
                return BATCH_EMBED_CONTENTS, embed_body_to_wire(exchange.request, upstream)
            if not exchange.passthrough:
                raise UpstreamError("a gemini channel was handed an embeddings request it cannot read")
            return str(call.options.get("method")), passthrough_embed_body(call.body, upstream)
        if exchange.passthrough:
            return self._passthrough_method_and_body(exchange)
        if not isinstance(exchange.request, ChatRequest):
            raise UpstreamError("a gemini channel was handed a request it cannot read")
        if call.endpoint == endpoints.COUNT_TOKENS:
            return "countTokens", self.count_body(exchange.request, upstream)
        placeholder = SIGNATURE_PLACEHOLDER.read(exchange.target.channel.settings)
        method = "streamGenerateContent" if call.stream else "generateContent"
        return method, request_to_wire(exchange.request, signature_placeholder=placeholder, model=upstream)

    def _passthrough_method_and_body(self, exchange: Exchange) -> tuple[str, JSON]:
        call, upstream = exchange.call, exchange.target.upstream_model
        if call.endpoint == endpoints.COUNT_TOKENS:
            return "countTokens", passthrough_count_body(call.body, upstream)
        method = "streamGenerateContent" if call.stream else "generateContent"
        if "model" in call.body:  # some clients repeat the URL's model in the body
            return method, {**call.body, "model": f"models/{upstream}"}
        return method, call.body


def _channel_error(error: GatewayError) -> GatewayError:
    status, body = error.upstream_status, (error.upstream_body or "").encode()
    if status is None:
        return error
    if channel_fault(status, body):
        replaced = UpstreamError(f"the upstream refused the channel's credentials: {error.message}", retryable=True)
        replaced.upstream_status, replaced.upstream_body = status, error.upstream_body
        replaced.key_refused = True  # the relay disables this key of the channel
        return replaced
    if status == 429 and error.retry_after is None:
        error.retry_after = retry_delay(body)
    return error


def malformed_answer(error: InvalidRequestError, data: bytes | str) -> UpstreamError:
    """A 502 for an upstream answer whose parts have the wrong shape (never the client's 400)."""
    failed = UpstreamError(f"the upstream's answer is malformed: {error.message}")
    failed.upstream_body = excerpt(data)
    return failed


class FrameDecoder:
    """Decodes one upstream stream's SSE frames into core events."""

    __slots__ = ("_chunks",)

    def __init__(self, *, echo: bool = False) -> None:
        self._chunks = ChunkDecoder(echo=echo)

    def decode(self, raw: bytes) -> Frame:
        _, data = frame_fields(raw)
        if not data.strip():
            return Frame(raw)  # a comment or keep-alive
        chunk = parse_frame_json(data)
        try:
            events = self._chunks.feed(chunk)
        except UpstreamError as error:
            error.upstream_body = excerpt(data)
            raise
        except InvalidRequestError as error:  # the shared readers of parts say 400: here it is the upstream's fault
            raise malformed_answer(error, data) from None
        return Frame(raw, tuple(events))
