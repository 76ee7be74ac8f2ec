"""An ``openai`` channel's embeddings, images and audio endpoints.

All go the fast path (the body as the client sent it, the model mapped), but
for embeddings converted from another protocol. Uploads (``images/edits``,
``audio/transcriptions``, ``audio/translations``) are streamed on with the
form's ``model`` field rewritten and their ``Content-Type`` (boundary) kept.
Answers pass through as the upstream gave them (``b64_json`` and ``url`` images
alike, streamed images event by event, :mod:`.image_stream`; a transcription's or translation's ``text``, ``srt``, ``vtt`` or JSON with
its content type); speech audio is relayed as it arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from gateway_core import Exchange, Frame, JsonReply, Reply, StreamReply, UpstreamError, endpoints
from gateway_core.errors import excerpt
from gateway_core.model import (
    EmbeddingsRequest,
    EmbeddingsResponse,
    PartDelta,
    PartStart,
    StopReason,
    StreamEvent,
    StreamFinish,
    StreamStart,
    TextPart,
    Usage,
    UsageReport,
)
from gateway_core.sse import frame_fields
from gateway_core.upstream import parse_answer, parse_frame_json, post, read_all, sse_frames
from gateway_core.upstream_upload import post_upload

from .embeddings import usage_from_wire
from .error_body import upstream_error_message
from .image_stream import image_frames
from .media import images_used, transcription_usage, transcription_used
from .upstream_io import byte_frames

PATHS = {
    endpoints.EMBEDDINGS: "/v1/embeddings",
    endpoints.IMAGES_GENERATIONS: "/v1/images/generations",
    endpoints.IMAGES_EDITS: "/v1/images/edits",
    endpoints.AUDIO_SPEECH: "/v1/audio/speech",
    endpoints.AUDIO_TRANSCRIPTIONS: "/v1/audio/transcriptions",
    endpoints.AUDIO_TRANSLATIONS: "/v1/audio/translations",
}
_TERMINAL_EVENTS = frozenset(("speech.audio.done", "transcript.text.done"))
_IMAGES = frozenset((endpoints.IMAGES_GENERATIONS, endpoints.IMAGES_EDITS))
_AUDIO_TEXT = frozenset((endpoints.AUDIO_TRANSCRIPTIONS, endpoints.AUDIO_TRANSLATIONS))  # billed alike


async def send_media(exchange: Exchange, headers: dict[str, str], url_for: Callable[[str], str]) -> Reply:
    """Send an embeddings, images or audio call to ``url_for(path)`` (``path``
    OpenAI's, from :data:`PATHS`)."""
    call, target = exchange.call, exchange.target
    url = url_for(PATHS[call.endpoint])
    if call.upload is not None:
        upload_headers = {**headers, "Content-Type": call.upload.content_type or ""}
        replace = {"model": target.upstream_model}
        response = await post_upload(exchange, url, call.upload, headers=upload_headers, replace=replace, error_message=upstream_error_message)
    else:
        body = _json_body(exchange)
        response = await post(exchange, url, headers={**headers, "Content-Type": "application/json"}, body=orjson.dumps(body), error_message=upstream_error_message)
    if call.endpoint == endpoints.AUDIO_SPEECH and not call.options.get("sse"):
        frames = byte_frames(response)
        return StreamReply(frames=frames, close=frames.aclose)
    if call.stream and call.endpoint in _IMAGES:
        frames = image_frames(response)
        return StreamReply(frames=frames, close=frames.aclose)
    if call.stream or call.options.get("sse"):
        frames = sse_frames(response, EventFrames().decode)
        return StreamReply(frames=frames, close=frames.aclose)
    content_type = response.headers.get("Content-Type", "application/json")
    data = await read_all(response)
    if call.endpoint in _AUDIO_TEXT:
        assert call.upload is not None
        media, usage = transcription_used(data, content_type, call.upload.received)
        return JsonReply(body=data, response=None, usage=usage, content_type=content_type, media=media)
    answer = parse_answer(data)
    if call.endpoint == endpoints.EMBEDDINGS:
        usage = usage_from_wire(answer, call.body if exchange.passthrough else {"input": list(_texts(exchange))})
        if exchange.passthrough:
            return JsonReply(body=data, response=None, usage=usage, model=answer.get("model"))
        return JsonReply(body=None, response=embeddings_from_wire(answer, usage), usage=usage)
    media, tokens = images_used(answer)
    return JsonReply(body=data, response=None, usage=tokens, media=media)


def _json_body(exchange: Exchange) -> dict[str, Any]:
    if exchange.passthrough:
        return {**exchange.call.body, "model": exchange.target.upstream_model}
    request = exchange.request
    if not isinstance(request, EmbeddingsRequest):
        raise UpstreamError(f"the endpoint '{exchange.call.endpoint}' of an openai channel serves OpenAI clients only")
    body: dict[str, Any] = {"model": exchange.target.upstream_model, "input": list(request.inputs), "encoding_format": "float"}
    if request.dimensions is not None:
        body["dimensions"] = request.dimensions
    return body


def _texts(exchange: Exchange) -> tuple[str, ...]:
    request = exchange.request
    return request.inputs if isinstance(request, EmbeddingsRequest) else ()


def embeddings_from_wire(answer: dict[str, Any], usage: Usage) -> EmbeddingsResponse:
    """The core response of a float embeddings answer (the gateway asked for floats)."""
    data = sorted((d for d in answer.get("data") or () if isinstance(d, dict)), key=lambda d: d.get("index", 0))
    vectors = tuple(tuple(float(x) for x in d.get("embedding") or ()) for d in data)
    return EmbeddingsResponse(model=str(answer.get("model") or ""), vectors=vectors, usage=usage)


class EventFrames:
    """Decodes the SSE frames of a speech (``stream_format: "sse"``) or transcription stream."""

    __slots__ = ("_started",)

    def __init__(self) -> None:
        self._started = False

    def decode(self, raw: bytes) -> Frame:
        _, data = frame_fields(raw)
        if not data.strip():
            return Frame(raw)
        payload = parse_frame_json(data)
        if payload.get("type") == "error" or "error" in payload:
            error = UpstreamError(f"the upstream reported an error mid-stream: {upstream_error_message(200, data)}")
            error.upstream_body = excerpt(data)
            raise error
        events: list[StreamEvent] = []
        if not self._started:
            self._started = True
            events += [StreamStart("", ""), PartStart(0, TextPart(""))]
        delta = payload.get("delta")
        events.append(PartDelta(0, delta if isinstance(delta, str) and payload.get("type") == "transcript.text.delta" else ""))
        terminal = payload.get("type") in _TERMINAL_EVENTS
        if terminal:
            reported = transcription_usage(payload.get("usage"))
            events.append(StreamFinish(StopReason.END_TURN))
            if reported is not None:
                events.append(UsageReport(reported[1]))
        return Frame(raw, tuple(events), terminal=terminal)
