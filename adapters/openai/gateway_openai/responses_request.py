"""OpenAI Responses request bodies → the core :class:`ChatRequest` (pure, no I/O).

For channels that speak only chat (an OpenAI-compatible server, Anthropic,
Gemini): the gateway keeps no conversation state, so a request that needs the
upstream's (:func:`stateful_reason`) cannot be converted.

- ``instructions`` and the ``system``/``developer`` message items before the
  first other item become ``request.system`` (developer parts marked
  ``openai_role: "developer"``); later ones stay ``SYSTEM`` messages in place.
- ``input`` as a string is one user message. Message items (``type: "message"``
  or no type) keep their role; ``input_text``/``output_text`` are text,
  ``refusal`` a text part marked ``openai_refusal``, ``input_image`` an image,
  ``input_file`` a chat ``file`` part kept whole in ``openai_part`` (only OpenAI
  chat channels carry it). Item ids are not kept (converted channels never see them).
- ``function_call`` (and ``custom_tool_call``) items become tool calls of the
  assistant message around them, keyed by ``call_id``; ``function_call_output``
  (``custom_tool_call_output``) items become tool results. ``reasoning`` items
  become reasoning parts; their ``encrypted_content`` is restored to the part's
  ``provider_metadata`` when the gateway wrote it (``rg1:…``, see
  :mod:`.responses_response`), so another provider's signed thinking survives
  the round trip; OpenAI's own encrypted reasoning cannot cross and is dropped.
- Tools (those of ``additional_tools`` items too) go through
  :mod:`.responses_tools`: ``function`` tools become core tools, ``namespace``
  members functions with flattened names, ``custom`` tools functions taking a
  string, hosted tools (``web_search`` …) core tools marked with their type for the
  channel to map or refuse. A replayed ``function_call`` with a ``namespace`` and a
  ``custom_tool_call`` are read in the function form the upstream was offered.
  Item types with no chat form (``web_search_call``, ``local_shell_call``,
  ``compaction`` …) are dropped: :func:`unconvertible` lists them, and the hosted
  tools a chat channel drops, for a log note.
- ``max_output_tokens`` → ``max_tokens``; ``reasoning.effort`` →
  ``extra["reasoning_effort"]``; ``reasoning.summary`` → ``extra["reasoning_summary"]``; ``text.format`` → ``extra["response_format"]``
  (chat's shape); ``text.verbosity`` → ``extra["verbosity"]``; every other
  top-level field stays in ``extra`` under its own name.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NoReturn

import attrs
import orjson

from gateway_core.errors import InvalidRequestError
from gateway_core.model import (
    ChatRequest,
    ImagePart,
    Message,
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

from .responses_tools import core_tools, custom_arguments, declared_tools, flat_name

JSON = dict[str, Any]

REASONING_PREFIX = "rg1:"  # encrypted_content the gateway wrote: base64 of the part's provider_metadata
_INTERPRETED = frozenset(
    "model input instructions tools tool_choice parallel_tool_calls max_output_tokens temperature top_p "
    "stream user reasoning text".split()
)
_MODES = {"auto": ToolChoiceMode.AUTO, "none": ToolChoiceMode.NONE, "required": ToolChoiceMode.REQUIRED}
_TEXT_TYPES = ("input_text", "output_text", "text", "summary_text", "reasoning_text")
_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def stateful_reason(body: JSON) -> str | None:
    """Why a request needs state kept by a Responses upstream (``None``: it does not)."""
    for field in ("previous_response_id", "conversation", "prompt"):
        if body.get(field) not in (None, ""):
            return field
    if body.get("background") is True:
        return "background"
    items = body.get("input")
    if isinstance(items, list) and any(isinstance(i, dict) and i.get("type") == "item_reference" for i in items):
        return "item_reference"
    return None


def unconvertible(body: JSON) -> list[str]:
    """What a conversion drops: tool types and input item types with no chat form."""
    dropped: list[str] = []
    for tool in declared_tools(body):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind not in ("function", "custom", "namespace"):
            dropped.append(f"tool:{kind}")
    for item in body.get("input") if isinstance(body.get("input"), list) else ():
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind not in ("message", "reasoning", "additional_tools", *_CALLS, *_OUTPUTS):
            dropped.append(f"item:{kind}")
    return sorted(set(dropped))


def request_from_wire(body: JSON) -> ChatRequest:
    """The core request for a Responses body, or ``InvalidRequestError``."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        _fail("The request needs a 'model' (a non-empty string).", "model")
    system: list[Part] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        system.append(TextPart(instructions))
    elif instructions is not None and not isinstance(instructions, str):
        _fail("'instructions' must be a string.", "instructions")
    messages = _messages(body.get("input"), system)
    extra = {k: v for k, v in body.items() if k not in _INTERPRETED}
    extra.update(_mapped_extra(body))
    return ChatRequest(
        model=model,
        messages=tuple(messages),
        system=tuple(system),
        tools=tuple(core_tools(body)),
        tool_choice=_tool_choice(body.get("tool_choice")),
        parallel_tool_calls=_typed(body.get("parallel_tool_calls"), bool, "parallel_tool_calls"),
        max_tokens=_positive(body.get("max_output_tokens"), "max_output_tokens"),
        temperature=_number(body.get("temperature"), "temperature"),
        top_p=_number(body.get("top_p"), "top_p"),
        stream=body.get("stream") is True,
        user=_typed(body.get("user"), str, "user"),
        extra=extra,
    )


