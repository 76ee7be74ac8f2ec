"""The stream writer of Responses clients.

Frames from a channel that speaks Responses (the fast path, or a frame marked
with the Responses wire by an ``openai`` channel that took it by itself) are
forwarded as they are, but for the last one (``response.completed`` /
``incomplete``), held until the request is recorded. Frames of a converted
answer go through :class:`~.responses_stream.ResponsesEncoder`, which writes
``response.completed`` only at :meth:`end`. Either way a broken stream ends with
an ``error`` event and ``response.failed``.
"""

from __future__ import annotations

from typing import Any

import orjson
import structlog

from gateway_core import Call, Frame, GatewayError, StreamStart, StreamWriter
from gateway_core.sse import event_frame, frame_fields

from .error_body import error_to_wire
from .responses_kept import shown_body
from .responses_request import unconvertible
from .responses_response import ResponseShell
from .responses_stream import Event, ResponsesEncoder

log = structlog.get_logger("relaygate.openai")

RESPONSES_WIRE = "openai.responses"


def encode_events(events: list[Event]) -> bytes:
    return b"".join(event_frame(name, payload) for name, payload in events)


def log_conversion(call: Call) -> None:
    """A note of what a conversion for a chat channel drops, once per request."""
    dropped = unconvertible(call.body)
    if dropped:
        log.info("responses.converted_without", model=call.model, dropped=dropped)


class ResponsesWriter(StreamWriter):
    def __init__(self, call: Call, passthrough: bool) -> None:
        self.call = call
        self.passthrough = passthrough
        self.native = passthrough
        self._held = b""
        self._sent_events = 0
        self._response_id: str | None = None
        self._encoder: ResponsesEncoder | None = None
        self._final: dict[str, Any] | None = None

    def write(self, frame: Frame) -> bytes:
        if self.passthrough or frame.wire == RESPONSES_WIRE:
            self.native = True
            for event in frame.events:
                if type(event) is StreamStart:
                    self._response_id = event.id
            if frame.terminal:
                self._held += frame.raw
                return b""
            if frame.raw.strip() and not frame.raw.startswith(b":"):
                self._sent_events += 1
            return frame.raw
        encoder = self._converting()
        return encode_events([out for event in frame.events for out in encoder.encode(event)])

    def end(self) -> bytes:
        if self.native:
            return self._held
        events = self._converting().finish()
        self._final = events[-1][1].get("response")
        return encode_events(events)

    def final_response(self) -> dict[str, Any] | None:
        """The response object of the stream's last event, once :meth:`end` wrote it."""
        if not self.native:
            return self._final
        for raw in reversed(self._held.split(b"\n\n")):
            _, data = frame_fields(raw + b"\n\n")
            try:
                payload = orjson.loads(data) if data.strip() else None
            except orjson.JSONDecodeError:
                return None
            if isinstance(payload, dict) and isinstance(payload.get("response"), dict):
                return payload["response"]
        return None

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        body = error_to_wire(error, request_id)["error"]
        if self.native:
            shell = ResponseShell(shown_body(self.call), self.call.model, response_id=self._response_id)
            encoder = ResponsesEncoder(shell, sequence_start=self._sent_events, started=True)
        else:
            encoder = self._converting()
        return encode_events(encoder.fail(body["message"], body["code"]))

    def _converting(self) -> ResponsesEncoder:
        if self._encoder is None:
            log_conversion(self.call)
            self._encoder = ResponsesEncoder(ResponseShell(shown_body(self.call), self.call.model))
        return self._encoder
