"""Anthropic Messages stream events ⇄ core stream events (pure, stateful, no I/O).

:class:`EventDecoder` reads one upstream stream. A content block's ``index`` is its
core part index. ``message_start`` gives ``StreamStart``; ``content_block_start``
a ``PartStart`` (a ``TextPart``, ``ReasoningPart`` or ``ToolCallPart``; blocks the
core has no part for are kept whole on an empty ``TextPart`` and their deltas are
not converted); ``text_delta``, ``thinking_delta`` and ``input_json_delta`` a
``PartDelta``; a ``signature_delta`` is held and given on the block's ``PartStop``
as ``{"anthropic_signature": …}``; ``citations_delta`` is not converted.
``message_delta`` gives ``StreamFinish`` and one ``UsageReport`` with the usage of
``message_start`` and ``message_delta`` merged (the latter's counts are
cumulative and win). The input counted in ``message_start`` is given at once as
an ``InputReport``: a stream broken half way is charged that input and the
output it delivered (estimated), never ``message_start``'s placeholder output
count; so is a stream that ends with ``message_stop`` but no ``message_delta``
(some compatible upstreams omit it). An ``error`` event raises (see
:func:`gateway_anthropic.error_body.stream_error`).

:class:`EventEncoder` writes core events from another wire as Anthropic sends
them: ``message_start``, then blocks one at a time (``content_block_start``,
deltas, ``content_block_stop``; a ``ping`` after the first start), then
``message_delta`` with the stop reason and usage, then ``message_stop``. Block
indexes count from 0 in order of appearance. A part whose deltas resume after
another part began (interleaved upstream parts) continues in a new block of the
same kind, because Anthropic clients expect one open block at a time. Every
started block is stopped, also when the stream fails (:meth:`EventEncoder.abort`).
"""

from __future__ import annotations

from typing import Any

import attrs

from gateway_core.model import (
    InputReport,
    Part,
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

from .content import dump_json
from .error_body import stream_error
from .messages_response import stop_reason_from_wire, stop_reason_to_wire, usage_from_wire, usage_to_wire

JSON = dict[str, Any]
WireEvent = tuple[str, JSON]
_DELTA_TEXT = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}  # delta type → its text's key
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation", "output_tokens_details")