# --- input items -----------------------------------------------------------------


class _Builder:
    """Accumulates core messages, merging an assistant's text, reasoning and calls
    (and consecutive tool results) into one message each."""

    def __init__(self, system: list[Part]) -> None:
        self.system = system
        self.messages: list[Message] = []
        self._role: Role | None = None
        self._parts: list[Part] = []

    def add(self, role: Role, parts: list[Part]) -> None:
        if role is Role.SYSTEM and not self.messages and self._role is None:
            self.system.extend(parts)
            return
        if role is not self._role or role in (Role.USER, Role.SYSTEM):
            self.flush()
            self._role = role
        self._parts.extend(parts)

    def flush(self) -> None:
        if self._role is not None and self._parts:
            self.messages.append(Message(self._role, tuple(self._parts)))
        self._role, self._parts = None, []


def _messages(items: Any, system: list[Part]) -> list[Message]:
    if isinstance(items, str):
        return [Message(Role.USER, (TextPart(items),))]
    if not isinstance(items, list):
        _fail("'input' must be a string or an array of input items.", "input")
    builder = _Builder(system)
    for n, item in enumerate(items):
        p = f"input[{n}]"
        if not isinstance(item, dict):
            _fail(f"'{p}' must be an input item object.", p)
        kind = item.get("type", "message")
        if kind == "message":
            role, parts = _message_item(item, p)
            builder.add(role, parts)
        elif kind in _CALLS:
            builder.add(Role.ASSISTANT, [_call_item(item, p)])
        elif kind in _OUTPUTS:
            builder.add(Role.TOOL, [_output_item(item, p)])
        elif kind == "reasoning":
            part = _reasoning_item(item)
            if part is not None:
                builder.add(Role.ASSISTANT, [part])
    builder.flush()
    return builder.messages


def _message_item(item: JSON, p: str) -> tuple[Role, list[Part]]:
    role = item.get("role")
    content = item.get("content")
    if isinstance(content, str):
        parts: list[Part] = [TextPart(content)] if content else []
    elif isinstance(content, list):
        parts = [part for j, raw in enumerate(content) if (part := _content_part(raw, f"{p}.content[{j}]")) is not None]
    else:
        _fail(f"'{p}.content' must be a string or an array of content parts.", f"{p}.content")
    if role == "user":
        return Role.USER, parts
    if role == "assistant":
        return Role.ASSISTANT, parts
    if role in ("system", "developer"):
        if role == "developer":
            parts = [_with_meta(part, openai_role="developer") for part in parts]
        return Role.SYSTEM, parts
    _fail(f"Invalid value for '{p}.role': expected 'user', 'assistant', 'system' or 'developer'.", f"{p}.role")


def _content_part(raw: Any, p: str) -> Part | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        _fail(f"'{p}' must be a content part object with a string 'type'.", f"{p}.type")
    kind = raw["type"]
    if kind in _TEXT_TYPES:
        return TextPart(_typed(raw.get("text"), str, f"{p}.text") or "")
    if kind == "refusal":
        return TextPart(_typed(raw.get("refusal"), str, f"{p}.refusal") or "", {"openai_refusal": True})
    if kind == "input_image":
        url = raw.get("image_url")
        if not isinstance(url, str) or not url:
            return None  # a file_id image: only the upstream that stored the file knows it
        detail = raw.get("detail") if isinstance(raw.get("detail"), str) else None
        head, sep, data = url.partition(",")
        if url.startswith("data:") and sep and head.endswith(";base64"):
            return ImagePart(data=data, media_type=head[5:-7] or None, detail=detail)
        return ImagePart(url=url, detail=detail)
    if kind == "input_file":
        file = {k: raw[k] for k in ("file_data", "file_id", "filename") if k in raw}
        return TextPart("", {"openai_part": {"type": "file", "file": file}})
    return None


