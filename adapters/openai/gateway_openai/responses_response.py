"""Core answers → OpenAI Responses objects, and Responses usage ⇄ core usage (pure).

Used when a Responses client's request was converted for a chat channel. The
response object echoes the request's settings (``tools``, ``tool_choice``,
``instructions`` …) as OpenAI does; its id is the gateway's own (``resp_…``).

Each core part becomes one output item: text a ``message`` with an
``output_text`` part (a refusal part a ``refusal`` one), reasoning a
``reasoning`` item with the text as its one summary part, a tool call a
``function_call`` (``custom_tool_call`` for a custom tool) whose ``call_id`` is
the core call id. A reasoning part's ``provider_metadata`` (Anthropic's thinking
signature, Gemini's thought signature) is kept in ``encrypted_content`` as
``rg1:`` + base64url(JSON), read back by :mod:`.responses_request` when the
client replays the item — so a multi-turn conversation with thinking survives
conversion. ``max_tokens`` and content-filter stops make the response
``incomplete`` with their ``incomplete_details.reason``.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from gateway_core.model import ChatResponse, Part, ReasoningPart, StopReason, TextPart, ToolCallPart, Usage
from gateway_core.tally import ImplausibleUsage, token_count

from .responses_request import REASONING_PREFIX
from .responses_tools import ToolName, custom_input, tool_names

JSON = dict[str, Any]

INCOMPLETE_REASONS = {StopReason.MAX_TOKENS: "max_output_tokens", StopReason.CONTENT_FILTER: "content_filter"}
_ECHOED = ("instructions", "max_output_tokens", "metadata", "previous_response_id", "prompt_cache_key",
           "safety_identifier", "service_tier", "store", "temperature", "top_p", "truncation", "user", "reasoning",
           "text", "top_logprobs", "max_tool_calls", "background")  # fmt: skip


def new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(16).hex()}"


def usage_from_wire(usage: Any) -> Usage | None:
    """The core usage of a Responses ``usage`` object (``None`` when absent)."""
    if not isinstance(usage, dict):
        return None
    inputs = usage.get("input_tokens_details") if isinstance(usage.get("input_tokens_details"), dict) else {}
    outputs = usage.get("output_tokens_details") if isinstance(usage.get("output_tokens_details"), dict) else {}
    try:  # a count that is no count (a string, a negative number): no usage, estimated
        return Usage(
            input_tokens=token_count(usage.get("input_tokens")),
            output_tokens=token_count(usage.get("output_tokens")),
            cached_input_tokens=token_count(inputs.get("cached_tokens")),
            cache_write_tokens=token_count(inputs.get("cache_write_tokens")),
            reasoning_tokens=token_count(outputs.get("reasoning_tokens")),
        )
    except ImplausibleUsage:
        return None


def usage_to_wire(usage: Usage) -> JSON:
    """A Responses ``usage`` object (cached and reasoning details always present)."""
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens, "cache_write_tokens": usage.cache_write_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


class ResponseShell:
    """The parts of a response object that do not depend on the answer."""

    def __init__(self, body: JSON, model: str, response_id: str | None = None, created_at: int | None = None) -> None:
        self.id = response_id or new_id("resp")
        self.model = model
        self.created_at = created_at or int(time.time())
        self.tools = tool_names(body)  # function names sent upstream → the client's namespaced / custom tools
        self._echo = {key: body.get(key) for key in _ECHOED}
        self._echo["tools"] = body.get("tools") if isinstance(body.get("tools"), list) else []
        self._echo["tool_choice"] = body.get("tool_choice") or "auto"
        self._echo["parallel_tool_calls"] = body.get("parallel_tool_calls") is not False
        self._echo["metadata"] = self._echo["metadata"] or {}
        self._echo["store"] = body.get("store") is not False
        self._echo["text"] = self._echo["text"] or {"format": {"type": "text"}}
        self._echo["truncation"] = self._echo["truncation"] or "disabled"
        self._echo["background"] = bool(self._echo["background"])

    def object(
        self,
        status: str,
        output: Sequence[JSON] = (),
        usage: Usage | None = None,
        *,
        error: JSON | None = None,
        incomplete: str | None = None,
    ) -> JSON:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": error,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "model": self.model,
            "output": list(output),
            **self._echo,
            "usage": usage_to_wire(usage) if usage is not None else None,
        }


def status_of(stop_reason: StopReason | None) -> tuple[str, str | None]:
    """``(status, incomplete reason)`` of a finished answer."""
    reason = INCOMPLETE_REASONS.get(stop_reason) if stop_reason is not None else None
    return ("incomplete", reason) if reason else ("completed", None)


def response_to_wire(response: ChatResponse, body: JSON, model: str) -> JSON:
    """The Responses object of a converted, complete answer, answered as ``model``."""
    shell = ResponseShell(body, model)
    items = [item_of(part, new_id(item_prefix(part, shell.tools)), names=shell.tools) for part in response.parts]
    status, incomplete = status_of(response.stop_reason)
    return shell.object(status, [item for item in items if item is not None], response.usage, incomplete=incomplete)


def item_prefix(part: Part, names: Mapping[str, ToolName] | None = None) -> str:
    """The id prefix OpenAI gives the output item of such a part."""
    if isinstance(part, ReasoningPart):
        return "rs"
    if isinstance(part, ToolCallPart):
        return "ctc" if is_custom_call(part, names) else "fc"
    return "msg"


def is_custom_call(part: ToolCallPart, names: Mapping[str, ToolName] | None = None) -> bool:
    """Whether the call is of a custom tool (one the client declared as such, or a chat channel's custom call)."""
    known = (names or {}).get(part.name)
    return known.custom if known is not None else _meta(part).get("openai_tool_type") == "custom"


def item_of(part: Part, item_id: str, status: str = "completed", names: Mapping[str, ToolName] | None = None) -> JSON | None:
    """The output item of one finished core part (``None``: nothing to show)."""
    if isinstance(part, TextPart):
        if not part.text and not _meta(part).get("openai_refusal"):
            return None
        return message_item(item_id, [content_part(part)], status)
    if isinstance(part, ReasoningPart):
        return reasoning_item(item_id, part.text, part.provider_metadata)
    if isinstance(part, ToolCallPart):
        return call_item(item_id, part, part.arguments, status, names)
    return None


def message_item(item_id: str, content: list[JSON], status: str) -> JSON:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": content}


def content_part(part: TextPart) -> JSON:
    if _meta(part).get("openai_refusal"):
        return {"type": "refusal", "refusal": part.text}
    return {"type": "output_text", "text": part.text, "annotations": [], "logprobs": []}


def reasoning_item(item_id: str, text: str, metadata: JSON | None) -> JSON:
    item: JSON = {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": text}] if text else []}
    if metadata:
        item["encrypted_content"] = encode_reasoning(metadata)
    return item


def call_item(item_id: str, part: ToolCallPart, arguments: str, status: str, names: Mapping[str, ToolName] | None = None) -> JSON:
    """A call's output item, named as the client declared the tool (``namespace``, custom)."""
    known = (names or {}).get(part.name)
    name = known.name if known is not None else part.name
    if known is not None and known.custom:
        item = {"id": item_id, "type": "custom_tool_call", "status": status, "call_id": part.id, "name": name, "input": custom_input(arguments)}
    elif known is None and _meta(part).get("openai_tool_type") == "custom":  # a chat channel's own custom call
        item = {"id": item_id, "type": "custom_tool_call", "status": status, "call_id": part.id, "name": name, "input": arguments}
    else:
        item = {"id": item_id, "type": "function_call", "status": status, "arguments": arguments, "call_id": part.id, "name": name}
    if known is not None and known.namespace:
        item["namespace"] = known.namespace
    return item


def encode_reasoning(metadata: JSON) -> str:
    return REASONING_PREFIX + base64.urlsafe_b64encode(orjson.dumps(metadata)).decode()


def _meta(part: Part) -> JSON:
    return part.provider_metadata or {}

