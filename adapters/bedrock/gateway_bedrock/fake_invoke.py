"""The fake Bedrock's InvokeModel and InvokeModelWithResponseStream for Claude
(``POST /model/{modelId}/invoke`` and ``/invoke-with-response-stream``), in the real
wire: the body is Anthropic's Messages body with ``anthropic_version:
"bedrock-2023-05-31"`` (or a dated version, as anthropic 2.x's ``AnthropicBedrock``
sends it) and no ``model``; the answer is Anthropic's message; the
stream is AWS event-stream ``chunk`` events whose ``bytes`` are the base64 of one
Anthropic stream event's JSON, the last (``message_stop``) carrying
``amazon-bedrock-invocationMetrics``.

The answers (pure): the same echo, reasoning, tool call and usage as the fake's
Converse (input tokens are the words of every text sent, ``cache_read`` and
``cache_write`` reported beside them)."""

from __future__ import annotations

import base64
import re
from typing import Any

import orjson

from .eventstream import encode_message
from .model_ids import is_claude, provider_model

BEDROCK_VERSION = "bedrock-2023-05-31"
MESSAGE_ID = "msg_bdrk_fake01"
REASONING = "Let me think."
SIGNATURE = "c2lnLWZha2UtYmVkcm9jaw=="


def invalid_body(body: Any, model: str) -> str | None:
    """Bedrock's ``ValidationException`` message for a body it refuses, or ``None``."""
    if not is_claude(model):
        return f"Malformed input request: the model {model} does not take Anthropic's Messages body, please reformat your input and try again."
    if not isinstance(body, dict):
        return "Malformed input request: expected type: JSONObject, please reformat your input and try again."
    if "model" in body:
        return "Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again."
    version = body.get("anthropic_version")
    if not isinstance(version, str) or not (version == BEDROCK_VERSION or re.fullmatch(r"\d{4}-\d{2}-\d{2}", version)):
        return "Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again."
    if not isinstance(body.get("max_tokens"), int):
        return "Malformed input request: #: required key [max_tokens] not found, please reformat your input and try again."
    return None


def claude_message(body: dict[str, Any], model: str, tool_use: dict[str, Any] | None, cache_read: int, cache_write: int) -> dict[str, Any]:
    """Anthropic's message answering ``body``."""
    texts = _texts(body.get("system"))
    for message in body["messages"]:
        texts.extend(_texts(message["content"]))
    last = body["messages"][-1]["content"]
    last_blocks = last if isinstance(last, list) else [{"type": "text", "text": last}]
    results = [block for block in last_blocks if block.get("type") == "tool_result"]
    said = next((block["text"] for block in reversed(last_blocks) if block.get("type") == "text"), "")
    content: list[dict[str, Any]] = []
    if (body.get("thinking") or {}).get("type") == "enabled":
        content.append({"type": "thinking", "thinking": REASONING, "signature": SIGNATURE})
    if tool_use is not None and not results:
        content.append({"type": "tool_use", "id": "toolu_bdrk_fake01", **tool_use})
    else:
        if results:
            said = " ".join(_texts(results[0].get("content")))
        content.append({"type": "text", "text": f"echo: {said}"})
    output = sum(len(block["text"].split()) for block in content if block["type"] == "text") or 1
    usage = {"input_tokens": sum(len(text.split()) for text in texts), "cache_creation_input_tokens": cache_write,
             "cache_read_input_tokens": cache_read, "output_tokens": output}  # fmt: skip
    stop = "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
    return {"id": MESSAGE_ID, "type": "message", "role": "assistant", "model": provider_model(model), "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": usage}  # fmt: skip


def claude_chunks(message: dict[str, Any]) -> list[bytes]:
    """``message`` as InvokeModelWithResponseStream sends it: one ``chunk`` per event."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        at = {"index": index}
        if block["type"] == "thinking":
            events.append({"type": "content_block_start", **at, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            events.append({"type": "content_block_delta", **at, "delta": {"type": "thinking_delta", "thinking": block["thinking"]}})
            events.append({"type": "content_block_delta", **at, "delta": {"type": "signature_delta", "signature": block["signature"]}})
        elif block["type"] == "tool_use":
            events.append({"type": "content_block_start", **at, "content_block": {**block, "input": {}}})
            arguments = orjson.dumps(block["input"]).decode()
            for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                events.append({"type": "content_block_delta", **at, "delta": {"type": "input_json_delta", "partial_json": piece}})
        else:
            events.append({"type": "content_block_start", **at, "content_block": {"type": "text", "text": ""}})
            for n, word in enumerate(block["text"].split(" ")):
                events.append({"type": "content_block_delta", **at, "delta": {"type": "text_delta", "text": word if n == 0 else " " + word}})
        events.append({"type": "content_block_stop", **at})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": usage["output_tokens"]}})  # fmt: skip
    metrics = {"inputTokenCount": usage["input_tokens"], "outputTokenCount": usage["output_tokens"], "invocationLatency": 12,
               "firstByteLatency": 5, "cacheReadInputTokenCount": usage["cache_read_input_tokens"],
               "cacheWriteInputTokenCount": usage["cache_creation_input_tokens"]}  # fmt: skip
    events.append({"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics})
    return [encode_chunk(event) for event in events]


def encode_chunk(event: dict[str, Any]) -> bytes:
    """One ``chunk`` event message carrying ``event``'s JSON as base64 ``bytes``."""
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, orjson.dumps({"bytes": base64.b64encode(orjson.dumps(event)).decode(), "p": "abcdefgh"}))


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [block["text"] for block in content if isinstance(block, dict) and block.get("type") == "text"]
