"""``chat.completion.chunk`` objects ⇄ core stream events (pure, stateful, no I/O).

:class:`ChunkDecoder` reads one upstream stream. Core parts are numbered in order of
first appearance: a text part, a reasoning part (``reasoning_content`` or
``reasoning``), a refusal part (a ``TextPart`` marked ``openai_refusal``) and one
``ToolCallPart`` per tool-call ``index`` (a legacy ``function_call`` delta counts as
one more; a call without an id gets ``call_<chunk id>_<index>``). Parts stay open
until ``finish_reason``, which closes them all and ends the stream; deltas after it
are ignored; ``close()`` ends a stream that stopped without one. Only choice 0 is
read. A chunk with a ``usage`` object gives a ``UsageReport`` (after the other
events of that chunk). An ``{"error": …}`` chunk raises ``UpstreamError``.

:class:`ChunkEncoder` writes core events as OpenAI sends chunks: a first chunk with
``{"role": "assistant", "content": ""}``, one chunk per delta, the finish reason on
a chunk with an empty delta and, when the client asked for usage, ``"usage": null``
on every chunk and the usage as one more chunk with ``choices: []``. A usage report
that arrives before the finish is held and written right after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from orjson import JSONDecodeError
from orjson import loads as _loads

from gateway_core.channel_type import Frame
from gateway_core.errors import UpstreamError, excerpt
from gateway_core.model import (
    PartDelta,
    PartStart,
    PartStop,
    ReasoningPart,
    StreamEvent,
    StreamFinish,
    StreamStart,
    TextPart,
    ToolCallPart,
    Usage,
    UsageReport,
)
from gateway_core.sse import TextTemplate, frame_fields
from gateway_core.upstream import parse_frame_json

from .chat_response import finish_reason_to_wire, stop_reason_from_wire, usage_from_wire, usage_to_wire
from .error_body import upstream_error_message

JSON = dict[str, Any]
_REFUSAL = {"openai_refusal": True}


class ChunkDecoder:
    """Turns one upstream's ``chat.completion.chunk`` objects into core events."""

    def __init__(self) -> None:
        self._started = False
        self._finished = False
        self._id = ""
        self._parts: dict[object, int] = {}  # "text", "reasoning", "refusal", ("tool", wire index) → core index
        self._open: list[int] = []

    def feed(self, chunk: JSON) -> list[StreamEvent]:
        """The events one chunk carries."""
        events: list[StreamEvent] = []
        if not isinstance(chunk, dict):
            return events
        if "error" in chunk and not chunk.get("choices"):
            error = chunk["error"]
            detail = error.get("message") if isinstance(error, dict) else error
            raise UpstreamError(f"the upstream reported an error mid-stream: {detail}")
        if not self._started:
            self._started = True
            self._id = str(chunk.get("id") or "")
            created = chunk.get("created")
            created = created if isinstance(created, int) and not isinstance(created, bool) else None
            events.append(StreamStart(id=self._id, model=str(chunk.get("model") or ""), created=created))
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0 and not self._finished:
                self._choice(choice, events)
        wire_usage = chunk.get("usage")
        usage = None if wire_usage is None else usage_from_wire(wire_usage)
        if usage is not None:
            events.append(UsageReport(usage))
        return events

    def content_only(self, chunk: JSON) -> tuple[StreamEvent, ...] | None:
        """The events of the usual chunk, read in a few steps: one choice whose delta
        holds only ``content``, no finish and no usage, once the text part is open
        (the same events :meth:`feed` gives for it). ``None`` for any other chunk,
        which :meth:`feed` then reads whole."""
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1 or not self._started or self._finished or chunk.get("usage") is not None:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None or choice.get("index", 0) != 0:
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or len(delta) != 1:
            return None
        content = delta.get("content")
        index = self._parts.get("text")
        if type(content) is not str or index is None:
            return None
        return (PartDelta(index, content),) if content else ()

    def close(self) -> list[StreamEvent]:
        """For a stream that ended without ``finish_reason``: stop the open parts and
        finish with an unknown stop reason (nothing when the stream had finished)."""
        return [] if self._finished or not self._started else self._finish(None)

    def _choice(self, choice: JSON, events: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict) and delta:
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and isinstance(reasoning, str):
                events.append(PartDelta(self._index("reasoning", events), reasoning))
            content = delta.get("content")
            if content and isinstance(content, str):
                events.append(PartDelta(self._index("text", events), content))
            refusal = delta.get("refusal")
            if refusal and isinstance(refusal, str):
                events.append(PartDelta(self._index("refusal", events), refusal))
            calls = delta.get("tool_calls")
            if calls and isinstance(calls, list):
                for position, call in enumerate(calls):
                    if isinstance(call, dict):
                        self._tool_call(call, position, events)
            legacy = delta.get("function_call")
            if isinstance(legacy, dict):
                self._tool_call({"index": "function_call", "function": legacy}, 0, events)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            events.extend(self._finish(stop_reason_from_wire(finish)))

    def _tool_call(self, call: JSON, position: int, events: list[StreamEvent]) -> None:
        wire_index = call.get("index")
        wire_index = wire_index if isinstance(wire_index, (int, str)) else position
        custom = call.get("type") == "custom" or isinstance(call.get("custom"), dict)
        fn = call.get("custom" if custom else "function")
        fn = fn if isinstance(fn, dict) else {}
        key = ("tool", wire_index)
        if key not in self._parts:
            legacy = wire_index == "function_call"
            name = str(fn.get("name") or "")
            call_id = str(call.get("id") or (name if legacy else f"call_{self._id}_{wire_index}"))
            meta = {"openai_tool_type": "custom"} if custom else {"openai_function_call": True} if legacy else None
            self._index(key, events, ToolCallPart(call_id, name, provider_metadata=meta))
        arguments = fn.get("input" if custom else "arguments")
        if isinstance(arguments, str) and arguments:
            events.append(PartDelta(self._parts[key], arguments))

    def _index(self, key: object, events: list[StreamEvent], part: Any = None) -> int:
        """The core index of the part ``key`` names, opened (``part``, or the
        text-like part ``key`` names) at its first delta."""
        index = self._parts.get(key)
        if index is None:
            index = self._parts[key] = len(self._parts)
            self._open.append(index)
            events.append(PartStart(index, part if part is not None else _text_part(key)))
        return index

    def _finish(self, reason: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = [PartStop(index) for index in self._open]
        self._open.clear()
        self._finished = True
        events.append(StreamFinish(reason))
        return events


def _text_part(key: object) -> TextPart | ReasoningPart:
    if key == "reasoning":
        return ReasoningPart("")
    return TextPart("", _REFUSAL) if key == "refusal" else TextPart("")


@attrs.define
class _Part:
    kind: str  # "text", "reasoning", "refusal", "tool", "custom" or "other"
    tool_index: int = 0


class ChunkEncoder:
    """Turns core events into the ``chat.completion.chunk`` objects of one response."""

    def __init__(self, id: str, model: str, created: int, include_usage: bool) -> None:
        self._id = id
        self._model = model
        self._created = created
        self._include_usage = include_usage
        self._started = False
        self._finished = False
        self._parts: dict[int, _Part] = {}
        self._tool_calls = 0
        self._held_usage: Usage | None = None

    def encode(self, event: StreamEvent) -> list[JSON]:
        """The chunks to send for one event (often none)."""
        out: list[JSON] = []
        if not self._started:
            self._started = True
            out.append(self._chunk({"role": "assistant", "content": ""}))
        if isinstance(event, PartStart):
            out.extend(self._start(event))
        elif isinstance(event, PartDelta):
            part = self._parts.get(event.index) or _Part("text")
            if event.text:
                out.extend(self._delta(part, event.text))
        elif isinstance(event, StreamFinish) and not self._finished:
            self._finished = True
            finish = finish_reason_to_wire(event.stop_reason, tool_calls=self._tool_calls > 0)
            out.append(self._chunk({}, finish))
            if self._held_usage is not None:
                out.append(self._usage_chunk(self._held_usage))
        elif isinstance(event, UsageReport) and self._include_usage:
            if self._finished:
                out.append(self._usage_chunk(event.usage))
            else:
                self._held_usage = event.usage
        return out

    def _start(self, event: PartStart) -> list[JSON]:
        part = event.part
        meta = part.provider_metadata or {}
        if isinstance(part, ToolCallPart):
            custom = meta.get("openai_tool_type") == "custom"
            state = self._parts[event.index] = _Part("custom" if custom else "tool", self._tool_calls)
            self._tool_calls += 1
            call: JSON = {"index": state.tool_index, "id": part.id}
            if custom:
                call.update(type="custom", custom={"name": part.name, "input": part.arguments})
            else:
                call.update(type="function", function={"name": part.name, "arguments": part.arguments})
            return [self._chunk({"tool_calls": [call]})]
        if isinstance(part, TextPart):
            state = self._parts[event.index] = _Part("refusal" if meta.get("openai_refusal") else "text")
        elif isinstance(part, ReasoningPart):
            state = self._parts[event.index] = _Part("reasoning")
        else:
            self._parts[event.index] = _Part("other")
            return []
        return self._delta(state, part.text) if part.text else []

    def _delta(self, part: _Part, text: str) -> list[JSON]:
        if part.kind == "tool":
            delta: JSON = {"tool_calls": [{"index": part.tool_index, "function": {"arguments": text}}]}
        elif part.kind == "custom":
            delta = {"tool_calls": [{"index": part.tool_index, "custom": {"input": text}}]}
        elif part.kind == "reasoning":
            delta = {"reasoning_content": text}
        elif part.kind in ("text", "refusal"):
            delta = {"content" if part.kind == "text" else "refusal": text}
        else:
            return []
        return [self._chunk(delta)]

    def _chunk(self, delta: JSON, finish_reason: str | None = None) -> JSON:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._envelope([choice], None)

    def _usage_chunk(self, usage: Usage) -> JSON:
        return self._envelope([], usage_to_wire(usage))

    def _envelope(self, choices: list[JSON], usage: JSON | None) -> JSON:
        chunk: JSON = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": choices,
        }
        if self._include_usage:
            chunk["usage"] = usage
        return chunk


