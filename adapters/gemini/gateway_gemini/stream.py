"""Streamed ``GenerateContentResponse`` chunks ⇄ core stream events (pure, stateful, no I/O).

Gemini streams whole response objects, each with the parts produced since the last:
text and thoughts arrive in pieces, a ``functionCall`` whole, and the last chunk
carries ``finishReason`` (``usageMetadata`` comes with most chunks, complete on the
last).

:class:`ChunkDecoder` reads one upstream stream. Consecutive text pieces extend one
``TextPart``, consecutive thought pieces one ``ReasoningPart``; a function call is a
``ToolCallPart`` started, given its arguments and stopped at once (ids as in
:mod:`gateway_gemini.response`, the thought signature folded in for a client of
another protocol); an image an ``ImagePart`` likewise. A part's
``thoughtSignature`` rides on its delta's ``provider_metadata``. ``finishReason``
(or a prompt blocked by ``promptFeedback``) stops the open part and finishes the
stream; the latest ``usageMetadata`` is reported right after, and again if a later
chunk changes it. The prompt's count in an earlier chunk is given at once as an
``InputReport``, so a stream cut short is charged its real input; a ``usageMetadata``
that repeats the last one's bytes is not read again. Only candidate 0 is read; an
``{"error": …}`` chunk raises ``UpstreamError``.

:class:`ChunkEncoder` writes core events as Gemini chunks: one chunk per text or
thought delta, a ``functionCall`` chunk when a tool call's part stops (Gemini never
streams partial arguments), and — from :meth:`ChunkEncoder.finish`, once the
stream is over — a last chunk with the ``finishReason`` and the usage, so the last
chunk of every stream has a ``finishReason`` (the Gemini command-line client retries
a stream whose last chunk has none). Reasoning of other providers becomes
``thought`` parts only when the client asked for thoughts.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from gateway_core.errors import UpstreamError
from gateway_core.model import (
    ImagePart,
    InputReport,
    PartDelta,
    PartStart,
    PartStop,
    ReasoningPart,
    StopReason,
    StreamEvent,
    StreamFinish,
    StreamStart,
    TextPart,
    ToolCallPart,
    Usage,
    UsageReport,
)

from .content import SIGNATURE, arguments_object, echoing, image_to_wire, part_from_wire
from .response import ResponseCallIds, finish_reason_to_wire, stop_reason_from_wire, usage_from_wire, usage_to_wire
from .wire import JSON, as_dict, as_int, as_list, field

_THOUGHT = {"gemini_thought": True}


class ChunkDecoder:
    """Turns one upstream's streamed Gemini chunks into core events."""

    def __init__(self, *, echo: bool = False) -> None:
        self._echo = echo  # fold thought signatures into the calls' ids (a client of another protocol)
        self._started = False
        self._finished = False
        self._ids = ResponseCallIds("")
        self._next = 0
        self._open: tuple[str, int] | None = None  # ("text" | "reasoning", core index)
        self._calls = False
        self._usage: Usage | None = None
        self._reported: Usage | None = None
        self._metadata = b""  # the last usageMetadata read, as JSON, and what it read as
        self._read_usage: Usage | None = None

    def feed(self, chunk: Any) -> list[StreamEvent]:
        """The events one chunk carries."""
        events: list[StreamEvent] = []
        if not isinstance(chunk, dict):
            return events
        if "error" in chunk and not chunk.get("candidates"):
            detail = as_dict(chunk["error"]).get("message") or chunk["error"]
            raise UpstreamError(f"the upstream reported an error mid-stream: {detail}")
        if not self._started:
            self._started = True
            response_id = str(field(chunk, "responseId") or "")
            self._ids = ResponseCallIds(response_id)
            events.append(StreamStart(id=response_id, model=str(field(chunk, "modelVersion") or "")))
        candidates = as_list(field(chunk, "candidates"))
        first = candidates[0] if candidates else None  # candidate 0, as a stream of one candidate puts it
        if not (isinstance(first, dict) and as_int(first.get("index")) == 0):
            first = next((c for c in candidates if isinstance(c, dict) and as_int(c.get("index")) == 0), None)
        candidate = first
        if not self._finished:
            for raw in as_list(field(field(candidate, "content"), "parts")):
                if isinstance(raw, dict):
                    self._part(raw, events)
            finish = field(candidate, "finishReason")
            if finish:
                self._finish(stop_reason_from_wire(finish, tool_calls=self._calls), events)
            elif not candidates and field(field(chunk, "promptFeedback"), "blockReason"):
                self._finish(StopReason.CONTENT_FILTER, events)
        usage = self._usage_of(field(chunk, "usageMetadata"))
        if usage is not None:
            if not self._finished and (self._usage is None or self._usage.input_tokens != usage.input_tokens):
                events.append(InputReport(usage))  # the prompt is counted: a stream cut now is charged it
            self._usage = usage
        if self._finished and self._usage is not None and self._usage != self._reported:
            self._reported = self._usage
            events.append(UsageReport(self._usage))
        return events

    @property
    def finished(self) -> bool:
        return self._finished

    def _usage_of(self, metadata: Any) -> Usage | None:
        """The usage of a chunk's ``usageMetadata``: most chunks repeat the last one's,
        read again only when its bytes differ (equal bytes, equal counts of equal types)."""
        if metadata is None:
            return None
        try:
            key = orjson.dumps(metadata)
        except orjson.JSONEncodeError:
            return usage_from_wire(metadata)
        if key != self._metadata:
            self._metadata, self._read_usage = key, usage_from_wire(metadata)
        return self._read_usage

    def _part(self, raw: JSON, events: list[StreamEvent]) -> None:
        text = field(raw, "text")
        signature = field(raw, "thoughtSignature")
        delta_meta = {SIGNATURE: signature} if isinstance(signature, str) and signature else None
        thought = field(raw, "thought") is True
        if isinstance(text, str) or thought:
            kind = "reasoning" if thought else "text"
            if self._open is None or self._open[0] != kind:
                self._stop_open(events)
                index = self._new()
                events.append(PartStart(index, ReasoningPart("", _THOUGHT) if kind == "reasoning" else TextPart("")))
                self._open = (kind, index)
            if text or delta_meta:
                events.append(PartDelta(self._open[1], text or "", delta_meta))
            return
        part = part_from_wire(raw, "chunk", self._ids, str(self._next))
        if self._echo:
            part = echoing(part)
        if isinstance(part, ToolCallPart):
            self._calls = True
            self._stop_open(events)
            index = self._new()
            events += [PartStart(index, attrs.evolve(part, arguments="")), PartDelta(index, part.arguments), PartStop(index)]
        elif isinstance(part, ImagePart):
            self._stop_open(events)
            index = self._new()
            events += [PartStart(index, part), PartStop(index)]

    def _new(self) -> int:
        self._next += 1
        return self._next - 1

    def _stop_open(self, events: list[StreamEvent]) -> None:
        if self._open is not None:
            events.append(PartStop(self._open[1]))
            self._open = None

    def _finish(self, reason: StopReason | None, events: list[StreamEvent]) -> None:
        self._stop_open(events)
        self._finished = True
        events.append(StreamFinish(reason))


