"""Stream writers of the audio endpoints (always the fast path: only OpenAI channels serve them).

- :class:`AudioWriter`: speech audio bytes, forwarded as they arrive, under the
  content type of the requested ``response_format`` (the one OpenAI answers
  with). A stream the upstream breaks just ends: audio has no error frame.
- :class:`EventsWriter`: a server-sent-events answer (speech with
  ``stream_format: "sse"``, a transcription or images with ``stream: true``) forwarded frame
  by frame, its last event (``speech.audio.done``, ``transcript.text.done``; none
  for images: their stream ends when the upstream closes it) held until the
  request is recorded; a broken stream ends with an ``error`` event.
"""

from __future__ import annotations

import orjson

from gateway_core import Frame, GatewayError, StreamWriter

from .error_body import error_to_wire


class AudioWriter(StreamWriter):
    def __init__(self, content_type: str) -> None:
        self.content_type = content_type

    def write(self, frame: Frame) -> bytes:
        return frame.raw

    def end(self) -> bytes:
        return b""

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        return b""

    def keepalive(self) -> bytes:
        return b""  # any byte would be audio


class EventsWriter(StreamWriter):
    def __init__(self) -> None:
        self._held = b""

    def write(self, frame: Frame) -> bytes:
        if frame.terminal:
            self._held += frame.raw
            return b""
        return frame.raw

    def end(self) -> bytes:
        return self._held

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        return b"event: error\ndata: " + orjson.dumps(error_to_wire(error, request_id)) + b"\n\n"
