"""Streamed image generation and edits (``stream: true``): OpenAI's events relayed as they come.

An upstream streaming images sends server-sent events, each a whole image in one
``data:`` line (base64: a large frame, well under ``max_frame_bytes``):
``image_generation.partial_image`` (``image_edit.partial_image`` for edits) as the
image takes shape, then one ``image_generation.completed``
(``image_edit.completed``) per image with the finished image and, for the GPT
image models, its ``usage``; then it closes the stream.

The frames are forwarded untouched (:class:`~.media_writers.EventsWriter`). For the
core, each image event is content that reached the client (an empty delta: there
is no text to count), and each completed event reports the tokens of the
completed events so far (summed), so a client that leaves after the first of two
images is billed what was reported. When the upstream closes the stream after at
least one completed event, the stream is finished; closed before any, it is the
upstream's failure. An ``error`` event ends the stream with the upstream's error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import aiohttp

from gateway_core import Frame, UpstreamError
from gateway_core.errors import excerpt
from gateway_core.model import PartDelta, PartStart, StopReason, StreamEvent, StreamFinish, StreamStart, TextPart, Usage, UsageReport
from gateway_core.sse import frame_fields
from gateway_core.upstream import parse_frame_json, sse_frames

from .error_body import upstream_error_message
from .media import image_tokens

COMPLETED_SUFFIX = ".completed"  # image_generation.completed, image_edit.completed


async def image_frames(response: aiohttp.ClientResponse) -> AsyncGenerator[Frame, None]:
    """The frames of a streamed images answer, ended by a finish once the upstream
    closed the stream after its completed events."""
    events = ImageEvents()
    frames = sse_frames(response, events.decode)
    try:
        async for frame in frames:
            yield frame
    finally:
        await frames.aclose()
    last = events.end()
    if last is not None:
        yield last


class ImageEvents:
    """Decodes the SSE frames of a streamed images answer (see the module's docstring)."""

    __slots__ = ("completed", "_started", "_usage")

    def __init__(self) -> None:
        self.completed = 0
        self._started = False
        self._usage: Usage | None = None

    def decode(self, raw: bytes) -> Frame:
        _, data = frame_fields(raw)
        if not data.strip():
            return Frame(raw)
        payload = parse_frame_json(data)
        kind = payload.get("type")
        if kind == "error" or "error" in payload:
            error = UpstreamError(f"the upstream reported an error mid-stream: {upstream_error_message(200, data)}")
            error.upstream_body = excerpt(data)
            raise error
        events: list[StreamEvent] = []
        if not self._started:
            self._started = True
            events += [StreamStart("", ""), PartStart(0, TextPart(""))]
        events.append(PartDelta(0, ""))
        if isinstance(kind, str) and kind.endswith(COMPLETED_SUFFIX):
            self.completed += 1
            tokens = image_tokens(payload.get("usage"))
            if tokens is not None:
                before = self._usage or Usage()
                self._usage = Usage(
                    input_tokens=before.input_tokens + tokens.input_tokens,
                    output_tokens=before.output_tokens + tokens.output_tokens,
                )
            events += self.usage_report()
        return Frame(raw, tuple(events))

    def end(self) -> Frame | None:
        """The frame that finishes a stream the upstream closed: none before a completed event."""
        if not self.completed:
            return None
        return Frame(b"", (StreamFinish(StopReason.END_TURN), *self.usage_report()), terminal=True)

    def usage_report(self) -> tuple[UsageReport, ...]:
        return (UsageReport(self._usage),) if self._usage is not None else ()
