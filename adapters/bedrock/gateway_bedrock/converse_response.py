"""A Converse answer as a core response, and what both answers and streams share:
content blocks, stop reasons and usage (pure).

Usage: Converse counts ``inputTokens`` apart from ``cacheReadInputTokens`` and
``cacheWriteInputTokens``; the core's input counts all three. ``cacheDetails`` says
which writes were for an hour (``ttl: 1h``). Reasoning
(``reasoningContent``) becomes a reasoning part whose signature (or redacted
data) is kept as ``anthropic_signature`` (``anthropic_redacted``), the names the
anthropic adapter reads, so a Claude client sends them back intact.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import UpstreamError
from gateway_core.errors import excerpt
from gateway_core.model import ChatResponse, Part, ReasoningPart, StopReason, TextPart, ToolCallPart, Usage
from gateway_core.tally import ImplausibleUsage, token_count

JSON = dict[str, Any]
STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "guardrail_intervened": StopReason.CONTENT_FILTER,
    "content_filtered": StopReason.CONTENT_FILTER,
    "malformed_model_output": StopReason.ERROR,
    "malformed_tool_use": StopReason.ERROR,
}


def stop_reason(value: Any) -> StopReason | None:
    if not isinstance(value, str):
        return None
    return STOP_REASONS.get(value, StopReason.END_TURN)


def usage_from_converse(usage: Any) -> Usage | None:
    """The usage Converse reported; ``None`` when it is absent or any count is no
    count (:func:`gateway_core.tally.token_count`): the gateway then estimates it."""
    if not isinstance(usage, dict) or usage.get("inputTokens") is None or usage.get("outputTokens") is None:
        return None
    try:
        cached, written = token_count(usage.get("cacheReadInputTokens")), token_count(usage.get("cacheWriteInputTokens"))
        details = usage.get("cacheDetails")
        hour = sum(token_count(d.get("inputTokens")) for d in details if isinstance(d, dict) and d.get("ttl") == "1h") if isinstance(details, list) else 0
        return Usage(
            input_tokens=token_count(usage.get("inputTokens")) + cached + written,
            output_tokens=token_count(usage.get("outputTokens")),
            cached_input_tokens=cached,
            cache_write_tokens=written,
            cache_write_1h_tokens=min(hour, written),
        )
    except ImplausibleUsage:
        return None


def reasoning_part(block: JSON) -> ReasoningPart:
    """A ``reasoningContent`` block (``reasoningText`` or ``redactedContent``)."""
    redacted = block.get("redactedContent")
    if isinstance(redacted, str):
        return ReasoningPart("", {"anthropic_redacted": redacted})
    text = block.get("reasoningText")
    if not isinstance(text, dict):
        return ReasoningPart("")
    signature = text.get("signature")
    return ReasoningPart(str(text.get("text") or ""), {"anthropic_signature": signature} if isinstance(signature, str) else None)


def part_from_block(block: Any) -> Part | None:
    """One content block of an answer; ``None`` for a kind the core has no part for."""
    if not isinstance(block, dict):
        return None
    if isinstance(block.get("text"), str):
        return TextPart(block["text"])
    tool = block.get("toolUse")
    if isinstance(tool, dict):
        arguments = orjson.dumps(tool.get("input") if tool.get("input") is not None else {}).decode()
        return ToolCallPart(str(tool.get("toolUseId") or ""), str(tool.get("name") or ""), arguments)
    if isinstance(block.get("reasoningContent"), dict):
        return reasoning_part(block["reasoningContent"])
    return None


def response_from_converse(answer: JSON, *, response_id: str, model: str, raw: bytes) -> ChatResponse:
    """The core response of a Converse answer."""
    output = answer.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        error = UpstreamError("the upstream's answer has no output message")
        error.upstream_body = excerpt(raw)
        raise error
    parts = tuple(part for part in map(part_from_block, content) if part is not None)
    return ChatResponse(
        id=response_id, model=model, parts=parts, stop_reason=stop_reason(answer.get("stopReason")),
        usage=usage_from_converse(answer.get("usage")),
    )  # fmt: skip
