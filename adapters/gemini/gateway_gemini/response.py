"""``GenerateContentResponse`` objects ⇄ the core :class:`ChatResponse` (pure, no I/O).

Reading (an upstream's answer) is lenient: only the first candidate is read, and a
body that is no response at all raises ``UpstreamError``. A prompt blocked by
Google (``promptFeedback.blockReason``, no candidates) reads as an empty answer
stopped for ``CONTENT_FILTER``. Function calls without an id get
``call_<name>_<n>``, suffixed with the response id when there is one, so that ids
stay unique across the turns of a conversation held by an OpenAI or Anthropic client.

``finishReason`` ⇄ stop reason: ``STOP`` is ``END_TURN`` (``TOOL_USE`` when the
answer calls functions: Gemini says ``STOP`` there), ``MAX_TOKENS`` is
``MAX_TOKENS``, the safety family (``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
``PROHIBITED_CONTENT``, ``SPII``, ``LANGUAGE``, ``IMAGE_*``) is ``CONTENT_FILTER``,
the rest (``MALFORMED_FUNCTION_CALL``, ``OTHER`` …) is ``ERROR``. Writing, every
answer has a ``finishReason``: ``STOP`` when the core has none.

``usageMetadata`` ⇄ usage: Gemini's ``promptTokenCount`` includes cached tokens
(as the core's ``input_tokens`` does), plus ``toolUsePromptTokenCount``;
``candidatesTokenCount`` excludes ``thoughtsTokenCount``, which the core counts in
``output_tokens`` and reports as ``reasoning_tokens``.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core.errors import UpstreamError, excerpt
from gateway_core.model import ChatResponse, Part, StopReason, ToolCallPart, Usage
from gateway_core.tally import ImplausibleUsage, token_count

from .content import CallIds, echoing, part_from_wire, part_to_wire, safe_name
from .wire import JSON, as_dict, as_int, as_list, field, without_fields

_FILTERED = frozenset(
    "SAFETY RECITATION BLOCKLIST PROHIBITED_CONTENT SPII LANGUAGE IMAGE_SAFETY "
    "IMAGE_PROHIBITED_CONTENT IMAGE_RECITATION".split()
)
STOP_TO_FINISH: dict[StopReason, str] = {
    StopReason.END_TURN: "STOP",
    StopReason.STOP_SEQUENCE: "STOP",
    StopReason.TOOL_USE: "STOP",
    StopReason.MAX_TOKENS: "MAX_TOKENS",
    StopReason.CONTENT_FILTER: "SAFETY",
    StopReason.ERROR: "OTHER",
}
_CANDIDATE_KEYS = frozenset(("content", "finishReason", "index"))
_RESPONSE_KEYS = frozenset(("candidates", "usageMetadata", "modelVersion", "responseId"))


def stop_reason_from_wire(finish_reason: Any, *, tool_calls: bool = False) -> StopReason | None:
    if not isinstance(finish_reason, str) or not finish_reason or finish_reason == "FINISH_REASON_UNSPECIFIED":
        return None
    if finish_reason == "STOP":
        return StopReason.TOOL_USE if tool_calls else StopReason.END_TURN
    if finish_reason == "MAX_TOKENS":
        return StopReason.MAX_TOKENS
    if finish_reason in _FILTERED:
        return StopReason.CONTENT_FILTER
    return StopReason.ERROR


def finish_reason_to_wire(reason: StopReason | None) -> str:
    return STOP_TO_FINISH.get(reason, "STOP") if reason is not None else "STOP"


def usage_from_wire(metadata: Any) -> Usage | None:
    """The core usage of a ``usageMetadata`` object (``None`` when absent)."""
    if not isinstance(metadata, dict):
        return None

    def count(name: str) -> int:  # int64 counts, which Google's JSON may write as strings
        value = field(metadata, name)
        return token_count(int(value) if isinstance(value, str) and value.isdigit() and len(value) <= 18 else value)

    try:  # a count that is no count (a negative number, an object): no usage, estimated
        thoughts = count("thoughtsTokenCount")
        candidates = count("candidatesTokenCount") or count("responseTokenCount")
        return Usage(
            input_tokens=count("promptTokenCount") + count("toolUsePromptTokenCount"),
            output_tokens=candidates + thoughts,
            cached_input_tokens=count("cachedContentTokenCount"),
            reasoning_tokens=thoughts,
        )
    except ImplausibleUsage:
        return None


def usage_to_wire(usage: Usage) -> JSON:
    out: JSON = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": max(0, usage.output_tokens - usage.reasoning_tokens),
        "totalTokenCount": usage.total_tokens,
    }
    if usage.cached_input_tokens:
        out["cachedContentTokenCount"] = usage.cached_input_tokens
    if usage.reasoning_tokens:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    return out


class ResponseCallIds(CallIds):
    """Ids for the function calls of one answer: ``call_<name>_<n>[_<response id>]``."""

    def __init__(self, response_id: str) -> None:
        super().__init__()
        self._suffix = "_" + safe_name(response_id)[:16] if response_id else ""
        self._count = 0

    def call(self, given: Any, name: str, where: str) -> str:
        if isinstance(given, str) and given:
            return given
        self._count += 1
        return f"call_{safe_name(name)}_{self._count - 1}{self._suffix}"


def response_from_wire(body: Any, *, echo: bool = False) -> ChatResponse:
    """The core response of a ``GenerateContentResponse`` object; with ``echo`` (for
    a client of another protocol) thought signatures folded into the calls' ids."""
    if not isinstance(body, dict) or ("candidates" not in body and "error" in body):
        raise _malformed(body, "the upstream sent an error or a body that is not a Gemini response")
    response_id = str(field(body, "responseId") or "")
    candidates = as_list(field(body, "candidates"))
    candidate = next((c for c in candidates if isinstance(c, dict) and as_int(c.get("index")) == 0), {})
    ids = ResponseCallIds(response_id)
    parts: list[Part] = []
    for j, raw in enumerate(as_list(field(field(candidate, "content"), "parts"))):
        if isinstance(raw, dict):
            part = part_from_wire(raw, f"candidates[0].content.parts[{j}]", ids, str(j))
            parts.append(echoing(part) if echo else part)
    calls = any(isinstance(p, ToolCallPart) for p in parts)
    stop = stop_reason_from_wire(field(candidate, "finishReason"), tool_calls=calls)
    if not candidates and field(field(body, "promptFeedback"), "blockReason"):
        stop = StopReason.CONTENT_FILTER
    metadata = {
        "gemini_response": without_fields(body, _RESPONSE_KEYS),
        "gemini_candidate": without_fields(as_dict(candidate), _CANDIDATE_KEYS),
    }
    finish = field(candidate, "finishReason")
    if isinstance(finish, str):
        metadata["gemini_finish_reason"] = finish
    return ChatResponse(
        id=response_id,
        model=str(field(body, "modelVersion") or ""),
        parts=tuple(parts),
        stop_reason=stop,
        usage=usage_from_wire(field(body, "usageMetadata")),
        provider_metadata={k: v for k, v in metadata.items() if v} or None,
    )


