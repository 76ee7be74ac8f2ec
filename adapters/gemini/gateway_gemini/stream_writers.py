"""The stream writers of the Gemini client protocol.

``:streamGenerateContent?alt=sse`` answers server-sent events, ``data: {json}``
frames ending in ``\\r\\n\\r\\n`` as Google writes them; without ``alt=sse`` it
answers one JSON array written element by element (``[{…},\\r\\n{…}]``), each
element sent as soon as it is known. :class:`Framing` does either.

:class:`PassthroughChunks` forwards a gemini upstream's chunks (always read as SSE)
byte for byte in SSE, re-framed as array elements otherwise, except the chunk that
finishes the answer (its ``finishReason`` and usage, and any chunk after it): it
is held back and written by ``end``, once the request is recorded, so a client
that saw its answer finish was billed for it.
:class:`ConvertedChunks` encodes another wire format's core events with
:class:`~gateway_gemini.stream.ChunkEncoder`; its last chunk, written by ``end``,
carries the ``finishReason`` and the usage. A stream broken after it started ends
with Google's error object as its last chunk.
"""

from __future__ import annotations

import orjson

from gateway_core import Frame, GatewayError, StreamFinish, StreamWriter
from gateway_core.sse import frame_fields

from .error_body import error_to_wire
from .stream import ChunkEncoder

SSE_END = b"\r\n\r\n"


class Framing:
    """SSE frames or the elements of one JSON array."""

    __slots__ = ("sse", "_opened")

    def __init__(self, sse: bool) -> None:
        self.sse = sse
        self._opened = False

    @property
    def content_type(self) -> str:
        return "text/event-stream" if self.sse else "application/json"

    def frame(self, payload: bytes) -> bytes:
        if self.sse:
            return b"data: " + payload + SSE_END
        prefix = b",\r\n" if self._opened else b"["
        self._opened = True
        return prefix + payload

    def close(self) -> bytes:
        if self.sse:
            return b""
        return b"]" if self._opened else b"[]"

    def keepalive(self) -> bytes:
        # an empty line: SSE readers (the google-genai SDKs among them) skip it, and
        # JSON allows white space between array elements
        return b"\r\n"


class PassthroughChunks(StreamWriter):
    """A gemini upstream's chunks, as they come; the finishing chunk at the end."""

    def __init__(self, framing: Framing) -> None:
        self.framing = framing
        self.content_type = framing.content_type
        self._finished = False
        self._held = b""

    def write(self, frame: Frame) -> bytes:
        if self.framing.sse:
            data = frame.raw
        else:
            _, payload = frame_fields(frame.raw)
            data = self.framing.frame(payload) if payload.strip() else b""
        if not self._finished and frame.events:
            self._finished = any(type(event) is StreamFinish for event in frame.events)
        if self._finished:
            self._held += data
            return b""
        return data

    def end(self) -> bytes:
        return self._held + self.framing.close()

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        return self.framing.frame(orjson.dumps(error_to_wire(error, request_id))) + self.framing.close()

    def keepalive(self) -> bytes:
        return self.framing.keepalive()


class ConvertedChunks(StreamWriter):
    """Core events from another wire format, as Gemini chunks."""

    def __init__(self, model: str, framing: Framing, *, thoughts: bool = False) -> None:
        self.framing = framing
        self.content_type = framing.content_type
        self.encoder = ChunkEncoder(model, thoughts=thoughts)

    def write(self, frame: Frame) -> bytes:
        out = [self.framing.frame(orjson.dumps(chunk)) for event in frame.events for chunk in self.encoder.encode(event)]
        return b"".join(out)

    def end(self) -> bytes:
        return self.framing.frame(orjson.dumps(self.encoder.finish())) + self.framing.close()

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        return self.framing.frame(orjson.dumps(error_to_wire(error, request_id))) + self.framing.close()

    def keepalive(self) -> bytes:
        return self.framing.keepalive()
