"""The three client protocols the bench speaks: where a request goes, how it is
keyed, what its body looks like, what the fake upstream answers in that protocol,
and how the load generator tells a right answer.

A scenario's body is made in OpenAI's chat shape (``bench/shapes.py``) and written
in another protocol's shape by its :class:`Wire` (``anthropic``: Messages;
``gemini``: generateContent): the same system prompt, turns, tool calls, tool
results and tools. A paced stream's ``bench:tokens=N:pace=MS`` marker
(``shapes.stream_request``) travels in the first user turn's text there, which
every gateway forwards whatever protocol it converts to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

MODEL = "bench-model"
CREATED = 1_700_000_000
ANSWER = "Hello from the bench upstream."
DONE = b"data: [DONE]\n\n"


# --- OpenAI chat ---------------------------------------------------------------------


def chunk_frame(delta: dict, finish: str | None = None, usage: dict | None = None, choices: bool = True) -> bytes:
    payload = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
    }
    if usage is not None:
        payload["usage"] = usage
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def openai_stream(chunks: int) -> tuple[list[bytes], bytes]:
    """The frames of a chat stream of ``chunks - 2`` content deltas, and its usage
    frame (sent only when the request asks for usage)."""
    frames = [chunk_frame({"role": "assistant", "content": ""})]
    frames += [chunk_frame({"content": f"tok{i} "}) for i in range(max(0, chunks - 2))]
    frames.append(chunk_frame({}, finish="stop"))
    usage = {"prompt_tokens": 12, "completion_tokens": max(0, chunks - 2), "total_tokens": 12 + max(0, chunks - 2)}
    return frames, chunk_frame({}, usage=usage, choices=False)


OPENAI_COMPLETION = orjson.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": CREATED, "model": MODEL,
    "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER, "refusal": None}, "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    "system_fingerprint": "fp_bench",
})  # fmt: skip


# --- Anthropic Messages ------------------------------------------------------------------


def _event(name: str, payload: dict) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def anthropic_stream(chunks: int) -> list[bytes]:
    """A Messages stream of ``chunks - 2`` text deltas (one frame each)."""
    message = {
        "id": "msg_bench", "type": "message", "role": "assistant", "content": [], "model": MODEL,
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1},
    }  # fmt: skip
    frames = [_event("message_start", {"type": "message_start", "message": message})]
    frames.append(_event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
    frames.append(_event("ping", {"type": "ping"}))
    for i in range(chunks - 2):
        delta = {"type": "text_delta", "text": f"tok{i} "}
        frames.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    frames.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    delta = {"stop_reason": "end_turn", "stop_sequence": None}
    frames.append(_event("message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": chunks - 2}}))
    frames.append(_event("message_stop", {"type": "message_stop"}))
    return frames


ANTHROPIC_MESSAGE = orjson.dumps({
    "id": "msg_bench", "type": "message", "role": "assistant", "model": MODEL, "content": [{"type": "text", "text": ANSWER}],
    "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 7},
})  # fmt: skip


def anthropic_body(chat: dict[str, Any], model: str) -> dict[str, Any]:
    """``chat`` (an OpenAI chat body) as a Messages request for ``model``."""
    system = [m["content"] for m in chat["messages"] if m["role"] == "system"]
    messages: list[dict[str, Any]] = []
    for m in _marked(chat):
        if m["role"] == "user":
            messages.append({"role": "user", "content": m["content"]})
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for call in m.get("tool_calls", ()):
                function = call["function"]
                blocks.append({"type": "tool_use", "id": call["id"], "name": function["name"], "input": orjson.loads(function["arguments"])})
            messages.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]})
    body: dict[str, Any] = {"model": model, "max_tokens": chat.get("max_tokens", 64), "messages": messages}
    if system:
        body["system"] = "\n".join(system)
    if "temperature" in chat:
        body["temperature"] = chat["temperature"]
    if chat.get("tools"):
        body["tools"] = [
            {"name": t["function"]["name"], "description": t["function"]["description"], "input_schema": t["function"]["parameters"]}
            for t in chat["tools"]
        ]
    if chat.get("stream"):
        body["stream"] = True
    return body


# --- Gemini generateContent -------------------------------------------------------------


def gemini_stream(chunks: int) -> list[bytes]:
    """A ``streamGenerateContent?alt=sse`` stream of ``chunks - 2`` text chunks
    (CRLF frames, usage on every chunk, the finish on the last)."""
    frames = []
    for i in range(chunks - 2):
        last = i == chunks - 3
        candidate: dict = {"content": {"parts": [{"text": f"tok{i} "}], "role": "model"}, "index": 0}
        usage: dict = {"promptTokenCount": 12, "totalTokenCount": 12}
        if last:
            candidate["finishReason"] = "STOP"
            usage = {"promptTokenCount": 12, "candidatesTokenCount": chunks - 2, "totalTokenCount": 10 + chunks}
        payload = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": MODEL, "responseId": "bench"}
        frames.append(b"data: " + orjson.dumps(payload) + b"\r\n\r\n")
    return frames


GEMINI_RESPONSE = orjson.dumps({
    "candidates": [{"content": {"parts": [{"text": ANSWER}], "role": "model"}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 7, "totalTokenCount": 19},
    "modelVersion": MODEL, "responseId": "bench",
})  # fmt: skip


def gemini_body(chat: dict[str, Any], model: str) -> dict[str, Any]:
    """``chat`` (an OpenAI chat body) as a generateContent request (the model is in the path)."""
    system = [m["content"] for m in chat["messages"] if m["role"] == "system"]
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for m in _marked(chat):
        if m["role"] == "user":
            contents.append({"role": "user", "parts": [{"text": m["content"]}]})
        elif m["role"] == "assistant":
            parts: list[dict[str, Any]] = [{"text": m["content"]}] if m.get("content") else []
            for call in m.get("tool_calls", ()):
                function = call["function"]
                names[call["id"]] = function["name"]
                parts.append({"functionCall": {"name": function["name"], "args": orjson.loads(function["arguments"])}})
            contents.append({"role": "model", "parts": parts})
        elif m["role"] == "tool":
            response = {"name": names.get(m["tool_call_id"], "tool"), "response": {"content": m["content"]}}
            contents.append({"role": "user", "parts": [{"functionResponse": response}]})
    body: dict[str, Any] = {"contents": contents, "generationConfig": {"maxOutputTokens": chat.get("max_tokens", 64)}}
    if "temperature" in chat:
        body["generationConfig"]["temperature"] = chat["temperature"]
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n".join(system)}]}
    if chat.get("tools"):
        declarations = [
            {"name": t["function"]["name"], "description": t["function"]["description"], "parameters": t["function"]["parameters"]}
            for t in chat["tools"]
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
    return body


def _marked(chat: dict[str, Any]) -> list[dict[str, Any]]:
    """The turns but the system's, the first user turn carrying the body's
    ``bench:`` marker (its ``user`` field in the chat shape)."""
    marker = chat.get("user")
    turns, marked = [], False
    for m in chat["messages"]:
        if m["role"] == "system":
            continue
        if m["role"] == "user" and isinstance(marker, str) and not marked:
            m, marked = {**m, "content": f"{m['content']} [{marker}]"}, True
        turns.append(m)
    return turns


# --- the protocols, side by side ---------------------------------------------------------


@dataclass(frozen=True)
class Wire:
    name: str
    path: Callable[[str, bool], str]  # (model, stream) -> the path of a request
    key_headers: Callable[[str], dict[str, str]]
    body: Callable[[dict[str, Any], str], dict[str, Any]]  # a chat body written in this protocol, for a model
    stream_end: tuple[bytes, ...]  # what the last bytes of a right stream hold
    answer_holds: bytes  # what a right plain answer holds

    def request_body(self, chat_body: bytes, model: str) -> bytes:
        """A scenario's body (OpenAI chat bytes) in this protocol, for ``model``."""
        if self.name == "openai":
            return chat_body
        return orjson.dumps(self.body(orjson.loads(chat_body), model))

    def check(self, data: bytes, stream: bool) -> str | None:
        """What is wrong with an answer (the last bytes of a stream); ``None``: nothing."""
        if stream:
            missing = [part for part in self.stream_end if part not in data]
            return f"the {self.name} stream's end lacks {missing[0].decode()}" if missing else None
        if not data.startswith(b"{") or self.answer_holds not in data:
            return f"not a {self.name} answer: {data[:160].decode('utf-8', 'replace')}"
        return None


