"""Responses stream events ⇄ core stream events (pure, stateful, no I/O).

:class:`ResponsesEncoder` writes a converted answer the way OpenAI streams one:
``response.created`` and ``response.in_progress`` first; for each core part an
``output_item.added`` (a message also gets ``content_part.added``, a reasoning
item ``reasoning_summary_part.added`` before its first text), its deltas
(``output_text.delta``, ``refusal.delta``, ``reasoning_summary_text.delta``,
``function_call_arguments.delta``), then its ``…done`` events and
``output_item.done`` with the whole item — for every item, also those a stream
never stopped (they are closed at the finish). :meth:`ResponsesEncoder.finish`
gives the last event, ``response.completed`` (``response.incomplete`` after a
max-tokens or content-filter stop) with the whole output and the usage;
:meth:`ResponsesEncoder.fail` an ``error`` event and ``response.failed``. Every
event carries the next ``sequence_number``.

:class:`ResponsesDecoder` reads a Responses upstream's events into core events
(for the tally: deltas, usage, the finish): an output item is a part, its deltas
that part's deltas; ``response.completed``/``incomplete`` finish the stream
with its usage; ``error`` and ``response.failed`` raise ``UpstreamError``.
"""

from __future__ import annotations

from typing import Any

import attrs

from gateway_core.errors import UpstreamError
from gateway_core.model import (
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

from .responses_response import (
    ResponseShell,
    call_item,
    content_part,
    is_custom_call,
    item_prefix,
    message_item,
    new_id,
    reasoning_item,
    status_of,
    usage_from_wire,
)

JSON = dict[str, Any]
Event = tuple[str, JSON]


@attrs.define
class _Item:
    kind: str  # "text", "refusal", "reasoning" or "call"
    item_id: str
    output_index: int
    part: Part
    text: list[str] = attrs.field(factory=list)
    meta: JSON = attrs.field(factory=dict)
    summary_open: bool = False


class ResponsesEncoder:
    """Turns the core events of one converted answer into Responses events."""

    def __init__(self, shell: ResponseShell, *, sequence_start: int = 0, started: bool = False) -> None:
        self.shell = shell
        self._seq = sequence_start
        self._started = started  # True: continue a stream someone else began (a native one that broke)
        self._open: dict[int, _Item] = {}  # core part index → item still streaming
        self._done: dict[int, JSON] = {}  # output index → finished item
        self._next_output = 0
        self._stop: StopReason | None = None
        self._usage: Usage | None = None

    def encode(self, event: StreamEvent) -> list[Event]:
        out = self._start()
        if isinstance(event, PartStart):
            out += self._part_start(event.index, event.part)
        elif isinstance(event, PartDelta):
            item = self._open.get(event.index)
            if item is not None:
                item.meta.update(event.provider_metadata or {})
                if event.text:
                    out += self._delta(item, event.text)
        elif isinstance(event, PartStop):
            item = self._open.pop(event.index, None)
            if item is not None:
                item.meta.update(event.provider_metadata or {})
                out += self._close(item)
        elif isinstance(event, StreamFinish):
            self._stop = event.stop_reason
            out += self._close_all()
        elif isinstance(event, UsageReport):
            self._usage = event.usage
        return out

    def finish(self) -> list[Event]:
        """The closing events of an answer that ended normally."""
        out = self._start() + self._close_all()
        status, incomplete = status_of(self._stop)
        final = self.shell.object(status, self._output(), self._usage, incomplete=incomplete)
        return out + [self._event(f"response.{status}", response=final)]

    def fail(self, message: str, code: str | None) -> list[Event]:
        """The closing events of an answer broken after it started."""
        out = self._start()
        out.append(self._event("error", code=code, message=message, param=None))
        # the response's error code is one of OpenAI's own (the ``error`` event keeps the gateway's)
        error = {"code": "rate_limit_exceeded" if code == "rate_limit_exceeded" else "server_error", "message": message}
        failed = self.shell.object("failed", self._output(), self._usage, error=error)
        return out + [self._event("response.failed", response=failed)]

    # --- parts -------------------------------------------------------------------

    def _start(self) -> list[Event]:
        if self._started:
            return []
        self._started = True
        snapshot = self.shell.object("in_progress")
        return [self._event("response.created", response=snapshot), self._event("response.in_progress", response=snapshot)]

    def _part_start(self, index: int, part: Part) -> list[Event]:
        meta = dict(part.provider_metadata or {})
        if isinstance(part, ToolCallPart):
            kind = "call"
        elif isinstance(part, ReasoningPart):
            kind = "reasoning"
        elif isinstance(part, TextPart):
            kind = "refusal" if meta.get("openai_refusal") else "text"
        else:
            return []  # images and other parts have no output item here
        if isinstance(part, ToolCallPart) and is_custom_call(part, self.shell.tools):
            kind = "custom"  # its input is sent whole when the call ends: the upstream streams it as JSON
        item = _Item(kind, new_id(item_prefix(part, self.shell.tools)), self._next_output, part, meta=meta)
        self._next_output += 1
        self._open[index] = item
        out = [self._event("response.output_item.added", output_index=item.output_index, item=self._item(item, "in_progress"))]
        if kind in ("text", "refusal"):
            empty = content_part(TextPart("", meta or None))
            out.append(self._event("response.content_part.added", **self._at(item), content_index=0, part=empty))
        text = getattr(part, "arguments", None) if kind in ("call", "custom") else getattr(part, "text", "")
        if text:
            out += self._delta(item, text)
        return out

    def _delta(self, item: _Item, text: str) -> list[Event]:
        item.text.append(text)
        if item.kind == "custom":
            return []
        if item.kind == "call":
            return [self._event("response.function_call_arguments.delta", **self._at(item), delta=text)]
        if item.kind == "reasoning":
            out = []
            if not item.summary_open:
                item.summary_open = True
                part = {"type": "summary_text", "text": ""}
                out.append(self._event("response.reasoning_summary_part.added", **self._at(item), summary_index=0, part=part))
            out.append(self._event("response.reasoning_summary_text.delta", **self._at(item), summary_index=0, delta=text))
            return out
        name = "response.refusal.delta" if item.kind == "refusal" else "response.output_text.delta"
        extra = {} if item.kind == "refusal" else {"logprobs": []}
        return [self._event(name, **self._at(item), content_index=0, delta=text, **extra)]

    def _close(self, item: _Item) -> list[Event]:
        text = "".join(item.text)
        at = self._at(item)
        out: list[Event] = []
        if item.kind == "call":
            name = self._item(item, "completed")["name"]
            out.append(self._event("response.function_call_arguments.done", **at, name=name, arguments=text))
        elif item.kind == "custom":
            given = self._item(item, "completed")["input"]
            out.append(self._event("response.custom_tool_call_input.delta", **at, delta=given))
            out.append(self._event("response.custom_tool_call_input.done", **at, input=given))
        elif item.kind == "reasoning" and item.summary_open:
            part = {"type": "summary_text", "text": text}
            out.append(self._event("response.reasoning_summary_text.done", **at, summary_index=0, text=text))
            out.append(self._event("response.reasoning_summary_part.done", **at, summary_index=0, part=part))
        elif item.kind == "refusal":
            out.append(self._event("response.refusal.done", **at, content_index=0, refusal=text))
            out.append(self._event("response.content_part.done", **at, content_index=0, part={"type": "refusal", "refusal": text}))
        elif item.kind == "text":
            part = content_part(TextPart(text))
            out.append(self._event("response.output_text.done", **at, content_index=0, text=text, logprobs=[]))
            out.append(self._event("response.content_part.done", **at, content_index=0, part=part))
        final = self._item(item, "completed")
        self._done[item.output_index] = final
        out.append(self._event("response.output_item.done", output_index=item.output_index, item=final))
        return out

    def _close_all(self) -> list[Event]:
        out: list[Event] = []
        for index in sorted(self._open, key=lambda i: self._open[i].output_index):
            out += self._close(self._open[index])
        self._open.clear()
        return out

    def _item(self, item: _Item, status: str) -> JSON:
        text = "".join(item.text) if status == "completed" else ""
        if item.kind in ("call", "custom"):
            assert isinstance(item.part, ToolCallPart)
            return call_item(item.item_id, item.part, text, status, self.shell.tools)
        if item.kind == "reasoning":
            return reasoning_item(item.item_id, text, item.meta if status == "completed" else None)
        if status != "completed":
            return message_item(item.item_id, [], status)
        return message_item(item.item_id, [content_part(TextPart(text, item.meta or None))], status)

    def _output(self) -> list[JSON]:
        return [self._done[i] for i in sorted(self._done)]

    def _at(self, item: _Item) -> JSON:
        return {"item_id": item.item_id, "output_index": item.output_index}

    def _event(self, kind: str, **fields: Any) -> Event:
        payload = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return kind, payload


# --- a Responses upstream's events → core events ------------------------------------

_DELTAS = frozenset((
    "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta", "response.reasoning_summary_text.delta", "response.reasoning_text.delta",
))  # fmt: skip
TERMINAL = frozenset(("response.completed", "response.incomplete"))


class ResponsesDecoder:
    """Turns one Responses upstream's events into core events."""

    def __init__(self) -> None:
        self._parts: dict[int, int] = {}  # output index → core part index
        self._calls = False
        self.response_id: str | None = None

    def feed(self, payload: JSON) -> list[StreamEvent]:
        kind = payload.get("type")
        if kind == "response.created":
            response = _dict(payload.get("response"))
            self.response_id = str(response.get("id") or "")
            created = response.get("created_at")
            return [StreamStart(self.response_id, str(response.get("model") or ""), int(created) if isinstance(created, (int, float)) else None)]
        if kind == "response.output_item.added":
            return self._added(payload)
        if kind in _DELTAS:
            index = self._parts.get(_int(payload.get("output_index")))
            delta = payload.get("delta")
            return [PartDelta(index, delta)] if index is not None and isinstance(delta, str) and delta else []
        if kind == "response.output_item.done":
            index = self._parts.get(_int(payload.get("output_index")))
            return [PartStop(index)] if index is not None else []
        if kind in TERMINAL:
            response = _dict(payload.get("response"))
            status, reason = response.get("status"), _dict(response.get("incomplete_details")).get("reason")
            stop = StopReason.TOOL_USE if self._calls else StopReason.END_TURN
            if status == "incomplete":
                stop = StopReason.CONTENT_FILTER if reason == "content_filter" else StopReason.MAX_TOKENS
            usage = usage_from_wire(response.get("usage"))
            return [StreamFinish(stop)] + ([UsageReport(usage)] if usage is not None else [])
        if kind in ("error", "response.failed"):
            detail = payload if kind == "error" else _dict(_dict(payload.get("response")).get("error"))
            raise UpstreamError(f"the upstream reported an error mid-stream: {detail.get('message') or kind}")
        return []

    def _added(self, payload: JSON) -> list[StreamEvent]:
        item = _dict(payload.get("item"))
        output_index = _int(payload.get("output_index"))
        index = self._parts[output_index] = len(self._parts)
        part: Part
        if item.get("type") in ("function_call", "custom_tool_call"):
            self._calls = True
            part = ToolCallPart(str(item.get("call_id") or ""), str(item.get("name") or ""))
        elif item.get("type") == "reasoning":
            part = ReasoningPart("")
        else:
            part = TextPart("")
        return [PartStart(index, part)]


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