def response_to_wire(response: ChatResponse, model: str, *, thoughts: bool = False) -> JSON:
    """A ``GenerateContentResponse`` for a core response, answered as ``model``;
    reasoning as ``thought`` parts when ``thoughts`` (the client asked for them)."""
    metadata = response.provider_metadata or {}
    parts: list[JSON] = []
    for part in response.parts:
        parts.extend(part_to_wire(part, thoughts=thoughts))
    finish = metadata.get("gemini_finish_reason") or finish_reason_to_wire(response.stop_reason)
    candidate: JSON = {
        "content": {"role": "model", "parts": parts},
        "finishReason": finish,
        "index": 0,
        **as_dict(metadata.get("gemini_candidate")),
    }
    body: JSON = {"candidates": [candidate], **as_dict(metadata.get("gemini_response"))}
    if response.usage is not None:
        body["usageMetadata"] = usage_to_wire(response.usage)
    body["modelVersion"] = model
    if response.id:
        body["responseId"] = response.id
    return body


def _malformed(body: Any, message: str) -> UpstreamError:
    detail = as_dict(body.get("error")).get("message") if isinstance(body, dict) else None
    error = UpstreamError(f"{message}: {detail}" if isinstance(detail, str) else message, retryable=True)
    try:
        error.upstream_body = excerpt(orjson.dumps(body))
    except TypeError:
        error.upstream_body = excerpt(repr(body))
    return error
