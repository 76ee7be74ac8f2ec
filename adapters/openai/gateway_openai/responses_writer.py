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

import structlog

from gateway_core import Call, Frame, GatewayError, StreamStart, StreamWriter
from gateway_core.sse import event_frame

from .error_body import error_to_wire
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
        return encode_events(self._converting().finish())

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        body = error_to_wire(error, request_id)["error"]
        if self.native:
            shell = ResponseShell(self.call.body, self.call.model, response_id=self._response_id)
            encoder = ResponsesEncoder(shell, sequence_start=self._sent_events, started=True)
        else:
            encoder = self._converting()
        return encode_events(encoder.fail(body["message"], body["code"]))

    def _converting(self) -> ResponsesEncoder:
        if self._encoder is None:
            log_conversion(self.call)
            self._encoder = ResponsesEncoder(ResponseShell(self.call.body, self.call.model))
        return self._encoder
