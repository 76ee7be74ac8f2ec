"""The OpenAI client protocol: the routes OpenAI-style clients call, in their shapes.

Routes (under ``/v1``): ``chat/completions``, ``responses`` (and ``responses/{id}``,
:mod:`.responses_kept`; over a WebSocket too, :mod:`.responses_socket`), ``realtime`` (WebSocket, :mod:`.realtime`), ``embeddings``,
``images/generations``, ``images/edits``, ``audio/transcriptions`` and
``audio/translations`` (uploads, streamed to the upstream, at most
``max_upload_bytes``), ``audio/speech``, ``completions`` (legacy),
``moderations``, ``rerank`` (the Cohere/Jina shape, served by ``rerank``
channels), and ``GET models``. Parsing is in :mod:`.calls` and the endpoint's
own module (``completions``, ``moderations``, ``rerank``); each endpoint's
translations in its own module (``chat_*``, ``responses_*``, ``embeddings``,
``media``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from gateway_core import (
    Call,
    Caller,
    ClientProtocol,
    FrameConversation,
    GatewayError,
    InvalidRequestError,
    LocalAnswer,
    ModelInfo,
    NotFoundError,
    RateLimitState,
    RenderedError,
    RouteSpec,
    StreamWriter,
    endpoints,
)
from gateway_core.errors import should_not_retry
from gateway_core.json_body import DEFAULT_LIMITS, JsonLimits, read_json_object
from gateway_core.key_header import bearer_key
from gateway_core.model import ChatResponse, CoreRequest, CoreResponse, EmbeddingsResponse

from . import calls, embeddings, realtime
from .calls import CHAT_WIRE, EMBEDDINGS_WIRE, IMAGE_EDITS_WIRE, IMAGES_WIRE, RESPONSES_WIRE, SPEECH_WIRE, TRANSCRIPTIONS_WIRE
from .chat_request import request_from_wire
from .chat_response import response_to_wire
from .chat_writers import ConvertedChunks, PassthroughChunks
from .completions import completions_call
from .error_body import error_to_wire
from .media import speech_content_type
from .media_writers import AudioWriter, EventsWriter
from .moderations import moderation_call
from .rerank import rerank_call
from .responses_kept import KeptResponses, refusal, shown_body
from .responses_request import request_from_wire as responses_from_wire
from .responses_socket import ResponsesSocket, warmup_answer
from .responses_response import response_to_wire as responses_to_wire
from .responses_writer import ResponsesWriter, log_conversion

DEFAULT_MAX_UPLOAD_BYTES = 50 * 1024 * 1024
_JSON_PARSERS = {
    endpoints.CHAT: calls.chat_call,
    endpoints.RESPONSES: calls.responses_call,
    endpoints.EMBEDDINGS: calls.embeddings_call,
    endpoints.IMAGES_GENERATIONS: calls.image_generation_call,
    endpoints.AUDIO_SPEECH: calls.speech_call,
    endpoints.COMPLETIONS: completions_call,
    endpoints.MODERATIONS: moderation_call,
    endpoints.RERANK: rerank_call,
}
_UPLOAD_PARSERS = {
    endpoints.IMAGES_EDITS: calls.image_edit_call,
    endpoints.AUDIO_TRANSCRIPTIONS: calls.transcription_call,
    endpoints.AUDIO_TRANSLATIONS: calls.transcription_call,
}


class OpenAIProtocol(ClientProtocol):
    name = "openai"

    def __init__(
        self, max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES, limits: JsonLimits = DEFAULT_LIMITS, kept: KeptResponses | None = None
    ) -> None:
        self.max_upload_bytes = max_upload_bytes
        self.limits = limits
        self.kept = kept or KeptResponses()

    def routes(self) -> Sequence[RouteSpec]:
        upload = {"stream_body": True, "max_body_bytes": self.max_upload_bytes}
        return (
            RouteSpec("/v1/chat/completions", endpoints.CHAT),
            RouteSpec("/v1/responses", endpoints.RESPONSES),
            RouteSpec("/v1/responses/{response_id}", endpoints.RESPONSES_STORED, methods=("GET",)),
            RouteSpec("/v1/responses/{response_id}", endpoints.RESPONSES_STORED, methods=("DELETE",)),
            RouteSpec("/v1/embeddings", endpoints.EMBEDDINGS),
            RouteSpec("/v1/images/generations", endpoints.IMAGES_GENERATIONS),
            RouteSpec("/v1/images/edits", endpoints.IMAGES_EDITS, **upload),
            RouteSpec("/v1/audio/speech", endpoints.AUDIO_SPEECH),
            RouteSpec("/v1/audio/transcriptions", endpoints.AUDIO_TRANSCRIPTIONS, **upload),
            RouteSpec("/v1/audio/translations", endpoints.AUDIO_TRANSLATIONS, **upload),
            RouteSpec("/v1/completions", endpoints.COMPLETIONS),
            RouteSpec("/v1/moderations", endpoints.MODERATIONS),
            RouteSpec("/v1/rerank", endpoints.RERANK),
            RouteSpec("/v1/models", endpoints.MODELS, methods=("GET",)),
            RouteSpec("/v1/models/{model:path}", endpoints.MODELS, methods=("GET",)),
            RouteSpec("/v1/realtime", endpoints.REALTIME, methods=("GET",), websocket=True),
            RouteSpec("/v1/responses", endpoints.RESPONSES, methods=("GET",), websocket=True, frames_for="/v1/responses"),
        )

    def read_key(self, headers, query) -> str:
        if "sec-websocket-protocol" in headers:  # a Realtime session from a browser
            return realtime.session_key(headers)
        return bearer_key(headers.get("authorization"))

    def claim(self, path, headers, query) -> int:
        return 1  # the most common shape: the answer for clients nobody else claims

    def parse(self, route, body, headers, query, path_params) -> Call:
        if route.endpoint == endpoints.MODELS:
            return Call(protocol=self.name, endpoint=route.endpoint, wire="openai.models", model="", stream=False, body={}, path_params=path_params)
        if route.endpoint == endpoints.REALTIME:
            return realtime.session_call(headers, query)
        if route.endpoint == endpoints.RESPONSES_STORED:
            body = {"id": path_params.get("response_id", ""), "method": route.methods[0]}
            return Call(protocol=self.name, endpoint=route.endpoint, wire="openai.responses.stored", model="", stream=False, body=body)
        return _JSON_PARSERS[route.endpoint](route, read_json_object(body, self.limits))

    async def parse_upload(self, route, upload, headers, query, path_params) -> Call:
        return await _UPLOAD_PARSERS[route.endpoint](route, upload)

    def to_core(self, call: Call) -> CoreRequest:
        if call.wire == CHAT_WIRE:
            return request_from_wire(call.body)
        if call.wire == RESPONSES_WIRE:
            return responses_from_wire(call.body)
        if call.wire == EMBEDDINGS_WIRE:
            return embeddings.request_from_wire(call.body)
        raise NotFoundError(
            f"The endpoint '{call.endpoint}' is available for '{call.model}' only through OpenAI channels.",
            code=endpoints.UNSUPPORTED_ENDPOINT,
        )

    def render_response(self, call: Call, response: CoreResponse) -> bytes:
        if isinstance(response, EmbeddingsResponse):
            return orjson.dumps(embeddings.response_to_wire(response, call.model, call.options.get("encoding_format", "float")))
        assert isinstance(response, ChatResponse)
        if call.wire == RESPONSES_WIRE:
            log_conversion(call)
            return orjson.dumps(responses_to_wire(response, shown_body(call), call.model))
        return orjson.dumps(response_to_wire(response, call.model))

    def stream_writer(self, call: Call, passthrough: bool) -> StreamWriter:
        if call.wire == RESPONSES_WIRE:
            return ResponsesWriter(call, passthrough)
        if call.wire == SPEECH_WIRE and not call.options.get("sse"):
            return AudioWriter(speech_content_type(str(call.options.get("response_format"))))
        if call.wire in (SPEECH_WIRE, TRANSCRIPTIONS_WIRE, IMAGES_WIRE, IMAGE_EDITS_WIRE):
            return EventsWriter()
        include_usage = bool(call.options.get("include_usage"))
        if passthrough:
            return PassthroughChunks(include_usage)
        return ConvertedChunks(call.model, include_usage)

    def render_models(self, call: Call, models: Sequence[ModelInfo], headers, query) -> bytes:
        wanted = call.path_params.get("model")
        if wanted is not None:  # GET /v1/models/{model}: one model the key may use
            found = next((m for m in models if m.id == wanted), None)
            if found is None:
                raise NotFoundError(f"The model '{wanted}' does not exist or you do not have access to it.", code="model_not_found", param="model")
            return orjson.dumps(_model_object(found))
        return orjson.dumps({"object": "list", "data": [_model_object(m) for m in models]})

    def render_error(self, error: GatewayError, request_id: str) -> RenderedError:
        headers = {"x-should-retry": "false"} if should_not_retry(error) else {}
        return RenderedError(status=error.status, body=orjson.dumps(error_to_wire(error, request_id)), headers=headers)

    async def answer_locally(self, call: Call) -> LocalAnswer | None:
        """A Responses request that needs conversation state, for a model no channel
        speaking Responses serves: refused with a 400 saying why (the gateway keeps
        no state of its own), never answered without its context."""
        reason = call.options.get("stateful")
        if call.wire == RESPONSES_WIRE and reason:
            raise refusal(call) or InvalidRequestError(stateful_message(call.model, reason), param=reason)
        return None

    async def prepare(self, call: Call, caller: Caller) -> Call | LocalAnswer:
        """Kept responses (:mod:`.responses_kept`): a ``previous_response_id`` the
        gateway kept, filled in; ``GET``/``DELETE /v1/responses/{id}`` answered."""
        if call.wire == RESPONSES_WIRE and call.body.get("generate") is False:
            return warmup_answer(call)  # Codex's warm-up: no model call (responses_socket.py)
        if call.wire == RESPONSES_WIRE or call.endpoint == endpoints.RESPONSES_STORED:
            return await self.kept.prepare(call, caller)
        return call

    async def keep(self, call: Call, caller: Caller, answer: bytes | StreamWriter, native: bool) -> None:
        if call.wire == RESPONSES_WIRE:
            if isinstance(answer, ResponsesWriter):  # it saw whether the frames came in the Responses wire
                native = answer.native
            await self.kept.keep(call, caller, answer, native)

    def session_key(self, body: Mapping[str, Any]) -> str | None:
        """The session a body names for affinity: ``prompt_cache_key``, else
        ``metadata.user_id``, else ``user`` (chat completions and responses alike)."""
        value = body.get("prompt_cache_key")
        if not value:
            metadata = body.get("metadata")
            if isinstance(metadata, dict):
                value = metadata.get("user_id")
        if not value:
            value = body.get("user")
        return value if value and isinstance(value, str) else None

    def rate_limit_headers(self, state: RateLimitState) -> list[tuple[bytes, bytes]]:
        return rate_limit_headers(state)

    def session_subprotocol(self, offered: Sequence[str]) -> str | None:
        return realtime.accepted_subprotocol(offered)

    def frame_conversation(self, route: RouteSpec) -> FrameConversation:
        return ResponsesSocket()  # GET /v1/responses over WebSocket (responses_socket.py)

    def session_error(self, error: GatewayError, request_id: str) -> str:
        return realtime.error_event(error, request_id)


def stateful_message(model: str, reason: str) -> str:
    return (
        f"'{reason}' needs the conversation state a Responses API upstream keeps, and '{model}' is served "
        "here by channels that speak only chat (the gateway keeps no conversation state): send the whole "
        "conversation in 'input' instead (with 'store': false)."
    )


def rate_limit_headers(state: RateLimitState) -> list[tuple[bytes, bytes]]:
    """OpenAI's ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers."""
    headers: list[tuple[bytes, bytes]] = []
    for allowance, suffix in ((state.requests, b"requests"), (state.tokens, b"tokens")):
        if allowance is not None:
            headers += [
                (b"x-ratelimit-limit-" + suffix, str(allowance.limit).encode()),
                (b"x-ratelimit-remaining-" + suffix, str(allowance.remaining).encode()),
                (b"x-ratelimit-reset-" + suffix, format_duration(allowance.reset_after).encode()),
            ]
    return headers


def format_duration(seconds: float) -> str:
    """A duration the way OpenAI writes it in ``x-ratelimit-reset-*``: ``"20ms"``,
    ``"1s"``, ``"8.64s"``, ``"6m0s"``, ``"1h2m3s"``."""
    if seconds <= 0:
        return "0s"
    if seconds < 0.9995:
        return f"{max(1, round(seconds * 1000))}ms"
    whole_minutes, rest = divmod(seconds, 60)
    secs = f"{rest:.3f}".rstrip("0").rstrip(".")
    if secs == "60":  # 59.9996 rounds up into the next minute
        whole_minutes, secs = whole_minutes + 1, "0"
    if not whole_minutes:
        return f"{secs}s"
    hours, minutes = divmod(int(whole_minutes), 60)
    return f"{hours}h{minutes}m{secs}s" if hours else f"{minutes}m{secs}s"


def _model_object(model: ModelInfo) -> dict[str, Any]:
    return {"id": model.id, "object": "model", "created": model.created, "owned_by": model.owned_by}
