"""Anthropic ``message`` objects ⇄ the core :class:`ChatResponse` (pure, no I/O).

Usage: Anthropic's ``input_tokens`` counts only the input read neither from nor
into the prompt cache; ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` come on top. The core counts every input token in
``Usage.input_tokens`` (see :class:`gateway_core.model.Usage`), so reading adds the
three (``cached_input_tokens`` = cache reads, ``cache_write_tokens`` = cache
creation) and writing takes the cached ones back out. ``output_tokens`` includes
thinking on both sides. ``server_tool_use`` and the per-TTL ``cache_creation``
breakdown are not kept.

Stop reasons: ``end_turn`` ⇄ END_TURN, ``max_tokens`` and
``model_context_window_exceeded`` → MAX_TOKENS, ``stop_sequence`` ⇄ STOP_SEQUENCE,
``tool_use`` ⇄ TOOL_USE, ``refusal`` ⇄ CONTENT_FILTER, ``pause_turn`` → END_TURN;
ERROR is written as ``end_turn``. An answer carrying tool calls is written with
``tool_use`` even when the core says END_TURN (Gemini reports STOP with function
calls), because agents loop on that value.

Reading is lenient (an upstream's answer): missing fields take defaults and only a
body that is not a message at all raises ``UpstreamError``. Fields the core has no
place for (``stop_sequence``, ``container``, ``stop_details`` …) are kept in
``ChatResponse.provider_metadata["anthropic_message"]`` and written back.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from gateway_core.errors import UpstreamError, excerpt
from gateway_core.model import ChatResponse, Part, StopReason, TextPart, ToolCallPart, Usage
from gateway_core.tally import ImplausibleUsage, token_count

from .content import block_to_part, parts_to_blocks

JSON = dict[str, Any]

STOP_FROM_WIRE: dict[str, StopReason] = {
    "end_turn": StopReason.END_TURN,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "tool_use": StopReason.TOOL_USE,
    "refusal": StopReason.CONTENT_FILTER,
    "pause_turn": StopReason.END_TURN,
}
STOP_TO_WIRE: dict[StopReason, str] = {
    StopReason.END_TURN: "end_turn",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.STOP_SEQUENCE: "stop_sequence",
    StopReason.TOOL_USE: "tool_use",
    StopReason.CONTENT_FILTER: "refusal",
    StopReason.ERROR: "end_turn",
}
_MESSAGE_KEYS = frozenset("id type role model content stop_reason usage".split())


def stop_reason_from_wire(value: Any) -> StopReason | None:
    if not isinstance(value, str) or not value:
        return None
    return STOP_FROM_WIRE.get(value, StopReason.END_TURN)


def stop_reason_to_wire(reason: StopReason | None, *, tool_calls: bool = False) -> str:
    if tool_calls and reason in (None, StopReason.END_TURN, StopReason.STOP_SEQUENCE):
        return "tool_use"
    return STOP_TO_WIRE.get(reason, "end_turn") if reason is not None else "end_turn"


def usage_from_wire(usage: Any) -> Usage | None:
    """The core usage of an Anthropic ``usage`` object (``None`` when absent)."""
    if not isinstance(usage, dict):
        return None
    try:  # a count that is no count (a string, a negative number): no usage, estimated
        cache_read = token_count(usage.get("cache_read_input_tokens"))
        cache_write = token_count(usage.get("cache_creation_input_tokens"))
        creation = usage.get("cache_creation")  # by lifetime: ephemeral_5m_input_tokens, ephemeral_1h_input_tokens
        cache_write_1h = min(cache_write, token_count(creation.get("ephemeral_1h_input_tokens"))) if isinstance(creation, dict) else 0
        details = usage.get("output_tokens_details")
        reasoning = token_count(details.get("thinking_tokens", details.get("reasoning_tokens"))) if isinstance(details, dict) else 0
        return Usage(
            input_tokens=token_count(usage.get("input_tokens")) + cache_read + cache_write,
            output_tokens=token_count(usage.get("output_tokens")),
            cached_input_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
            cache_write_1h_tokens=cache_write_1h,
        )
    except ImplausibleUsage:
        return None


def usage_to_wire(usage: Usage | None) -> JSON:
    """An Anthropic ``usage`` object: input without the cached tokens, as Anthropic counts it."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": usage.uncached_input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_input_tokens,
    }


def response_from_wire(body: Any) -> ChatResponse:
    """The core response of a ``message`` object."""
    if not isinstance(body, dict) or body.get("type") == "error" or not isinstance(body.get("content"), list):
        raise _malformed(body)
    parts: list[Part] = []
    for block in body["content"]:
        try:
            parts.append(block_to_part(block, "content"))
        except Exception:  # an upstream's odd block: kept whole, never a crash
            parts.append(TextPart("", {"anthropic_block": block}))
    kept = {k: v for k, v in body.items() if k not in _MESSAGE_KEYS and v is not None}
    return ChatResponse(
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
        parts=tuple(parts),
        stop_reason=stop_reason_from_wire(body.get("stop_reason")),
        usage=usage_from_wire(body.get("usage")),
        provider_metadata={"anthropic_message": kept} if kept else None,
    )


def response_to_wire(response: ChatResponse, model: str) -> JSON:
    """A ``message`` object for a core response, answered as ``model``."""
    kept = (response.provider_metadata or {}).get("anthropic_message") or {}
    calls = any(isinstance(p, ToolCallPart) for p in response.parts)
    return {
        "id": message_id(response.id),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": parts_to_blocks(response.parts, unsigned_thinking=True),
        "stop_reason": stop_reason_to_wire(response.stop_reason, tool_calls=calls),
        "stop_sequence": kept.get("stop_sequence"),
        **{k: v for k, v in kept.items() if k != "stop_sequence"},
        "usage": usage_to_wire(response.usage),
    }


def message_id(upstream_id: str | None) -> str:
    """An id in Anthropic's ``msg_…`` form (the upstream's own when it has that form)."""
    if upstream_id and upstream_id.startswith("msg_"):
        return upstream_id
    return "msg_" + (upstream_id or os.urandom(12).hex())



def _malformed(body: Any) -> UpstreamError:
    error = body.get("error") if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    message = "the upstream answered with something that is not a message"
    result = UpstreamError(f"{message}: {detail}" if isinstance(detail, str) else message, retryable=True)
    try:
        result.upstream_body = excerpt(orjson.dumps(body))
    except TypeError:
        result.upstream_body = excerpt(repr(body))
    return result
