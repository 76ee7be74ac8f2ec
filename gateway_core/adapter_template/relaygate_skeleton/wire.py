"""The upstream's wire format ⇄ the core model: pure functions, no HTTP.

The wire: ``POST /api/chat`` with ``{"model", "messages": [{"role", "content"}],
"stream", "keep_alive", "options": {"temperature", "top_p", "num_predict", "stop"}}``. A whole
answer is ``{"model", "message": {"role", "content"}, "done": true, "done_reason",
"prompt_eval_count", "eval_count"}``; a stream is one such object a line, each
with a piece of ``message.content``, the last one ``"done": true`` with the
counts. Errors are ``{"error": "message"}``, as a body or as a stream line.
``GET /api/tags`` lists the models: ``{"models": [{"name", "model", "size", …}]}``.

This skeleton carries text only; a request with images or tools is refused.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import (
    ChatRequest,
    ChatResponse,
    InvalidRequestError,
    Part,
    PartDelta,
    PartStart,
    PartStop,
    StopReason,
    StreamEvent,
    StreamFinish,
    StreamStart,
    TextPart,
    Usage,
    UsageReport,
)

JSON = dict[str, Any]
CHAT_PATH = "/api/chat"
MODELS_PATH = "/api/tags"
STOP_REASONS = {"stop": StopReason.END_TURN, "length": StopReason.MAX_TOKENS}


def request_to_wire(request: ChatRequest, model: str, stream: bool, keep_alive: str | None = None) -> JSON:
    """The upstream body for a core request, with the upstream's model name (and
    how long the upstream keeps the model loaded, when the channel says)."""
    messages: list[JSON] = []
    if request.system:
        messages.append({"role": "system", "content": _text(request.system)})
    for message in request.messages:
        messages.append({"role": message.role.value, "content": _text(message.parts)})
    options = {
        "temperature": request.temperature,
        "top_p": request.top_p,
        "num_predict": request.max_tokens,
        "stop": list(request.stop) or None,
    }
    body: JSON = {"model": model, "messages": messages, "stream": stream}
    if keep_alive is not None:
        body["keep_alive"] = keep_alive
    options = {name: value for name, value in options.items() if value is not None}
    if options:
        body["options"] = options
    return body


def answer_from_wire(answer: JSON) -> ChatResponse:
    """The core response of a whole answer."""
    message = answer.get("message") or {}
    return ChatResponse(
        id=str(answer.get("created_at") or ""),
        model=str(answer.get("model") or ""),
        parts=(TextPart(str(message.get("content") or "")),),
        stop_reason=STOP_REASONS.get(str(answer.get("done_reason")), StopReason.END_TURN),
        usage=usage_from_wire(answer),
    )


def usage_from_wire(answer: JSON) -> Usage | None:
    """The usage an answer (or a stream's last line) reports, if it does."""
    prompt, output = answer.get("prompt_eval_count"), answer.get("eval_count")
    if not isinstance(prompt, int) or not isinstance(output, int):
        return None
    return Usage(input_tokens=prompt, output_tokens=output)


def error_message(status: int, body: bytes) -> str:
    """The message of an error body, for the gateway's error and the log; never raises."""
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        error = None
    return str(error) if error else f"the upstream answered HTTP {status}"


class StreamDecoder:
    """Turns one stream's lines into core events: one text part at index 0.

    The stream-event contract: a ``StreamStart`` first, the part started before
    its deltas and stopped before the ``StreamFinish``, then the usage.
    """

    def __init__(self) -> None:
        self.started = False

    def feed(self, line: JSON) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if not self.started:
            self.started = True
            events += [StreamStart(id=str(line.get("created_at") or ""), model=str(line.get("model") or "")), PartStart(0, TextPart(""))]
        text = (line.get("message") or {}).get("content")
        if isinstance(text, str) and text:
            events.append(PartDelta(0, text))
        if line.get("done") is True:
            events += [PartStop(0), StreamFinish(STOP_REASONS.get(str(line.get("done_reason")), StopReason.END_TURN))]
            usage = usage_from_wire(line)
            if usage is not None:
                events.append(UsageReport(usage))
        return events


def _text(parts: tuple[Part, ...]) -> str:
    if not all(isinstance(part, TextPart) for part in parts):
        raise InvalidRequestError("This model's channel carries text only (no images, tools or tool results).")
    return "".join(part.text for part in parts if isinstance(part, TextPart))
