"""The stream writers of Chat Completions clients.

:class:`PassthroughChunks` forwards an OpenAI upstream's chunks; the gateway always
asks for usage, so the usage-only chunk is dropped when the client did not ask for
it, and ``[DONE]`` is held back until the request is recorded.
:class:`ConvertedChunks` writes another wire's core events as OpenAI chunks.
"""

from __future__ import annotations

import os
import time

import orjson

from gateway_core import Frame, GatewayError, StreamStart, StreamWriter, UsageReport

from .chat_stream import ChunkEncoder
from .error_body import error_to_wire

DONE = b"data: [DONE]\n\n"


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
        if events and type(events[0]) is UsageReport and not self.include_usage and all(type(e) is UsageReport for e in events):
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
