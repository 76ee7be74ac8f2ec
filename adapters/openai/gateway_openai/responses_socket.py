"""The Responses API over a WebSocket (Codex's transport): ``GET /v1/responses`` upgraded.

Each client message ``{"type": "response.create", …}`` carries the body of a
``POST /v1/responses`` (without ``stream``, implied); the core runs it as that
request (:mod:`gateway_core.request.frame_relay`) and :class:`ResponsesSocket` turns the
stream's events into messages, one per event, as they come. What it adds:

- ``previous_response_id`` naming the connection's last completed response is
  answered from the connection's memory, as OpenAI does for ``store: false``
  (what Codex sends): the request goes out with that response's input and output
  items in front of its own input, on any channel of its model. Only the last
  response is remembered (Codex builds on the last one), up to
  :data:`MAX_KEPT_CHARS` of JSON; any other id goes the HTTP way (kept
  responses, or the upstream that holds it).
- ``generate: false`` (Codex's warm-up) prepares that memory without a model
  call: the answer is ``response.created`` and ``response.completed`` with no
  output and no tokens (:func:`warmup_answer`, over HTTP too).
- An answer with an error status becomes one ``error`` message with its
  ``status`` and the error object (Codex reads both); a stream broken after its
  start ends with ``error`` and ``response.failed``, as over HTTP.
- ``stream_id`` (the SDK's lanes) is echoed on each event of its response;
  ``response.processed`` (Codex's acknowledgement) is accepted silently; any
  other message type is answered with an ``error``. The connection stays usable
  after every error.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from gateway_core import Call, FrameConversation, InvalidRequestError, LocalAnswer
from gateway_core.sse import event_frame

from .responses_kept import input_items, shown_body
from .responses_response import ResponseShell

JSON = dict[str, Any]
MAX_KEPT_CHARS = 32 * 1024 * 1024  # the last response's conversation, at most, per connection
ENVELOPE = ("type", "stream_id")  # the message's own fields, not the request's
_ITEM_DONE = b'"response.output_item.done"'
_FINAL = (b'"response.completed"', b'"response.incomplete"')


class ResponsesSocket(FrameConversation):
    """One Responses WebSocket connection."""

    def __init__(self, max_kept_chars: int = MAX_KEPT_CHARS) -> None:
        self.max_kept_chars = max_kept_chars
        self.last: tuple[str, bytes] | None = None  # the last completed response: its id, its conversation (JSON)
        self.input: list[Any] = []  # the running response's whole input
        self.output: list[Any] = []  # its output items so far
        self.response_id: str | None = None  # set when it completed
        self.stream_id: bytes | None = None  # its lane, echoed on its events (JSON)

    def request(self, text: str) -> bytes | None:
        try:
            message = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise InvalidRequestError(f"A message must be a JSON object ({exc}).", code="invalid_json") from None
        if not isinstance(message, dict):
            raise InvalidRequestError("A message must be a JSON object with a 'type'.", code="invalid_json")
        kind = message.get("type")
        if kind == "response.processed":
            return None
        if kind != "response.create":
            raise InvalidRequestError(
                f"Unsupported message type {kind!r}: this gateway serves 'response.create' over the Responses WebSocket.",
                code="unsupported_event_type", param="type",
            )  # fmt: skip
        stream_id = message.get("stream_id")
        body = {key: value for key, value in message.items() if key not in ENVELOPE}
        body["stream"] = True
        previous = body.get("previous_response_id")
        if self.last is not None and isinstance(previous, str) and previous == self.last[0]:
            del body["previous_response_id"]
            body["input"] = orjson.loads(self.last[1]) + input_items(body.get("input"))
        self.input = input_items(body.get("input"))
        self.output, self.response_id = [], None
        self.stream_id = orjson.dumps(stream_id) if isinstance(stream_id, str) else None
        return orjson.dumps(body)

    def event(self, data: bytes) -> str | None:
        if _ITEM_DONE in data or _FINAL[0] in data or _FINAL[1] in data:
            self._observe(data)
        if self.stream_id is not None and data.endswith(b"}"):
            data = data[:-1] + b',"stream_id":' + self.stream_id + b"}"
        return data.decode("utf-8", "replace")

    def _observe(self, data: bytes) -> None:
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            self.output.append(event["item"])
        elif kind in ("response.completed", "response.incomplete") and isinstance(event.get("response"), dict):
            response = event["response"]
            self.response_id = response.get("id") if isinstance(response.get("id"), str) else None
            if not self.output and isinstance(response.get("output"), list):
                self.output = [item for item in response["output"] if isinstance(item, dict)]

    def error(self, status: int, body: bytes, request_id: str) -> str:
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            payload = None
        error = payload.get("error") if isinstance(payload, dict) else None
        if not isinstance(error, dict):
            kind = "server_error" if status >= 500 else "invalid_request_error"
            text = body.decode("utf-8", "replace").strip()[:1000] or f"The request failed with status {status}."
            error = {"type": kind, "code": None, "message": text, "param": None}
        message: JSON = {"type": "error", "status": status, "error": error}
        if self.stream_id is not None:
            message["stream_id"] = orjson.loads(self.stream_id)
        return orjson.dumps(message).decode()

    def answer(self, body: bytes) -> list[str]:
        """A 200 answer in one piece (none is expected: every request streams)."""
        try:
            response = orjson.loads(body)
        except orjson.JSONDecodeError:
            return [self.error(502, body, "")]
        return [self.event(orjson.dumps({"type": "response.completed", "response": response})) or ""]

    def finished(self) -> None:
        if self.response_id is not None:
            conversation = orjson.dumps(self.input + self.output)
            # too large: remembered no more (a later id naming it goes the HTTP way)
            self.last = (self.response_id, conversation) if len(conversation) <= self.max_kept_chars else None
        self.input, self.output, self.response_id, self.stream_id = [], [], None, None


def warmup_answer(call: Call) -> LocalAnswer:
    """The answer to ``generate: false``: a completed response with no output,
    no tokens and no model call (streamed when asked)."""
    shell = ResponseShell(shown_body(call), call.model, created_at=int(time.time()))
    done = shell.object("completed", (), None)
    done["usage"] = {
        "input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0,
    }  # fmt: skip
    if not call.stream:
        return LocalAnswer(orjson.dumps(done), estimated=False)
    created = {"type": "response.created", "sequence_number": 0, "response": shell.object("in_progress")}
    completed = {"type": "response.completed", "sequence_number": 1, "response": done}
    body = event_frame("response.created", created) + event_frame("response.completed", completed)
    return LocalAnswer(body, estimated=False, content_type="text/event-stream")
