"""The ``fake`` wire: the smallest chat wire that exercises the whole request path.

The test kit's channel type (:mod:`.fake_channel`), its client protocol
(:mod:`.fake_protocol`) and its upstream (:mod:`.fake_chat`) speak it, so the
core's tests need no provider adapter (as ``llm``'s tests use a mock model).
It is no provider's format; text only:

- a request: ``{"model", "messages": [{"role", "content"}], "stream", "max_tokens"}``
  (``role``: ``system``, ``user`` or ``assistant``; unknown fields are kept);
- a whole answer: ``{"id", "model", "content", "stop", "usage": {"input", "output"}}``
  (``stop``: a :class:`StopReason` value);
- a stream: server-sent events, ``data: {"id", "model"}`` first, ``data: {"delta":
  "text"}`` a piece, then ``data: {"stop"}`` and ``data: {"usage"}`` (in one event or
  two), then ``data: [END]``;
- an error: ``{"error": "message"}``, as a body or as a stream's event.

Pure functions: no HTTP objects inside.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import InvalidRequestError, UpstreamError
from ..model import (
    ChatRequest,
    ChatResponse,
    Message,
    Part,
    PartDelta,
    PartStart,
    PartStop,
    Role,
    StopReason,
    StreamEvent,
    StreamFinish,
    StreamStart,
    TextPart,
    Usage,
    UsageReport,
)
from ..sse import data_frame, frame_fields

JSON = dict[str, Any]
WIRE = "fake.chat"
END = b"data: [END]\n\n"
ROLES = {"system": Role.SYSTEM, "user": Role.USER, "assistant": Role.ASSISTANT}


def text_of(parts: tuple[Part, ...]) -> str:
    """The text of ``parts``; a part of another kind is refused (the wire carries text only)."""
    if not all(isinstance(part, TextPart) for part in parts):
        raise InvalidRequestError("The fake wire carries text only.")
    return "".join(part.text for part in parts if isinstance(part, TextPart))


def request_to_core(body: JSON) -> ChatRequest:
    """A request body of the wire (checked by :func:`check_request`) as a core request."""
    system = tuple(TextPart(m["content"]) for m in body["messages"] if m["role"] == "system")
    messages = tuple(Message(ROLES[m["role"]], (TextPart(m["content"]),)) for m in body["messages"] if m["role"] != "system")
    known = {"model", "messages", "stream", "max_tokens"}
    extra = {name: value for name, value in body.items() if name not in known}
    return ChatRequest(model=body["model"], messages=messages, system=system, max_tokens=body.get("max_tokens"),
                       stream=bool(body.get("stream")), extra=extra)  # fmt: skip


def check_request(body: JSON) -> None:
    """Refuse a body that is not a request of the wire (:class:`InvalidRequestError`)."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequestError("'model' must be a non-empty string.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequestError("'messages' must be a non-empty list.")
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES or not isinstance(message.get("content"), str):
            raise InvalidRequestError("Each message needs a 'role' (system, user or assistant) and a string 'content'.")
    cap = body.get("max_tokens")
    if cap is not None and (type(cap) is not int or cap < 1):
        raise InvalidRequestError("'max_tokens' must be a positive integer.")
    if not isinstance(body.get("stream", False), bool):
        raise InvalidRequestError("'stream' must be true or false.")


def request_to_wire(request: ChatRequest, model: str, stream: bool) -> JSON:
    """The wire's body for a core request, with the upstream's model name."""
    messages = [{"role": "system", "content": text_of(request.system)}] if request.system else []
    for message in request.messages:
        if message.role not in (Role.USER, Role.ASSISTANT, Role.SYSTEM):
            raise InvalidRequestError("The fake wire carries system, user and assistant messages only.")
        messages.append({"role": message.role.value, "content": text_of(message.parts)})
    body: JSON = {**request.extra, "model": model, "messages": messages, "stream": stream}
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


def usage_to_wire(usage: Usage | None) -> JSON | None:
    return None if usage is None else {"input": usage.input_tokens, "output": usage.output_tokens}


def usage_from_wire(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    return Usage(input_tokens=int(value.get("input") or 0), output_tokens=int(value.get("output") or 0))


def stop_from_wire(value: Any) -> StopReason:
    try:
        return StopReason(value)
    except ValueError:
        return StopReason.END_TURN


def answer_to_core(answer: JSON) -> ChatResponse:
    return ChatResponse(id=str(answer.get("id") or ""), model=str(answer.get("model") or ""),
                        parts=(TextPart(str(answer.get("content") or "")),), stop_reason=stop_from_wire(answer.get("stop")),
                        usage=usage_from_wire(answer.get("usage")))  # fmt: skip


def answer_to_wire(response: ChatResponse, model: str) -> JSON:
    text = "".join(part.text for part in response.parts if isinstance(part, TextPart))
    stop = response.stop_reason.value if response.stop_reason is not None else None
    return {"id": response.id, "model": model, "content": text, "stop": stop, "usage": usage_to_wire(response.usage)}


def error_message(status: int, body: bytes) -> str:
    """The message of an error answer of the wire (``{"error": "message"}``), or its bytes."""
    try:
        return str(orjson.loads(body)["error"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace") or f"status {status}"


class StreamDecoder:
    """One stream's events of the wire as core events: one text part at index 0."""

    def __init__(self) -> None:
        self.started = False

    def feed(self, frame: bytes) -> tuple[tuple[StreamEvent, ...], bool]:
        """The core events of one SSE frame, and whether it is the terminal ``[END]``."""
        _, data = frame_fields(frame)
        if not data.strip():
            return (), False
        if data.strip() == b"[END]":
            return (), True
        event = orjson.loads(data)
        if "error" in event:
            raise UpstreamError(f"the upstream reported an error mid-stream: {event['error']}", retryable=False)
        events: list[StreamEvent] = []
        if not self.started:
            self.started = True
            events += [StreamStart(id=str(event.get("id") or ""), model=str(event.get("model") or "")), PartStart(0, TextPart(""))]
        if isinstance(event.get("delta"), str) and event["delta"]:
            events.append(PartDelta(0, event["delta"]))
        if "stop" in event:
            events += [PartStop(0), StreamFinish(stop_from_wire(event["stop"]))]
        usage = usage_from_wire(event.get("usage"))
        if usage is not None:
            events.append(UsageReport(usage))
        return tuple(events), False


class StreamEncoder:
    """Core stream events as the wire's events (what a client of the fake protocol reads)."""

    def __init__(self) -> None:
        self.started = False

    def encode(self, event: StreamEvent) -> bytes:
        out = b""
        if not self.started:
            self.started = True
            start = event if type(event) is StreamStart else StreamStart(id="", model="")
            out = data_frame({"id": start.id, "model": start.model})
        if type(event) is PartDelta:
            out += data_frame({"delta": event.text})
        elif type(event) is StreamFinish:
            out += data_frame({"stop": event.stop_reason.value if event.stop_reason is not None else None})
        elif type(event) is UsageReport:
            out += data_frame({"usage": usage_to_wire(event.usage)})
        return out
