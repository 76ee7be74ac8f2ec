"""The OpenAI client protocol: the routes OpenAI-style clients call, in their shapes."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from gateway_core import (
    Call,
    ChatRequest,
    ChatResponse,
    ClientProtocol,
    Frame,
    GatewayError,
    InvalidRequestError,
    ModelInfo,
    RateLimitState,
    RenderedError,
    RouteSpec,
    StreamStart,
    StreamWriter,
    UsageReport,
    endpoints,
)
from gateway_core.key_header import bearer_key

from .chat_request import request_from_wire
from .chat_response import response_to_wire
from .chat_stream import ChunkEncoder
from .error_body import error_to_wire

CHAT_WIRE = "openai.chat"
DONE = b"data: [DONE]\n\n"


def parse_json_object(body: bytes) -> dict[str, Any]:
    if not body:
        raise InvalidRequestError("The request body is empty; send a JSON object.")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequestError(f"The request body is not valid JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise InvalidRequestError("The request body must be a JSON object.")
    return data


def required_model(data: Mapping[str, Any]) -> str:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("The request needs a 'model' (a non-empty string).", param="model")
    return model


def stream_flag(data: Mapping[str, Any]) -> bool:
    stream = data.get("stream", False)
    if stream is None:
        return False
    if not isinstance(stream, bool):
        raise InvalidRequestError("'stream' must be true or false.", param="stream")
    return stream


class OpenAIProtocol(ClientProtocol):
    name = "openai"

    def routes(self) -> Sequence[RouteSpec]:
        return (
            RouteSpec("/v1/chat/completions", endpoints.CHAT),
            RouteSpec("/v1/models", endpoints.MODELS, methods=("GET",)),
        )

    def read_key(self, headers, query) -> str:
        return bearer_key(headers.get("authorization"))

    def claim(self, path, headers, query) -> int:
        return 1  # the most common shape: the answer for clients nobody else claims

    def parse(self, route, body, headers, query, path_params) -> Call:
        if route.endpoint == endpoints.MODELS:
            return Call(protocol=self.name, endpoint=route.endpoint, wire="openai.models", model="", stream=False, body={})
        data = parse_json_object(body)
        model = required_model(data)
        stream = stream_flag(data)
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise InvalidRequestError("'messages' must be a non-empty list.", param="messages")
        options = {}
        if stream:
            stream_options = data.get("stream_options")
            options["include_usage"] = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
        return Call(protocol=self.name, endpoint=route.endpoint, wire=CHAT_WIRE, model=model, stream=stream, body=data, options=options)

    def to_core(self, call: Call) -> ChatRequest:
        return request_from_wire(call.body)

    def render_response(self, call: Call, response: ChatResponse) -> bytes:
        return orjson.dumps(response_to_wire(response, call.model))

    def stream_writer(self, call: Call, passthrough: bool) -> StreamWriter:
        include_usage = bool(call.options.get("include_usage"))
        if passthrough:
            return PassthroughChunks(include_usage)
        return ConvertedChunks(call.model, include_usage)

    def render_models(self, models: Sequence[ModelInfo], headers, query) -> bytes:
        return orjson.dumps(
            {
                "object": "list",
                "data": [
                    {"id": m.id, "object": "model", "created": m.created, "owned_by": m.owned_by}
                    for m in models
                ],
            }
        )

    def render_error(self, error: GatewayError, request_id: str) -> RenderedError:
        return RenderedError(status=error.status, body=orjson.dumps(error_to_wire(error, request_id)))

    def rate_limit_headers(self, state: RateLimitState) -> list[tuple[bytes, bytes]]:
        return rate_limit_headers(state)


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


class PassthroughChunks(StreamWriter):
    """An OpenAI upstream's chunks, forwarded as they are. The gateway always asks
    the upstream for usage; the usage-only chunk is dropped when the client did not
    ask for it, and ``[DONE]`` is held back until the request is recorded."""

    __slots__ = ("include_usage",)

    def __init__(self, include_usage: bool) -> None:
        self.include_usage = include_usage

    def write(self, frame: Frame) -> bytes:
        if frame.terminal:
            return b""
        events = frame.events
        if not self.include_usage and events and all(type(e) is UsageReport for e in events):
            return b""
        return frame.raw

    def end(self) -> bytes:
        return DONE

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        return b"data: " + orjson.dumps(error_to_wire(error, request_id)) + b"\n\n"


class ConvertedChunks(StreamWriter):
    """Core stream events from another wire format, as OpenAI chunks."""

    def __init__(self, model: str, include_usage: bool) -> None:
        self.model = model
        self.include_usage = include_usage
        self.encoder: ChunkEncoder | None = None

    def write(self, frame: Frame) -> bytes:
        out: list[bytes] = []
        for event in frame.events:
            if self.encoder is None:
                start = event if type(event) is StreamStart else None
                self.encoder = ChunkEncoder(
                    id=_chunk_id(start.id if start else None),
                    model=self.model,
                    created=(start.created if start and start.created else _now()),
                    include_usage=self.include_usage,
                )
            for chunk in self.encoder.encode(event):
                out.append(b"data: " + orjson.dumps(chunk) + b"\n\n")
        return b"".join(out)

    def end(self) -> bytes:
        return DONE

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        return b"data: " + orjson.dumps(error_to_wire(error, request_id)) + b"\n\n"


def _chunk_id(upstream_id: str | None) -> str:
    if upstream_id and upstream_id.startswith("chatcmpl-"):
        return upstream_id
    return "chatcmpl-" + (upstream_id or os.urandom(12).hex())


def _now() -> int:
    return int(time.time())
