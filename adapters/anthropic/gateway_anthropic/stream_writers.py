"""The bytes an Anthropic streaming client receives, from either kind of upstream.

Both writers keep Anthropic's promise that every started content block gets its
``content_block_stop``, also when the stream breaks (then an ``event: error``
follows), and both hold ``message_stop`` back until the request is recorded. Every
frame carries an ``event:`` line and a ``data:`` line; idle streams get ``ping``.
"""

from __future__ import annotations

from gateway_core import Frame, GatewayError, PartDelta, PartStart, PartStop, StreamFinish, StreamStart, StreamWriter
from gateway_core.sse import event_frame

from .error_body import error_event
from .messages_response import message_id
from .messages_stream import EventEncoder, WireEvent

PING = event_frame("ping", {"type": "ping"})
MESSAGE_STOP = event_frame("message_stop", {"type": "message_stop"})


def stop_frame(index: int) -> bytes:
    return event_frame("content_block_stop", {"type": "content_block_stop", "index": index})


def render(events: list[WireEvent]) -> bytes:
    return b"".join(event_frame(name, payload) for name, payload in events)


class PassthroughEvents(StreamWriter):
    """An Anthropic upstream's events, forwarded byte for byte.

    It follows which blocks are open: a block the upstream never stopped is stopped
    before ``message_delta`` (the decoder closes such blocks when the message
    finishes) or before the ``error`` of a broken stream.
    """

    __slots__ = ("_open", "_stop")

    def __init__(self) -> None:
        self._open: set[int] = set()
        self._stop: bytes | None = None

    def write(self, frame: Frame) -> bytes:
        events = frame.events
        if not frame.terminal and (not events or (len(events) == 1 and type(events[0]) is PartDelta)):
            return frame.raw  # the usual frame: a delta, or nothing for the core
        prefix = b""
        if events:
            finishing = any(type(event) is StreamFinish for event in events)
            for event in events:
                if type(event) is PartStart:
                    self._open.add(event.index)
                elif type(event) is PartStop and event.index in self._open:
                    self._open.discard(event.index)
                    if finishing:  # stopped by the decoder, not by the upstream
                        prefix += stop_frame(event.index)
        if frame.terminal:
            self._stop = frame.raw
            return prefix
        return prefix + frame.raw if prefix else frame.raw

    def end(self) -> bytes:
        return self._stop or MESSAGE_STOP

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        stops = b"".join(stop_frame(index) for index in sorted(self._open))
        self._open.clear()
        return stops + error_event(error, request_id)

    def keepalive(self) -> bytes:
        return PING


class ConvertedEvents(StreamWriter):
    """Core stream events from another wire format, as Anthropic stream events."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.encoder: EventEncoder | None = None

    def write(self, frame: Frame) -> bytes:
        out: list[WireEvent] = []
        for event in frame.events:
            if self.encoder is None:
                self.encoder = EventEncoder(message_id(event.id if type(event) is StreamStart else None), self.model)
            out.extend(self.encoder.encode(event))
        return render(out) if out else b""

    def end(self) -> bytes:
        if self.encoder is None:
            self.encoder = EventEncoder(message_id(None), self.model)
        return render(self.encoder.close())

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        stops = render(self.encoder.abort()) if self.encoder is not None else b""
        return stops + error_event(error, request_id)

    def keepalive(self) -> bytes:
        return PING