@attrs.define
class _Call:
    part: ToolCallPart
    arguments: list[str] = attrs.field(factory=list)


class ChunkEncoder:
    """Turns core events into the Gemini chunks of one streamed answer."""

    def __init__(self, model: str, *, thoughts: bool = False) -> None:
        self._model = model
        self._thoughts = thoughts
        self._id = ""
        self._kinds: dict[int, str] = {}
        self._calls: dict[int, _Call] = {}
        self._stop: StopReason | None = None
        self._usage: Usage | None = None

    def encode(self, event: StreamEvent) -> list[JSON]:
        """The chunks to send for one event (often none)."""
        if isinstance(event, PartDelta):
            kind = self._kinds.get(event.index, "text")
            if kind == "tool":
                self._calls[event.index].arguments.append(event.text)
                return []
            return self._text(kind, event.text, event.provider_metadata)
        if isinstance(event, PartStart):
            return self._start(event)
        if isinstance(event, PartStop):
            call = self._calls.pop(event.index, None)
            if call is None:
                return []
            part = call.part
            wire: JSON = {"functionCall": {"id": part.id, "name": part.name, "args": arguments_object("".join(call.arguments))}}
            signature = (part.provider_metadata or {}).get(SIGNATURE)
            if signature:
                wire["thoughtSignature"] = signature
            return [self._chunk(wire)]
        if isinstance(event, StreamStart):
            self._id = self._id or event.id
        elif isinstance(event, StreamFinish):
            self._stop = event.stop_reason
        elif isinstance(event, UsageReport):
            self._usage = event.usage
        return []

    def finish(self) -> JSON:
        """The last chunk: the ``finishReason`` and the usage."""
        chunk: JSON = {"candidates": [{"finishReason": finish_reason_to_wire(self._stop), "index": 0}]}
        if self._usage is not None:
            chunk["usageMetadata"] = usage_to_wire(self._usage)
        return self._envelope(chunk)

    def _start(self, event: PartStart) -> list[JSON]:
        part = event.part
        if isinstance(part, ToolCallPart):
            self._kinds[event.index] = "tool"
            self._calls[event.index] = _Call(part, [part.arguments] if part.arguments else [])
            return []
        if isinstance(part, ImagePart):
            self._kinds[event.index] = "other"
            return [self._chunk(image_to_wire(part))]
        if isinstance(part, ReasoningPart):
            own = bool((part.provider_metadata or {}).get("gemini_thought"))
            self._kinds[event.index] = "reasoning" if own or self._thoughts else "other"
        elif isinstance(part, TextPart) and not (part.provider_metadata or {}).get("gemini_part"):
            self._kinds[event.index] = "text"
        else:
            self._kinds[event.index] = "other"
        text = getattr(part, "text", "")
        return self._text(self._kinds[event.index], text, None) if text else []

    def _text(self, kind: str, text: str, meta: JSON | None) -> list[JSON]:
        signature = (meta or {}).get(SIGNATURE)
        if kind not in ("text", "reasoning") or not (text or signature):
            return []
        wire: JSON = {"text": text}
        if kind == "reasoning":
            wire["thought"] = True
        if signature:
            wire["thoughtSignature"] = signature
        return [self._chunk(wire)]

    def _chunk(self, part: JSON) -> JSON:
        return self._envelope({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]})

    def _envelope(self, chunk: JSON) -> JSON:
        chunk["modelVersion"] = self._model
        if self._id:
            chunk["responseId"] = self._id
        return chunk
