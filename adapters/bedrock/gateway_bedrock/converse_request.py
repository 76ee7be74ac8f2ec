"""A core chat request as a Converse request body (pure; see docs/adapters/bedrock.md).

- ``system`` parts and system messages → ``system`` text blocks.
- Messages alternate ``user``/``assistant`` as Converse requires: tool messages
  become user turns of ``toolResult`` blocks, and neighbours with one role merge.
- Text → ``text`` (empty text is left out: Converse refuses blank blocks); images
  → ``image`` with inline ``bytes`` (a data URL or base64; Converse takes no image
  URL, so one is refused with a 400); tool calls → ``toolUse`` with the arguments
  as JSON; tool results → ``toolResult``; reasoning with a signature (Claude's) →
  ``reasoningContent``, unsigned reasoning of another protocol is dropped.
- Tools → ``toolConfig.tools[].toolSpec``; tool choice auto / required / a named
  tool → ``auto`` / ``any`` / ``tool``; ``none`` has no Converse form: the tools stay
  (Converse needs them when the history holds tool blocks), the choice is left out.
  A history with tool calls but a request without tools declares the tools called,
  with an open schema, since Converse refuses tool blocks without a ``toolConfig``.
- ``max_tokens``, ``temperature``, ``top_p``, ``stop`` → ``inferenceConfig``.
- An Anthropic client's ``cache_control`` (on a system, message or tool block) →
  a ``cachePoint`` after that block, for the models that take them (Claude, Nova).
- Claude only (model ids naming ``anthropic.`` or ``claude``), through
  ``additionalModelRequestFields``: ``top_k``, and thinking — an Anthropic client's
  ``thinking`` as given, OpenAI's ``reasoning_effort`` or Gemini's ``thinkingConfig``
  as a budget when the catalogue says the model thinks. ``top_p`` is left out beside ``temperature``
  for the Claude versions that refuse both (4.5 and later, Opus 4.1).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from gateway_core import InvalidRequestError
from gateway_core.billing.catalogue import catalogue_model
from gateway_core.model import (
    ChatRequest,
    ImagePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolChoiceMode,
    ToolResultPart,
)

from .model_ids import base_id, is_claude, provider_model, refuses_temperature_with_top_p

JSON = dict[str, Any]
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
# another protocol's reasoning request as a thinking budget (tokens)
EFFORT_BUDGETS = {"minimal": 0, "none": 0, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768}
MIN_BUDGET = 1024
ANSWER_ROOM = 4096  # max_tokens beyond the budget when the client set none


def request_to_converse(request: ChatRequest, model: str) -> JSON:
    """The Converse body for ``request`` sent to the Bedrock model ``model``."""
    caching = caches(model)
    system = [block for p in request.system for block in _system_blocks(p, caching)]
    turns: list[JSON] = []
    for message in request.messages:
        if message.role is Role.SYSTEM:
            system.extend(block for p in message.parts for block in _system_blocks(p, caching))
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks = [block for part in message.parts for block in _blocks(part, caching)]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    body: JSON = {"messages": turns}
    if system:
        body["system"] = system
    inference = _inference(request)
    extra: JSON = {}
    claude = is_claude(model)
    if claude:
        _thinking(request, model, inference, extra)
        if request.top_k is not None:
            extra["top_k"] = request.top_k
        if "temperature" in inference and "topP" in inference and refuses_temperature_with_top_p(model):
            del inference["topP"]
    if inference:
        body["inferenceConfig"] = inference
    if request.tools:
        body["toolConfig"] = _tool_config(request.tools, request.tool_choice, caching)
    else:
        used = _tools_used(turns)
        if used:  # Converse refuses tool blocks in a conversation that declares no tools
            body["toolConfig"] = {"tools": [{"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}} for name in used]}
    if extra:
        body["additionalModelRequestFields"] = extra
    return body


def _tools_used(turns: list[JSON]) -> list[str]:
    """The names of the tools the history's calls use (a tool result alone names none)."""
    names = {block["toolUse"]["name"]: None for turn in turns for block in turn["content"] if "toolUse" in block}
    return list(names)


def _inference(request: ChatRequest) -> JSON:
    out: JSON = {}
    if request.max_tokens is not None:
        out["maxTokens"] = request.max_tokens
    if request.temperature is not None:
        out["temperature"] = request.temperature
    if request.top_p is not None:
        out["topP"] = request.top_p
    if request.stop:
        out["stopSequences"] = list(request.stop)
    return out


def caches(model: str) -> bool:
    """Whether the model takes ``cachePoint`` blocks (Claude and Nova do)."""
    return is_claude(model) or base_id(model).startswith("amazon.nova")


def cache_point(meta: Any) -> JSON | None:
    """A ``cachePoint`` for a part an Anthropic client marked with ``cache_control``."""
    extra = meta.get("anthropic_extra") if isinstance(meta, dict) else None
    control = extra.get("cache_control") if isinstance(extra, dict) else None
    if not isinstance(control, dict):
        return None
    point: JSON = {"type": "default"}
    if control.get("ttl") in ("5m", "1h"):
        point["ttl"] = control["ttl"]
    return {"cachePoint": point}


def _system_blocks(part: Part, caching: bool) -> list[JSON]:
    if not isinstance(part, TextPart) or not part.text:
        return []
    point = cache_point(part.provider_metadata) if caching else None
    return [{"text": part.text}, point] if point else [{"text": part.text}]


def _blocks(part: Part, caching: bool) -> list[JSON]:
    blocks = _content_blocks(part)
    point = cache_point(part.provider_metadata) if caching and blocks else None
    return [*blocks, point] if point else blocks


