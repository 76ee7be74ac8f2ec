"""OpenAI ``chat.completion`` objects ⇄ the core :class:`ChatResponse` (pure, no I/O).

Reading is lenient (an upstream's answer, not a client's request): missing fields
take defaults, and only a body that is not a completion at all raises
``UpstreamError``. Only the first choice is read (``n > 1`` is not converted).

- ``reasoning_content`` (DeepSeek, vLLM, …; also ``reasoning``) ⇄ ``ReasoningPart``;
  ``refusal`` ⇄ a ``TextPart`` marked ``{"openai_refusal": True}``; tool calls
  without an id get ``call_<response id>_<n>``.
- Fields the core has no place for are kept in ``ChatResponse.provider_metadata``
  and written back: ``openai_response`` (``system_fingerprint``, ``service_tier`` …),
  ``openai_choice`` (``logprobs``), ``openai_message`` (``annotations``, ``audio`` …).
- Usage: ``prompt_tokens`` → ``input_tokens`` (OpenAI counts cached tokens in it),
  ``prompt_tokens_details.cached_tokens`` → ``cached_input_tokens`` (DeepSeek's
  ``prompt_cache_hit_tokens`` as a fallback), ``cache_write_tokens`` and
  ``completion_tokens_details.reasoning_tokens`` likewise. Other details
  (audio, prediction tokens) are not kept.
- A response carrying tool calls is written with ``finish_reason: "tool_calls"``
  even when the core says END_TURN (Gemini reports STOP with function calls),
  because OpenAI clients loop on that value. ERROR is written as ``stop``.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from gateway_core.errors import UpstreamError, excerpt
from gateway_core.model import (
    ChatResponse,
    Part,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
)
from gateway_core.tally import ImplausibleUsage, token_count

from .chat_request import tool_call_to_wire

JSON = dict[str, Any]

FINISH_TO_STOP: dict[str, StopReason] = {
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.CONTENT_FILTER,
}
STOP_TO_FINISH: dict[StopReason, str] = {
    StopReason.END_TURN: "stop",
    StopReason.STOP_SEQUENCE: "stop",
    StopReason.MAX_TOKENS: "length",
    StopReason.TOOL_USE: "tool_calls",
    StopReason.CONTENT_FILTER: "content_filter",
    StopReason.ERROR: "stop",
}
_RESPONSE_KEYS = frozenset(("id", "object", "created", "model", "choices", "usage"))
_CHOICE_KEYS = frozenset(("index", "message", "finish_reason"))
_MESSAGE_KEYS = frozenset(("role", "content", "refusal", "reasoning_content", "reasoning", "tool_calls"))


def stop_reason_from_wire(finish_reason: Any) -> StopReason | None:
    """The core stop reason of a ``finish_reason`` (unknown strings: END_TURN)."""
    if not isinstance(finish_reason, str) or not finish_reason:
        return None
    if finish_reason == "error":
        return StopReason.ERROR
    return FINISH_TO_STOP.get(finish_reason, StopReason.END_TURN)


def finish_reason_to_wire(reason: StopReason | None, *, tool_calls: bool = False) -> str:
    """The ``finish_reason`` for a core stop reason; ``tool_calls`` when calls were made."""
    if tool_calls and reason in (None, StopReason.END_TURN, StopReason.STOP_SEQUENCE):
        return "tool_calls"
    return STOP_TO_FINISH.get(reason, "stop") if reason is not None else "stop"


def usage_from_wire(usage: JSON | None) -> Usage | None:
    """The core usage of a Chat Completions ``usage`` object (``None`` when absent)."""
    if not isinstance(usage, dict):
        return None
    prompt = _dict(usage.get("prompt_tokens_details"))
    completion = _dict(usage.get("completion_tokens_details"))
    try:  # a count that is no count (a string, a negative number): no usage, estimated
        return Usage(
            input_tokens=token_count(usage.get("prompt_tokens", usage.get("input_tokens"))),
            output_tokens=token_count(usage.get("completion_tokens", usage.get("output_tokens"))),
            cached_input_tokens=token_count(prompt.get("cached_tokens")) or token_count(usage.get("prompt_cache_hit_tokens")),
            cache_write_tokens=token_count(prompt.get("cache_write_tokens")),
            reasoning_tokens=token_count(completion.get("reasoning_tokens")),
        )
    except ImplausibleUsage:
        return None


def usage_to_wire(usage: Usage) -> JSON:
    """A Chat Completions ``usage`` object with the details OpenAI clients read."""
    prompt_details: JSON = {"cached_tokens": usage.cached_input_tokens}
    if usage.cache_write_tokens:
        prompt_details["cache_write_tokens"] = usage.cache_write_tokens
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def response_from_wire(body: JSON) -> ChatResponse:
    """The core response of a ``chat.completion`` object."""
    if not isinstance(body, dict) or ("choices" not in body and "error" in body):
        raise _malformed(body, "the upstream sent an error or a body that is not a chat completion")
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise _malformed(body, "the upstream's chat completion has no 'choices' array")
    choice = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), {})
    message = _dict(choice.get("message"))
    response_id = str(body.get("id") or "")
    created = body.get("created")
    metadata = {
        "openai_response": {k: v for k, v in body.items() if k not in _RESPONSE_KEYS},
        "openai_choice": {k: v for k, v in choice.items() if k not in _CHOICE_KEYS},
        "openai_message": {k: v for k, v in message.items() if k not in _MESSAGE_KEYS},
    }
    return ChatResponse(
        id=response_id,
        model=str(body.get("model") or ""),
        parts=message_parts_from_wire(message, response_id),
        stop_reason=stop_reason_from_wire(choice.get("finish_reason")),
        usage=usage_from_wire(body.get("usage")),
        created=created if isinstance(created, int) and not isinstance(created, bool) else None,
        provider_metadata={k: v for k, v in metadata.items() if v} or None,
    )


def message_parts_from_wire(message: JSON, response_id: str = "") -> tuple[Part, ...]:
    """The parts of an assistant message of a response: reasoning, text, refusal, tool calls."""
    parts: list[Part] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(ReasoningPart(reasoning))
    content = message.get("content")
    if isinstance(content, list):  # some compatible servers answer with text parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if isinstance(content, str) and content:
        parts.append(TextPart(content))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(TextPart(refusal, {"openai_refusal": True}))
    calls = message.get("tool_calls")
    for n, call in enumerate(calls if isinstance(calls, list) else ()):
        if isinstance(call, dict):
            parts.append(_tool_call(call, f"call_{response_id}_{n}"))
    return tuple(parts)


def _tool_call(call: JSON, default_id: str) -> ToolCallPart:
    custom = call.get("type") == "custom"
    fn = _dict(call.get("custom" if custom else "function"))
    arguments = fn.get("input" if custom else "arguments")
    return ToolCallPart(
        id=str(call.get("id") or default_id),
        name=str(fn.get("name") or ""),
        arguments=arguments if isinstance(arguments, str) else "",
        provider_metadata={"openai_tool_type": "custom"} if custom else None,
    )


def response_to_wire(response: ChatResponse, model: str) -> JSON:
    """A ``chat.completion`` object for a core response, answered as ``model``."""
    metadata = response.provider_metadata or {}
    parts = response.parts
    texts = [p.text for p in parts if isinstance(p, TextPart) and not _refusal(p)]
    refusal = "".join(p.text for p in parts if isinstance(p, TextPart) and _refusal(p))
    reasoning = "".join(p.text for p in parts if isinstance(p, ReasoningPart))
    calls = [tool_call_to_wire(p) for p in parts if isinstance(p, ToolCallPart)]
    message: JSON = {
        **_dict(metadata.get("openai_message")),
        "role": "assistant",
        "content": "".join(texts) if texts else (None if calls or refusal else ""),
        "refusal": refusal or None,
    }
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        **_dict(metadata.get("openai_choice")),
        "finish_reason": finish_reason_to_wire(response.stop_reason, tool_calls=bool(calls)),
    }
    body: JSON = {
        "id": response.id,
        "object": "chat.completion",
        "created": response.created if response.created is not None else int(time.time()),
        "model": model,
        "choices": [choice],
        **_dict(metadata.get("openai_response")),
    }
    if response.usage is not None:
        body["usage"] = usage_to_wire(response.usage)
    return body


def _refusal(part: TextPart) -> bool:
    return bool((part.provider_metadata or {}).get("openai_refusal"))


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}



def _malformed(body: Any, message: str) -> UpstreamError:
    detail = _dict(body.get("error")).get("message") if isinstance(body, dict) else None
    error = UpstreamError(f"{message}: {detail}" if isinstance(detail, str) else message, retryable=True)
    try:
        error.upstream_body = excerpt(orjson.dumps(body))
    except TypeError:
        error.upstream_body = excerpt(repr(body))
    return error
