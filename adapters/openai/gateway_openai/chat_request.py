"""OpenAI Chat Completions request bodies ⇄ the core :class:`ChatRequest` (pure, no I/O).

``request_from_wire`` validates as it reads: a body no OpenAI server would accept
raises ``InvalidRequestError`` with ``param`` set to the offending path; no
``KeyError``/``TypeError`` escapes. What the core cannot say travels in a part's
``provider_metadata`` under ``openai_*`` keys, so wire → core → wire loses nothing:

- ``openai_role``: ``"developer"`` on the parts of a developer message,
  ``"function"`` on the tool result of a legacy ``role: function`` message.
- ``openai_part``: a content part the core cannot represent (``input_audio``,
  ``file``, ``refusal`` parts, unknown types), kept whole on an *empty* ``TextPart``
  (other protocols see an empty text and should skip it).
- ``openai_extra``: keys of a text/image part beyond its content (``prompt_cache_breakpoint``).
- ``openai_message``: keys of a message the core has no field for (``audio``, the
  ``name`` of a leading system message), on its first part (an empty ``TextPart``
  carries them when the message has no part).
- ``openai_refusal``, ``openai_reasoning_content``, ``openai_function_call``,
  ``openai_tool_type: "custom"``: an assistant's ``refusal`` text, its
  ``reasoning_content``, a legacy ``function_call`` (id = function name), a custom tool call.
  Only reasoning parts marked as read from ``reasoning_content`` are written back:
  OpenAI rejects unknown message fields, so another protocol's thinking is dropped.

Round-trip normalizations: a one-part text list becomes a string; an empty content
string gives no part and comes back as ``""`` (``null`` for an assistant with tool
calls); ``stop`` is written as a list; each system part becomes its own message;
``null`` optional fields and ``stream: false`` are dropped; ``stream: true`` always
asks for usage. ``request_to_wire`` writes back only the ``extra`` fields that are
Chat Completions parameters (``all_extra=True`` writes them all): ``extra`` does not
say which protocol it came from and OpenAI rejects unknown parameters. The core
``top_k`` has no Chat Completions equivalent and is not written, nor are other
protocols' provider-run tools (``extra["hosted_tool"]``: a Responses client's
``web_search`` …), which chat has no tool for. Read, ``web_search_options`` adds
such a ``web_search`` tool, which other channels offer as their own web search.

Other protocols' shapes: tool results inside a user message become ``tool``
messages ahead of the user's other parts; non-text tool-result content (images)
goes into that user message, as tool messages carry text only; ``is_error`` and
images in assistant messages have no place on this wire; an inline image without
a media type is sent as ``image/png``; another provider's blocks kept on empty text
parts (Anthropic's documents and server-tool results, Gemini's other media) are left
out, not sent as empty texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import attrs

from gateway_core.errors import InvalidRequestError
from gateway_core.json_body import INT64_MAX
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

from .reasoning_request import reasoning_effort

JSON = dict[str, Any]

OPENAI_PARAMS = frozenset(
    "audio frequency_penalty function_call functions logit_bias logprobs max_completion_tokens max_tokens "
    "metadata modalities moderation n parallel_tool_calls prediction presence_penalty prompt_cache_key "
    "prompt_cache_options prompt_cache_retention reasoning_effort response_format safety_identifier seed "
    "service_tier stop store stream_options temperature tool_choice tools top_logprobs top_p user verbosity "
    "web_search_options".split()
)
_SHARED_VALUES = {  # parameters other protocols name alike, with values of their own (Anthropic's "standard_only")
    "service_tier": lambda value: value in ("auto", "default", "flex", "scale", "priority"),
}
_INTERPRETED = frozenset(
    "model messages tools tool_choice parallel_tool_calls max_tokens temperature top_p stop stream user".split()
)
_MESSAGE_KEYS = frozenset("role content name tool_calls tool_call_id function_call reasoning_content refusal".split())
_MODES = {m.value: m for m in (ToolChoiceMode.AUTO, ToolChoiceMode.NONE, ToolChoiceMode.REQUIRED)}
_ROLES = "'system', 'developer', 'user', 'assistant', 'tool' or 'function'"
_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "an object"}


# --- wire → core ---------------------------------------------------------------


def request_from_wire(body: JSON) -> ChatRequest:
    """The core request for a Chat Completions body, or ``InvalidRequestError``."""
    if not isinstance(body, dict):
        _fail(f"The request body must be a JSON object, not {_kind(body)}.", None)
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        _fail("You must provide a model parameter (a non-empty string).", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        _fail("'messages' must be a non-empty array of message objects.", "messages")
    system: list[Part] = []
    core: list[Message] = []
    for i, raw in enumerate(messages):
        message = _read_message(raw, f"messages[{i}]", leading=not core)
        if message.role is Role.SYSTEM and not core:
            system.extend(message.parts)
        else:
            core.append(message)
    extra = {k: v for k, v in body.items() if k not in _INTERPRETED}
    if "max_completion_tokens" in body:  # stays in extra: request_to_wire writes the same name back
        max_tokens = _count(body["max_completion_tokens"], "max_completion_tokens")
        if "max_tokens" in body:
            extra["max_tokens"] = body["max_tokens"]
    else:
        max_tokens = _count(body.get("max_tokens"), "max_tokens")
    tool_choice = _read_tool_choice(body.get("tool_choice"))
    if tool_choice is None and body.get("tool_choice") is not None:
        extra["tool_choice"] = body["tool_choice"]  # allowed_tools, custom: kept as they are
    tools = _expect(body.get("tools"), list, "tools", "an array")
    search = _web_search(body.get("web_search_options"))
    return ChatRequest(
        model=model,
        messages=tuple(core),
        system=tuple(system),
        tools=tuple(_read_tool(t, f"tools[{i}]") for i, t in enumerate(tools or ())) + search,
        tool_choice=tool_choice,
        parallel_tool_calls=_expect(body.get("parallel_tool_calls"), bool, "parallel_tool_calls", "a boolean"),
        max_tokens=max_tokens,
        temperature=_number(body.get("temperature"), "temperature"),
        top_p=_number(body.get("top_p"), "top_p"),
        stop=_read_stop(body.get("stop")),
        stream=bool(_expect(body.get("stream"), bool, "stream", "a boolean")),
        user=_expect(body.get("user"), str, "user", "a string"),
        extra=extra,
    )


def _read_message(raw: Any, p: str, leading: bool) -> Message:
    _expect(raw, dict, p, "a message object", optional=False)
    role = raw.get("role")
    name = _expect(raw.get("name"), str, f"{p}.name", "a string")
    extra = {k: v for k, v in raw.items() if k not in _MESSAGE_KEYS}
    parts: list[Part]
    if role in ("system", "developer"):
        parts, out_role = list(_content(raw, p, required=True)), Role.SYSTEM
        if role == "developer":
            parts = [_with_meta(part, openai_role="developer") for part in parts]
        if leading and name is not None:  # request.system has no name: keep it with the part
            extra["name"], name = name, None
    elif role == "user":
        parts, out_role = list(_content(raw, p, required=True)), Role.USER
    elif role == "assistant":
        parts, out_role = _assistant_parts(raw, p), Role.ASSISTANT
    elif role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            _fail(f"'{p}.tool_call_id' is required: a 'tool' message answers a tool call id.", f"{p}.tool_call_id")
        parts, out_role = [ToolResultPart(call_id, content=_content(raw, p, required=True))], Role.TOOL
    elif role == "function":
        if name is None:
            _fail(f"'{p}.name' is required for a message with role 'function'.", f"{p}.name")
        meta = {"openai_role": "function"}
        result = ToolResultPart(name, _content(raw, p, required=False), name=name, provider_metadata=meta)
        parts, out_role, name = [result], Role.TOOL, None
    else:
        _fail(f"Invalid value for '{p}.role': expected one of {_ROLES}, but got {role!r}.", f"{p}.role")
    if extra:
        parts = [_with_meta(parts[0] if parts else TextPart(""), openai_message=extra), *parts[1:]]
    return Message(out_role, tuple(parts), name)


def _content(raw: JSON, p: str, required: bool) -> tuple[Part, ...]:
    content = raw.get("content")
    if isinstance(content, str):
        return (TextPart(content),) if content else ()
    if isinstance(content, list):
        return tuple(_content_part(part, f"{p}.content[{j}]") for j, part in enumerate(content))
    if content is None and not required:
        return ()
    expected = "a string or an array of content parts"
    _fail(f"Invalid type for '{p}.content': expected {expected}, but got {_kind(content)} instead.", f"{p}.content")


def _content_part(part: Any, p: str) -> Part:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        _fail(f"Invalid content part '{p}': expected an object with a string 'type'.", f"{p}.type")
    if part["type"] == "text":
        text = _expect(part.get("text"), str, f"{p}.text", "a string", optional=False)
        return TextPart(text, _extra_meta(part, "text"))
    if part["type"] != "image_url":
        return TextPart("", {"openai_part": part})
    image = part.get("image_url")
    image = {"url": image} if isinstance(image, str) else image if isinstance(image, dict) else {}
    url = image.get("url")
    if not isinstance(url, str) or not url:
        _fail(f"'{p}.image_url.url' must be a non-empty string (an http(s) or data URL).", f"{p}.image_url.url")
    detail = _expect(image.get("detail"), str, f"{p}.image_url.detail", "a string")
    meta = _extra_meta(part, "image_url")
    head, sep, data = url.partition(",")
    if url.startswith("data:") and sep and head.endswith(";base64"):
        return ImagePart(data=data, media_type=head[5:-7] or None, detail=detail, provider_metadata=meta)
    return ImagePart(url=url, detail=detail, provider_metadata=meta)


def _assistant_parts(raw: JSON, p: str) -> list[Part]:
    parts: list[Part] = []
    reasoning = _expect(raw.get("reasoning_content"), str, f"{p}.reasoning_content", "a string")
    if reasoning:
        parts.append(ReasoningPart(reasoning, {"openai_reasoning_content": True}))
    parts.extend(_content(raw, p, required=False))
    refusal = _expect(raw.get("refusal"), str, f"{p}.refusal", "a string")
    if refusal:
        parts.append(TextPart(refusal, {"openai_refusal": True}))
    calls = _expect(raw.get("tool_calls"), list, f"{p}.tool_calls", "an array")
    parts.extend(_read_tool_call(c, f"{p}.tool_calls[{k}]") for k, c in enumerate(calls or ()))
    if raw.get("function_call") is not None:
        name, arguments = _function(raw["function_call"], f"{p}.function_call", "arguments")
        parts.append(ToolCallPart(name, name, arguments, {"openai_function_call": True}))
    return parts


def _read_tool_call(call: Any, p: str) -> ToolCallPart:
    _expect(call, dict, p, "a tool call object", optional=False)
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        _fail(f"'{p}.id' must be a non-empty string.", f"{p}.id")
    if call.get("type") == "custom":
        name, text = _function(call.get("custom"), f"{p}.custom", "input")
        return ToolCallPart(call_id, name, text, {"openai_tool_type": "custom"})
    if call.get("type", "function") != "function":
        _fail(f"Invalid value for '{p}.type': expected 'function' or 'custom'.", f"{p}.type")
    name, arguments = _function(call.get("function"), f"{p}.function", "arguments")
    return ToolCallPart(call_id, name, arguments)


def _function(value: Any, p: str, text_key: str) -> tuple[str, str]:
    _expect(value, dict, p, "an object", optional=False)
    name = value.get("name")
    if not isinstance(name, str) or not name:
        _fail(f"'{p}.name' must be a non-empty string.", f"{p}.name")
    return name, _expect(value.get(text_key, ""), str, f"{p}.{text_key}", "a string (JSON text)", optional=False)


def _read_tool(tool: Any, p: str) -> Tool:
    if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
        _fail(f"Invalid tool '{p}': expected an object with a string 'type'.", f"{p}.type")
    if tool["type"] != "function":  # custom and future tool types: kept whole
        spec = tool.get(tool["type"])
        name = spec.get("name") if isinstance(spec, dict) else None
        return Tool(name if isinstance(name, str) else tool["type"], extra={"openai_tool": tool})
    fn = tool.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        _fail(f"'{p}.function.name' is required: a function tool needs a name.", f"{p}.function.name")
    return Tool(
        name=fn["name"],
        description=_expect(fn.get("description"), str, f"{p}.function.description", "a string"),
        parameters=_expect(fn.get("parameters"), dict, f"{p}.function.parameters", "a JSON Schema object"),
        extra={k: v for k, v in fn.items() if k not in ("name", "description", "parameters")},
    )


def _web_search(options: Any) -> tuple[Tool, ...]:
    """``web_search_options`` (a search model searches the web before answering) as
    the provider-run web search other channels offer (Anthropic's server tool,
    Gemini's ``googleSearch``), its approximate user location kept; the chat
    writer never sends it as a tool (the field itself stays in ``extra``)."""
    if not isinstance(options, dict):
        return ()
    location = options.get("user_location")
    approximate = location.get("approximate") if isinstance(location, dict) else None
    kept = {"user_location": approximate} if isinstance(approximate, dict) else {}
    return (Tool("web_search", extra={"hosted_tool": "web_search", "options": kept}),)


def _read_tool_choice(choice: Any) -> ToolChoice | None:
    if isinstance(choice, str):
        if choice not in _MODES:
            _fail(f"Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or an object, "
                  f"but got {choice!r}.", "tool_choice")
        return ToolChoice(_MODES[choice])
    if _expect(choice, dict, "tool_choice", "a string or an object") is None or choice.get("type") != "function":
        return None
    fn = choice.get("function")
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str) or not name:
        _fail("'tool_choice.function.name' must name the function to call.", "tool_choice.function.name")
    return ToolChoice(ToolChoiceMode.TOOL, name)


def _read_stop(stop: Any) -> tuple[str, ...]:
    if stop is None or isinstance(stop, str):
        return () if stop is None else (stop,)
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(stop)
    _fail("Invalid type for 'stop': expected a string or an array of strings.", "stop")


def _count(value: Any, param: str) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= INT64_MAX):
        _fail(f"Invalid value for '{param}': expected a positive integer (at most {INT64_MAX}), but got {value!r}.", param)
    return value


def _number(value: Any, param: str) -> float | None:
    if isinstance(value, bool):
        _fail(f"Invalid type for '{param}': expected a number, but got a boolean instead.", param)
    number: float | None = _expect(value, (int, float), param, "a number")
    return number


def _expect(value: Any, kind: type | tuple[type, ...], param: str, expected: str, optional: bool = True) -> Any:
    if (value is None and not optional) or (value is not None and not isinstance(value, kind)):
        _fail(f"Invalid type for '{param}': expected {expected}, but got {_kind(value)} instead.", param)
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else _NAMES.get(type(value), type(value).__name__)


def _fail(message: str, param: str | None) -> NoReturn:
    raise InvalidRequestError(message, param=param)


def _extra_meta(part: JSON, content_key: str) -> JSON | None:
    extra = {k: v for k, v in part.items() if k not in ("type", content_key)}
    return {"openai_extra": extra} if extra else None


def _meta(part: Part) -> JSON:
    return part.provider_metadata or {}


def _with_meta(part: Part, **values: Any) -> Part:
    return attrs.evolve(part, provider_metadata={**_meta(part), **values})


# --- core → wire ---------------------------------------------------------------


def request_to_wire(request: ChatRequest, model: str, *, all_extra: bool = False, max_tokens_field: str | None = None) -> JSON:
    """The Chat Completions body for a core request, sent as ``model``.

    ``max_tokens_field`` names the field the output cap goes in for a request
    converted from another protocol (``max_completion_tokens``: OpenAI's reasoning
    models refuse ``max_tokens``); without it the name the request was read with.
    """
    out: JSON = {"model": model, "messages": [_system_message(part) for part in request.system]}
    for message in request.messages:
        out["messages"].extend(_write_message(message))
    tools = [_write_tool(tool) for tool in request.tools if "hosted_tool" not in tool.extra]  # provider-run: no chat form
    if tools:
        out["tools"] = tools
    choice = request.tool_choice
    if choice is not None:
        named = {"type": "function", "function": {"name": choice.name}}
        out["tool_choice"] = named if choice.mode is ToolChoiceMode.TOOL else choice.mode.value
    if max_tokens_field is not None:
        if request.max_tokens is not None:
            out[max_tokens_field] = request.max_tokens
    elif "max_completion_tokens" in request.extra:
        out["max_completion_tokens"] = request.max_tokens
    elif request.max_tokens is not None:
        out["max_tokens"] = request.max_tokens
    for key in ("parallel_tool_calls", "temperature", "top_p", "user"):
        if getattr(request, key) is not None:
            out[key] = getattr(request, key)
    if request.stop:
        out["stop"] = list(request.stop)
    for key, value in request.extra.items():
        if all_extra or (key in OPENAI_PARAMS and _SHARED_VALUES.get(key, lambda v: True)(value)):
            out.setdefault(key, value)  # the core fields above win over extras
    if not all_extra and "response_format" not in out:
        anthropic = request.extra.get("output_format") or (request.extra.get("output_config") or {}).get("format")
        if isinstance(anthropic, dict) and anthropic.get("type") == "json_schema" and isinstance(anthropic.get("schema"), dict):
            out["response_format"] = {"type": "json_schema", "json_schema": {"name": "response", "schema": anthropic["schema"]}}  # Anthropic's JSON output
    if not all_extra and "logprobs" not in out:
        out.pop("top_logprobs", None)  # a Responses client's: chat takes it only beside logprobs: true
    effort = None if all_extra else reasoning_effort(request.extra, model)  # Anthropic's thinking, Gemini's thinkingConfig
    if effort is not None:  # reasoning models refuse sampling settings but their defaults while they reason
        out["reasoning_effort"] = effort
        for key in ("temperature", "top_p"):
            if out.get(key) not in (None, 1):
                del out[key]
    options = out.pop("stream_options", None)
    if request.stream:
        out["stream"] = True
        out["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return out


def tool_call_to_wire(part: ToolCallPart) -> JSON:
    """An assistant's tool call as messages and responses carry it."""
    if _meta(part).get("openai_tool_type") == "custom":
        return {"id": part.id, "type": "custom", "custom": {"name": part.name, "input": part.arguments}}
    return {"id": part.id, "type": "function", "function": {"name": part.name, "arguments": part.arguments}}


def _system_message(part: Part) -> JSON:
    role = "developer" if _meta(part).get("openai_role") == "developer" else "system"
    return {**_message_extra((part,)), "role": role, "content": _wire_content((part,))}


def _write_message(message: Message) -> list[JSON]:
    parts = message.parts
    if message.role is Role.ASSISTANT:
        return [_assistant_message(message)]
    if message.role is Role.SYSTEM:
        role = "developer" if any(_meta(p).get("openai_role") == "developer" for p in parts) else "system"
        return [_named({**_message_extra(parts), "role": role, "content": _wire_content(parts)}, message.name)]
    out: list[JSON] = []  # user and tool messages: each tool result is a tool message, the rest a user message
    rest: list[Part] = [p for p in parts if not isinstance(p, ToolResultPart)]
    for result in (p for p in parts if isinstance(p, ToolResultPart)):
        texts = [p for p in result.content if isinstance(p, TextPart)]
        rest.extend(p for p in result.content if not isinstance(p, TextPart))  # images: in a user message
        if _meta(result).get("openai_role") == "function":
            name = result.name or result.tool_call_id
            out.append({"role": "function", "name": name, "content": "".join(p.text for p in texts)})
        else:
            head = {**_message_extra((result,)), "role": "tool", "tool_call_id": result.tool_call_id}
            out.append({**head, "content": _wire_content(texts)})
    if rest or (message.role is Role.USER and not out):
        out.append(_named({**_message_extra(rest), "role": "user", "content": _wire_content(rest)}, message.name))
    return out


def _assistant_message(message: Message) -> JSON:
    parts = message.parts
    reasoning = [p.text for p in parts if isinstance(p, ReasoningPart) and _meta(p).get("openai_reasoning_content")]
    refusal = [p.text for p in parts if isinstance(p, TextPart) and _meta(p).get("openai_refusal")]
    texts = [p for p in parts if isinstance(p, TextPart) and not _meta(p).get("openai_refusal")]
    texts = [p for p in texts if not _is_carrier(p)]
    calls = [p for p in parts if isinstance(p, ToolCallPart)]
    legacy = [p for p in calls if _meta(p).get("openai_function_call")]
    calls = [p for p in calls if not _meta(p).get("openai_function_call")]
    out: JSON = {**_message_extra(parts), "role": "assistant"}
    out["content"] = _wire_content(texts) if texts else (None if calls or legacy or refusal else "")
    if reasoning:
        out["reasoning_content"] = "".join(reasoning)
    if refusal:
        out["refusal"] = "".join(refusal)
    if calls:
        out["tool_calls"] = [tool_call_to_wire(p) for p in calls]
    if legacy:
        out["function_call"] = {"name": legacy[0].name, "arguments": legacy[0].arguments}
    return _named(out, message.name)


def _wire_content(parts: Sequence[Part]) -> str | list[JSON]:
    visible = [p for p in parts if isinstance(p, (TextPart, ImagePart)) and not _is_carrier(p) and not _foreign_carrier(p)]
    if not visible:
        return ""
    first = visible[0]
    if len(visible) == 1 and isinstance(first, TextPart) and not {"openai_part", "openai_extra"} & _meta(first).keys():
        return first.text
    return [_write_part(p) for p in visible]


def _write_part(part: TextPart | ImagePart) -> JSON:
    meta = _meta(part)
    if "openai_part" in meta:
        raw: JSON = meta["openai_part"]
        return raw
    extra = meta.get("openai_extra") or {}
    if isinstance(part, TextPart):
        return {**extra, "type": "text", "text": part.text}
    image: JSON = {"url": part.url or f"data:{part.media_type or 'image/png'};base64,{part.data or ''}"}
    if part.detail is not None:
        image["detail"] = part.detail
    return {**extra, "type": "image_url", "image_url": image}


def _write_tool(tool: Tool) -> JSON:
    if "openai_tool" in tool.extra:
        kept: JSON = tool.extra["openai_tool"]
        return kept
    fn: JSON = {"name": tool.name}
    for key, value in (("description", tool.description), ("parameters", tool.parameters)):
        if value is not None:
            fn[key] = value
    if "strict" in tool.extra:  # the only other key a function definition has
        fn["strict"] = tool.extra["strict"]
    return {"type": "function", "function": fn}


def _is_carrier(part: Part) -> bool:
    """An empty text part that only carries message-level extras."""
    return isinstance(part, TextPart) and not part.text and _meta(part).keys() == {"openai_message"}


def _foreign_carrier(part: Part) -> bool:
    """An empty text part holding only another provider's block (Anthropic's server-tool
    results and documents, Gemini's other media), which chat has no form for."""
    meta = _meta(part)
    return isinstance(part, TextPart) and not part.text and bool(meta) and not any(key.startswith("openai_") for key in meta)


def _message_extra(parts: Sequence[Part]) -> JSON:
    out: JSON = {}
    for part in parts:
        out.update(_meta(part).get("openai_message") or {})
    return out


def _named(message: JSON, name: str | None) -> JSON:
    if name is not None:
        message["name"] = name
    return message