class EventDecoder:
    """Turns one upstream's Messages stream events into core events."""

    def __init__(self) -> None:
        self._finished = False
        self._usage: JSON = {}
        self._delta_seen = False  # a message_delta came: the usage's output count is real
        self._kinds: dict[int, str] = {}  # block index → "text", "thinking", "tool_use" or "opaque"
        self._open: list[int] = []
        self._signatures: dict[int, str] = {}

    def feed(self, payload: Any, raw: bytes = b"") -> list[StreamEvent]:
        """The core events of one event's JSON payload."""
        if not isinstance(payload, dict):
            return []
        kind = payload.get("type")
        if kind == "error":
            raise stream_error(payload, raw)
        if self._finished and kind != "message_stop":
            return []
        if kind == "message_start":
            message = payload.get("message")
            message = message if isinstance(message, dict) else {}
            self._merge_usage(message.get("usage"))
            events: list[StreamEvent] = [StreamStart(id=str(message.get("id") or ""), model=str(message.get("model") or ""))]
            counted = usage_from_wire(self._usage) if "input_tokens" in self._usage else None
            if counted is not None:  # its output count is a placeholder
                events.append(InputReport(attrs.evolve(counted, output_tokens=0, reasoning_tokens=0)))
            return events
        index = payload.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            return self._start(index, payload.get("content_block"))
        if kind == "content_block_delta" and isinstance(index, int):
            return self._delta(index, payload.get("delta"))
        if kind == "content_block_stop" and isinstance(index, int) and index in self._open:
            self._open.remove(index)
            signature = self._signatures.pop(index, None)
            return [PartStop(index, {"anthropic_signature": signature} if signature is not None else None)]
        if kind == "message_delta":
            delta = payload.get("delta")
            self._delta_seen = True
            self._merge_usage(payload.get("usage"))
            return self._finish(stop_reason_from_wire(delta.get("stop_reason") if isinstance(delta, dict) else None))
        if kind == "message_stop":
            return [] if self._finished else self._finish(None)
        return []  # ping and events of later API versions

    def takes_text(self, index: int) -> bool:
        """Whether a ``text_delta`` of block ``index`` now gives its text as a ``PartDelta``."""
        return not self._finished and index in self._open and self._kinds.get(index) != "opaque"

    def _start(self, index: int, block: Any) -> list[StreamEvent]:
        block = block if isinstance(block, dict) else {}
        kind = block.get("type")
        part: Part
        initial = ""
        if kind == "text":
            part, initial = TextPart(""), str(block.get("text") or "")
        elif kind == "thinking":
            part, initial = ReasoningPart(""), str(block.get("thinking") or "")
            if block.get("signature"):
                self._signatures[index] = str(block["signature"])
        elif kind == "redacted_thinking":
            part = ReasoningPart("", {"anthropic_redacted": block.get("data")})
        elif kind == "tool_use":
            part = ToolCallPart(str(block.get("id") or f"toolu_{index}"), str(block.get("name") or ""))
            arguments = block.get("input")
            initial = dump_json(arguments) if isinstance(arguments, dict) and arguments else ""
        else:
            kind, part = "opaque", TextPart("", {"anthropic_block": block})
        self._kinds[index] = str(kind)
        self._open.append(index)
        events: list[StreamEvent] = [PartStart(index, part)]
        if initial:
            events.append(PartDelta(index, initial))
        return events

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, dict) or index not in self._open:
            return []
        kind, block = delta.get("type"), self._kinds.get(index)
        if kind == "signature_delta":
            self._signatures[index] = self._signatures.get(index, "") + str(delta.get("signature") or "")
            return []
        key = _DELTA_TEXT.get(kind) if type(kind) is str else None
        if key is None or block == "opaque":
            return []
        text = delta.get(key)
        return [PartDelta(index, text)] if isinstance(text, str) and text else []

    def _merge_usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self._usage.update({k: usage[k] for k in _USAGE_KEYS if usage.get(k) is not None})

    def _finish(self, reason: StopReason | None) -> list[StreamEvent]:
        events: list[StreamEvent] = [PartStop(index) for index in self._open]
        self._open.clear()
        self._finished = True
        events.append(StreamFinish(reason))
        usage = usage_from_wire(self._usage) if self._usage and self._delta_seen else None
        if usage is not None:
            events.append(UsageReport(usage))
        return events


@attrs.define
class _Block:
    index: int  # the Anthropic block index
    part: int  # the core part index
    kind: str  # "text", "thinking" or "tool_use"
    signature: str | None = None