def _call_item(item: JSON, p: str) -> ToolCallPart:
    call_id = item.get("call_id")
    name = item.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        _fail(f"'{p}' needs a 'call_id' and a 'name' (non-empty strings).", f"{p}.call_id")
    custom = item.get("type") == "custom_tool_call"
    arguments = item.get("input" if custom else "arguments", "")
    arguments = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    namespace = item.get("namespace") if isinstance(item.get("namespace"), str) else None
    # the function form the upstream was offered (see responses_tools)
    return ToolCallPart(call_id, flat_name(namespace, name), custom_arguments(arguments) if custom else arguments)


def _output_item(item: JSON, p: str) -> ToolResultPart:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        _fail(f"'{p}.call_id' must name the call this output answers.", f"{p}.call_id")
    output = item.get("output")
    if isinstance(output, str):
        content: tuple[Part, ...] = (TextPart(output),) if output else ()
    elif isinstance(output, list):
        content = tuple(part for j, raw in enumerate(output) if (part := _content_part(raw, f"{p}.output[{j}]")))
    else:
        content = (TextPart(orjson.dumps(output).decode()),) if output is not None else ()
    return ToolResultPart(call_id, content)


def _reasoning_item(item: JSON) -> ReasoningPart | None:
    texts = [s.get("text") for s in item.get("summary") or () if isinstance(s, dict)]
    texts += [c.get("text") for c in item.get("content") or () if isinstance(c, dict)]
    text = "".join(t for t in texts if isinstance(t, str))
    meta = decode_reasoning(item.get("encrypted_content"))
    if meta is None and not text:
        return None
    return ReasoningPart(text, meta)


def decode_reasoning(value: Any) -> JSON | None:
    """The provider metadata the gateway put in a reasoning item's ``encrypted_content``."""
    if not isinstance(value, str) or not value.startswith(REASONING_PREFIX):
        return None
    try:
        meta = orjson.loads(base64.urlsafe_b64decode(value[len(REASONING_PREFIX) :]))
    except (binascii.Error, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


# --- tools and options -----------------------------------------------------------


def _tool_choice(choice: Any) -> ToolChoice | None:
    if isinstance(choice, str):
        mode = _MODES.get(choice)
        if mode is None:
            _fail("Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or an object.", "tool_choice")
        return ToolChoice(mode)
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom") and isinstance(choice.get("name"), str):
        namespace = choice.get("namespace") if isinstance(choice.get("namespace"), str) else None
        return ToolChoice(ToolChoiceMode.TOOL, flat_name(namespace, choice["name"]))
    return None  # allowed_tools, hosted tools: left to the model


def _mapped_extra(body: JSON) -> JSON:
    out: JSON = {}
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        out["reasoning_effort"] = reasoning["effort"]
    if isinstance(reasoning, dict) and isinstance(reasoning.get("summary"), str):
        out["reasoning_summary"] = reasoning["summary"]  # a gemini channel asks for thoughts
    text = body.get("text")
    if isinstance(text, dict):
        fmt = text.get("format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
            out["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
            out["response_format"] = {"type": "json_object"}
        if isinstance(text.get("verbosity"), str):
            out["verbosity"] = text["verbosity"]
    return out


def _with_meta(part: Part, **values: Any) -> Part:
    return attrs.evolve(part, provider_metadata={**(part.provider_metadata or {}), **values})


def _typed(value: Any, kind: type, param: str) -> Any:
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        _fail(f"Invalid type for '{param}'.", param)
    return value


def _positive(value: Any, param: str) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        _fail(f"Invalid value for '{param}': expected a positive integer, but got {value!r}.", param)
    return value


def _number(value: Any, param: str) -> float | None:
    if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
        _fail(f"Invalid type for '{param}': expected a number.", param)
    return value


def _fail(message: str, param: str | None) -> NoReturn:
    raise InvalidRequestError(message, param=param)