def _content_blocks(part: Part) -> list[JSON]:
    if isinstance(part, TextPart):
        return [{"text": part.text}] if part.text else []
    if isinstance(part, ImagePart):
        return [image_block(part)]
    if isinstance(part, ToolCallPart):
        return [{"toolUse": {"toolUseId": part.id, "name": part.name, "input": _arguments(part)}}]
    if isinstance(part, ToolResultPart):
        content = [block for inner in part.content for block in _result_blocks(inner)]
        result: JSON = {"toolUseId": part.tool_call_id, "content": content or [{"text": ""}]}
        if part.is_error:
            result["status"] = "error"
        return [{"toolResult": result}]
    if isinstance(part, ReasoningPart):
        return _reasoning(part)
    return []


def _result_blocks(part: Part) -> list[JSON]:
    if isinstance(part, TextPart):
        return [{"text": part.text}]
    if isinstance(part, ImagePart):
        return [image_block(part)]
    return []


def _reasoning(part: ReasoningPart) -> list[JSON]:
    meta = part.provider_metadata or {}
    redacted = meta.get("anthropic_redacted")
    if isinstance(redacted, str) and redacted:
        return [{"reasoningContent": {"redactedContent": redacted}}]
    signature = meta.get("anthropic_signature")
    if isinstance(signature, str) and signature:
        return [{"reasoningContent": {"reasoningText": {"text": part.text, "signature": signature}}}]
    return []  # reasoning without a signature: the model would refuse it


def image_block(part: ImagePart) -> JSON:
    """An ``image`` block with its bytes inline (base64 in JSON)."""
    media_type, data = part.media_type, part.data
    url = part.url
    if url is not None:
        if not url.startswith("data:"):
            raise InvalidRequestError(
                "a bedrock channel takes images inline (base64 data or a data: URL), not by URL: Converse fetches nothing"
            )
        head, _, data = url.partition(",")
        media_type = head[5:].split(";")[0] or media_type
    fmt = IMAGE_FORMATS.get((media_type or "image/png").lower())
    if fmt is None:
        raise InvalidRequestError(f"a bedrock channel takes PNG, JPEG, GIF or WebP images, not {media_type}")
    try:
        base64.b64decode(data or "", validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError("an image's data is not base64") from None
    return {"image": {"format": fmt, "source": {"bytes": data or ""}}}


def _arguments(part: ToolCallPart) -> Any:
    try:
        value = orjson.loads(part.arguments or "{}")
    except orjson.JSONDecodeError:
        raise InvalidRequestError(f"the arguments of tool call {part.id!r} are not JSON") from None
    return value if isinstance(value, dict) else {"value": value}


def _tool_config(tools: tuple[Tool, ...], choice: ToolChoice | None, caching: bool) -> JSON:
    specs = []
    for tool in tools:
        spec: JSON = {"name": tool.name, "inputSchema": {"json": tool.parameters or {"type": "object", "properties": {}}}}
        if tool.description:
            spec["description"] = tool.description
        specs.append({"toolSpec": spec})
        control = tool.extra.get("cache_control") if caching else None
        if isinstance(control, dict):
            specs.append(cache_point({"anthropic_extra": {"cache_control": control}}) or {})
    config: JSON = {"tools": specs}
    if choice is not None:
        if choice.mode is ToolChoiceMode.AUTO:
            config["toolChoice"] = {"auto": {}}
        elif choice.mode is ToolChoiceMode.REQUIRED:
            config["toolChoice"] = {"any": {}}
        elif choice.mode is ToolChoiceMode.TOOL and choice.name:
            config["toolChoice"] = {"tool": {"name": choice.name}}
    return config


def reasoning_budget(extra: JSON) -> int:
    """Tokens another protocol asks to reason with: OpenAI's ``reasoning_effort`` and
    Gemini's ``thinkingLevel`` by name, Gemini's ``thinkingBudget`` as it is (-1,
    dynamic: medium)."""
    effort = extra.get("reasoning_effort")
    if isinstance(effort, str):
        return EFFORT_BUDGETS.get(effort, 0)
    config = extra.get("generationConfig") or extra.get("generation_config")
    thinking = (config.get("thinkingConfig") or config.get("thinking_config")) if isinstance(config, dict) else None
    if not isinstance(thinking, dict):
        return 0
    level = thinking.get("thinkingLevel") or thinking.get("thinking_level")
    if isinstance(level, str):
        return EFFORT_BUDGETS.get(level.lower(), 0)
    budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
    if isinstance(budget, int) and not isinstance(budget, bool):
        return EFFORT_BUDGETS["medium"] if budget < 0 else budget
    return 0


def _thinking(request: ChatRequest, model: str, inference: JSON, extra: JSON) -> None:
    """Claude's thinking: an Anthropic client's ``thinking`` as it is; another
    protocol's ``reasoning_effort`` as a budget when the catalogue says the model
    thinks. Thinking takes no temperature, and a ``top_p`` of at least 0.95."""
    thinking = request.extra.get("thinking")
    if not isinstance(thinking, dict):
        budget = reasoning_budget(request.extra)
        known = catalogue_model(model) or catalogue_model(provider_model(model))
        if budget < MIN_BUDGET or known is None or not known.reasoning:
            return
        if "maxTokens" not in inference:
            inference["maxTokens"] = budget + ANSWER_ROOM
        budget = min(budget, int(inference["maxTokens"]) - MIN_BUDGET)
        if budget < MIN_BUDGET:
            return
        thinking = {"type": "enabled", "budget_tokens": budget}
    if thinking.get("type") in ("enabled", "adaptive"):
        inference.pop("temperature", None)
        if inference.get("topP") is not None and inference["topP"] < 0.95:
            inference.pop("topP")
    extra["thinking"] = thinking
