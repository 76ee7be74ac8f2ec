"""ConverseStream's events as core stream events (pure).

Each event-stream message (:mod:`gateway_bedrock.eventstream`) is an event
(``:message-type: event``, its name in ``:event-type``, a JSON payload) or a
failure (``:message-type: exception`` with ``:exception-type``, or ``error`` with
``:error-code``), which raises the gateway error it maps to
(:func:`gateway_bedrock.errors.stream_failure`).

- ``messageStart`` → ``StreamStart``.
- ``contentBlockStart`` with ``toolUse`` → a tool-call part; text and reasoning
  blocks have no start event in Converse, so their first delta starts them.
- ``contentBlockDelta``: ``text``, ``toolUse.input`` (JSON text), and
  ``reasoningContent`` (``text``; ``signature``, held for the block's stop;
  ``redactedContent``) → deltas.
- ``contentBlockStop`` → ``PartStop`` (with the signature); ``messageStop`` →
  ``StreamFinish``; ``metadata`` → ``UsageReport``. Unknown events are skipped,
  and so is the ``p`` padding Bedrock adds to payloads.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import UpstreamError
from gateway_core.errors import excerpt
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
    UsageReport,
)

from .converse_response import stop_reason, usage_from_converse
from .errors import stream_failure
from .eventstream import HeaderValue

JSON = dict[str, Any]


class ConverseEvents:
    """Turns one stream's messages into core events, keeping which blocks started."""

    __slots__ = ("_id", "_model", "_started", "_signatures")

    def __init__(self, response_id: str, model: str) -> None:
        self._id, self._model = response_id, model
        self._started: set[int] = set()
        self._signatures: dict[int, str] = {}

    def feed(self, headers: dict[str, HeaderValue], payload: bytes) -> list[StreamEvent]:
        failure = stream_failure(headers, payload)
        if failure is not None:
            raise failure
        event = headers.get(":event-type")
        data = _json(payload)
        if event == "messageStart":
            return [StreamStart(self._id, self._model)]
        if event == "contentBlockStart":
            return self._start(data)
        if event == "contentBlockDelta":
            return self._delta(data)
        if event == "contentBlockStop":
            index = _index(data)
            if index not in self._started:
                return []
            self._started.discard(index)
            signature = self._signatures.pop(index, None)
            return [PartStop(index, {"anthropic_signature": signature} if signature is not None else None)]
        if event == "messageStop":
            return [StreamFinish(stop_reason(data.get("stopReason")))]
        if event == "metadata":
            usage = usage_from_converse(data.get("usage"))
            return [UsageReport(usage)] if usage is not None else []
        return []

    def _start(self, data: JSON) -> list[StreamEvent]:
        index = _index(data)
        tool = _object(data, "start").get("toolUse")
        if not isinstance(tool, dict) or index in self._started:
            return []
        self._started.add(index)
        return [PartStart(index, ToolCallPart(str(tool.get("toolUseId") or ""), str(tool.get("name") or "")))]

    def _delta(self, data: JSON) -> list[StreamEvent]:
        index, delta = _index(data), _object(data, "delta")
        events: list[StreamEvent] = []
        if isinstance(delta.get("text"), str):
            self._begin(index, TextPart(""), events)
            events.append(PartDelta(index, delta["text"]))
        elif isinstance(delta.get("toolUse"), dict):
            self._begin(index, ToolCallPart("", ""), events)
            events.append(PartDelta(index, str(delta["toolUse"].get("input") or "")))
        elif isinstance(delta.get("reasoningContent"), dict):
            reasoning = delta["reasoningContent"]
            if isinstance(reasoning.get("redactedContent"), str):
                self._begin(index, ReasoningPart("", {"anthropic_redacted": reasoning["redactedContent"]}), events)
            else:
                self._begin(index, ReasoningPart(""), events)
            if isinstance(reasoning.get("text"), str):
                events.append(PartDelta(index, reasoning["text"]))
            if isinstance(reasoning.get("signature"), str):
                self._signatures[index] = self._signatures.get(index, "") + reasoning["signature"]
        return events

    def _begin(self, index: int, part: Any, events: list[StreamEvent]) -> None:
        if index not in self._started:
            self._started.add(index)
            events.append(PartStart(index, part))


def _object(data: JSON, name: str) -> JSON:
    """The object ``data[name]``, or an empty one when it is missing or not an object."""
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def _index(data: JSON) -> int:
    index = data.get("contentBlockIndex")
    return index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else 0


def _json(payload: bytes) -> JSON:
    try:
        data = orjson.loads(payload) if payload else {}
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        error = UpstreamError("the upstream sent a stream event whose payload is not a JSON object")
        error.upstream_body = excerpt(payload)
        raise error
    return data

