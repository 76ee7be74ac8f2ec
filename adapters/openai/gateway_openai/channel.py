"""The ``openai`` channel type: an OpenAI (or OpenAI-compatible) upstream."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from gateway_core import (
    ChannelType,
    Exchange,
    Frame,
    JsonReply,
    Reply,
    StreamReply,
    UpstreamError,
    UpstreamTimeoutError,
    endpoints,
)
from gateway_core.errors import excerpt
from gateway_core.sse import frame_fields
from gateway_core.upstream import post, sse_frames

from .chat_request import request_to_wire
from .chat_response import response_from_wire, usage_from_wire
from .chat_stream import ChunkDecoder
from .error_body import upstream_error_message
from .protocol import CHAT_WIRE

PATHS = {endpoints.CHAT: "/v1/chat/completions"}


def strip_version(base_url: str) -> str:
    """``https://api.openai.com/v1/`` → ``https://api.openai.com``: the path adds ``/v1``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class OpenAIChannel(ChannelType):
    name = "openai"

    def wire(self, endpoint: str) -> str | None:
        return CHAT_WIRE if endpoint == endpoints.CHAT else None

    def normalize_base_url(self, base_url: str) -> str:
        return strip_version(base_url)

    async def send(self, exchange: Exchange) -> Reply:
        target, call = exchange.target, exchange.call
        channel = target.channel
        if exchange.passthrough:
            body = passthrough_body(call.body, target.upstream_model, call.stream)
        else:
            body = request_to_wire(exchange.request, target.upstream_model)
        headers = {
            **channel.headers,
            "Authorization": f"Bearer {target.api_key}",
            "Content-Type": "application/json",
        }
        if call.stream:
            headers["Accept"] = "text/event-stream"
        url = channel.base_url + PATHS[call.endpoint]
        response = await post(exchange, url, headers=headers, body=orjson.dumps(body), error_message=upstream_error_message)
        if call.stream:
            frames = sse_frames(response, FrameDecoder().decode)
            return StreamReply(frames=frames, close=frames.aclose)
        data = await read_all(response)
        answer = parse_answer(data)
        usage = usage_from_wire(answer.get("usage"))
        if exchange.passthrough:
            # no usage reported: parse the answer so that its content (not its JSON) is counted
            response = response_from_wire(answer) if usage is None else None
            return JsonReply(body=data, response=response, usage=usage, model=answer.get("model"))
        return JsonReply(body=None, response=response_from_wire(answer), usage=usage)


def passthrough_body(body: dict[str, Any], model: str, stream: bool) -> dict[str, Any]:
    """The client's body with the upstream model, asking for usage when streaming."""
    out = dict(body)
    out["model"] = model
    if stream:
        options = out.get("stream_options")
        out["stream_options"] = {**options, "include_usage": True} if isinstance(options, dict) else {"include_usage": True}
    return out


async def read_all(response: aiohttp.ClientResponse) -> bytes:
    try:
        return await response.read()
    except (TimeoutError, aiohttp.ServerTimeoutError):
        raise UpstreamTimeoutError("the upstream went silent while sending its answer", retryable=True) from None
    except aiohttp.ClientError as exc:
        raise UpstreamError(f"the upstream connection failed while reading the answer ({type(exc).__name__})", retryable=True) from None
    finally:
        response.release()


def parse_answer(data: bytes) -> dict[str, Any]:
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        error = UpstreamError("the upstream answered with something that is not a JSON object", retryable=True)
        error.upstream_status, error.upstream_body = 200, excerpt(data)
        raise error
    return answer


class FrameDecoder:
    """Decodes one upstream stream's frames into core events."""

    __slots__ = ("_chunks",)

    def __init__(self) -> None:
        self._chunks = ChunkDecoder()

    def decode(self, raw: bytes) -> Frame:
        _, data = frame_fields(raw)
        if not data:
            return Frame(raw)  # a comment or keep-alive
        if data == b"[DONE]":  # closes what a stream without finish_reason left open
            return Frame(raw, tuple(self._chunks.close()), terminal=True)
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            error = UpstreamError("the upstream sent a stream frame that is not JSON")
            error.upstream_body = excerpt(data)
            raise error from None
        if not isinstance(chunk, dict):
            raise UpstreamError("the upstream sent a stream frame that is not a JSON object")
        if "error" in chunk and not chunk.get("choices"):
            error = UpstreamError(f"the upstream reported an error mid-stream: {upstream_error_message(200, data)}")
            error.upstream_body = excerpt(data)
            raise error
        return Frame(raw, tuple(self._chunks.feed(chunk)))