class EventEncoder:
    """Turns core events into the Messages stream events of one response."""

    def __init__(self, message_id: str, model: str) -> None:
        self._id = message_id
        self._model = model
        self._started = False
        self._pinged = False
        self._next_index = 0
        self._current: _Block | None = None
        self._parts: dict[int, Part] = {}
        self._whole: set[int] = set()  # parts written as one complete block
        self._tool_calls = False
        self._finished = False
        self._stop_reason: StopReason | None = None
        self._usage: Usage | None = None
        self._delta_sent = False
        self._stopped = False

    def encode(self, event: StreamEvent) -> list[WireEvent]:
        """The events to send for one core event (often none)."""
        out: list[WireEvent] = []
        self._ensure_started(out)
        if isinstance(event, PartStart) and not self._finished:
            self._parts[event.index] = event.part
            self._open(event.index, event.part, out)
            if event.part.provider_metadata and isinstance(event.part, ReasoningPart) and self._current is not None:
                self._current.signature = event.part.provider_metadata.get("anthropic_signature") or None
            text = event.part.arguments if isinstance(event.part, ToolCallPart) else getattr(event.part, "text", "")
            if text:
                self._delta(event.index, text, out)
        elif isinstance(event, PartDelta) and not self._finished:
            signature = (event.provider_metadata or {}).get("anthropic_signature")
            if event.text:
                self._delta(event.index, event.text, out)
            if signature and self._current is not None and self._current.part == event.index:
                self._current.signature = signature
        elif isinstance(event, PartStop):
            current = self._current
            if current is not None and current.part == event.index:
                signature = (event.provider_metadata or {}).get("anthropic_signature")
                current.signature = signature or current.signature
                self._close(out)
        elif isinstance(event, StreamFinish) and not self._finished:
            self._close(out)
            self._finished, self._stop_reason = True, event.stop_reason
            if self._usage is not None:
                self._message_delta(out)
        elif isinstance(event, UsageReport):
            self._usage = event.usage
            if self._finished:
                self._message_delta(out)
        return out

    def close(self) -> list[WireEvent]:
        """The events that end a stream that ended normally: ``message_delta`` (if not
        sent yet, with the usage known so far) and ``message_stop``."""
        out: list[WireEvent] = []
        self._ensure_started(out)
        self._close(out)
        self._finished = True
        self._message_delta(out)
        if not self._stopped:
            self._stopped = True
            out.append(("message_stop", {"type": "message_stop"}))
        return out

    def abort(self) -> list[WireEvent]:
        """Stops the open block of a stream that failed (the caller sends the ``error``)."""
        out: list[WireEvent] = []
        self._close(out)
        return out

    def _ensure_started(self, out: list[WireEvent]) -> None:
        if self._started:
            return
        self._started = True
        message: JSON = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        out.append(("message_start", {"type": "message_start", "message": message}))

    def _open(self, part_index: int, part: Part, out: list[WireEvent]) -> None:
        self._close(out)
        meta = part.provider_metadata or {}
        block: JSON
        whole: JSON | None = None
        if isinstance(part, TextPart) and "anthropic_block" in meta:
            whole = meta["anthropic_block"]
        elif isinstance(part, ReasoningPart) and meta.get("anthropic_redacted") is not None:
            whole = {"type": "redacted_thinking", "data": meta["anthropic_redacted"]}
        if whole is not None:  # a complete block: start and stop at once
            self._whole.add(part_index)
            self._start_block(whole, out)
            self._stop_block(self._next_index - 1, out)
            return
        if isinstance(part, TextPart):
            kind, block = "text", {"type": "text", "text": ""}
        elif isinstance(part, ReasoningPart):
            kind, block = "thinking", {"type": "thinking", "thinking": "", "signature": ""}
        elif isinstance(part, ToolCallPart):
            self._tool_calls = True
            kind, block = "tool_use", {"type": "tool_use", "id": part.id, "name": part.name, "input": {}}
        else:  # images and tool results have no place in an answer
            return
        self._current = _Block(self._next_index, part_index, kind)
        self._start_block(block, out)

    def _delta(self, part_index: int, text: str, out: list[WireEvent]) -> None:
        current = self._current
        if part_index in self._whole:
            return
        if current is None or current.part != part_index:  # a new or resumed part
            self._open(part_index, self._parts.setdefault(part_index, TextPart("")), out)
            current = self._current
            if current is None or current.part != part_index:
                return
        if current.kind == "text":
            delta = {"type": "text_delta", "text": text}
        elif current.kind == "thinking":
            delta = {"type": "thinking_delta", "thinking": text}
        else:
            delta = {"type": "input_json_delta", "partial_json": text}
        out.append(("content_block_delta", {"type": "content_block_delta", "index": current.index, "delta": delta}))

    def _close(self, out: list[WireEvent]) -> None:
        current, self._current = self._current, None
        if current is None:
            return
        if current.kind == "thinking" and current.signature:
            delta = {"type": "signature_delta", "signature": current.signature}
            out.append(("content_block_delta", {"type": "content_block_delta", "index": current.index, "delta": delta}))
        self._stop_block(current.index, out)

    def _start_block(self, block: JSON, out: list[WireEvent]) -> None:
        index, self._next_index = self._next_index, self._next_index + 1
        out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
        if not self._pinged:
            self._pinged = True
            out.append(("ping", {"type": "ping"}))

    def _stop_block(self, index: int, out: list[WireEvent]) -> None:
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))

    def _message_delta(self, out: list[WireEvent]) -> None:
        if self._delta_sent:
            return
        self._delta_sent = True
        if not self._pinged:
            self._pinged = True
            out.append(("ping", {"type": "ping"}))
        usage = usage_to_wire(self._usage) if self._usage is not None else {"output_tokens": 0}
        delta = {"stop_reason": stop_reason_to_wire(self._stop_reason, tool_calls=self._tool_calls), "stop_sequence": None}
        out.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