class FrameDecoder:
    """Decodes one upstream chat stream's frames into core events; ``adapt``
    turns each chunk into a chat chunk first (the legacy completions stream's).

    The usual frame (one ``data:`` line holding a content delta, see
    :meth:`ChunkDecoder.content_only`) is read in a few steps: its JSON parsed
    in place, its one ``PartDelta`` made without the general walk of the chunk.
    Most frames of a stream are such a frame, byte for byte the same but for the
    text: the first one becomes the stream's template (:class:`gateway_core.sse.TextTemplate`), and a
    frame that is the template around another plain text gives its ``PartDelta``
    without being parsed at all."""

    __slots__ = ("_chunks", "_adapt", "_template", "_tries")

    def __init__(self, adapt: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self._chunks = ChunkDecoder()
        self._adapt = adapt
        self._template: TextTemplate | None = None
        self._tries = 0 if adapt is None else _TRIES  # learnt from chat chunks only

    def decode(self, raw: bytes) -> Frame:
        template = self._template
        if template is not None and not self._chunks._finished:
            text = template.text(raw)
            if text is not None:
                return Frame(raw, (PartDelta(template.index, text),) if text else ())
        if raw.startswith(b"data: {") and raw.find(b"\n") == len(raw) - 2 and raw.find(b"\r") < 0:
            # one data line: its JSON is the rest of the frame (the blank line is whitespace)
            try:
                chunk = _loads(raw[6:])
            except JSONDecodeError:
                chunk = None  # the general path below says what is wrong with it
            if type(chunk) is dict and "error" not in chunk:
                if self._adapt is not None:
                    chunk = self._adapt(chunk)
                events = self._chunks.content_only(chunk)
                if events is None:
                    return Frame(raw, tuple(self._chunks.feed(chunk)))
                if events and self._tries < _TRIES:
                    self._tries += 1
                    self._template = _template(raw, chunk, events[0])  # type: ignore[arg-type]
                    if self._template is not None:
                        self._tries = _TRIES
                return Frame(raw, events)
        _, data = frame_fields(raw)
        if not data:
            return Frame(raw)  # a comment or keep-alive
        if data == b"[DONE]":  # closes what a stream without finish_reason left open
            return Frame(raw, tuple(self._chunks.close()), terminal=True)
        chunk = parse_frame_json(data)
        if "error" in chunk and not chunk.get("choices"):
            error = UpstreamError(f"the upstream reported an error mid-stream: {upstream_error_message(200, data)}")
            error.upstream_body = excerpt(data)
            raise error
        return Frame(raw, tuple(self._chunks.feed(chunk if self._adapt is None else self._adapt(chunk))))


_TRIES = 3  # content frames a stream may offer as its template before the decoder stops trying


def _template(raw: bytes, chunk: JSON, delta: PartDelta) -> TextTemplate | None:
    """The template of ``raw`` (``chunk`` parsed, ``delta`` its event), or ``None``."""
    found = TextTemplate.candidate(raw, delta.text, delta.index)
    if found is None:
        return None
    template, probe, frame = found
    try:
        probed = _loads(frame[6:])
    except JSONDecodeError:
        return None
    chunk["choices"][0]["delta"]["content"] = probe  # the chunk is the decoder's own, read already
    return template if probed == chunk else None