OPENAI = Wire(
    "openai", lambda model, stream: "/v1/chat/completions", lambda key: {"Authorization": f"Bearer {key}"},
    lambda chat, model: {**chat, "model": model}, (DONE, b'"usage":{'), b'"choices"',
)  # fmt: skip
ANTHROPIC = Wire(
    "anthropic", lambda model, stream: "/v1/messages", lambda key: {"x-api-key": key, "anthropic-version": "2023-06-01"},
    anthropic_body, (b"message_stop", b'"output_tokens"'), b'"type":"message"',
)  # fmt: skip
GEMINI = Wire(
    "gemini", lambda model, stream: f"/v1beta/models/{model}:{'streamGenerateContent?alt=sse' if stream else 'generateContent'}",
    lambda key: {"x-goog-api-key": key}, gemini_body, (b'"finishReason"', b'"usageMetadata"'), b'"candidates"',
)  # fmt: skip
WIRES = {wire.name: wire for wire in (OPENAI, ANTHROPIC, GEMINI)}


def wire_of_path(path: bytes) -> Wire:
    """The protocol an upstream request speaks, by its path."""
    if path.endswith(b"/messages"):
        return ANTHROPIC
    if b"generateContent" in path or b"GenerateContent" in path:
        return GEMINI
    return OPENAI
