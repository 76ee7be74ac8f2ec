"""Anthropic Messages request bodies ⇄ the core :class:`ChatRequest` (pure, no I/O).

Used only across protocols: an Anthropic client on an Anthropic channel takes the
fast path, which forwards the body untouched but for the model.

Reading (``request_from_wire``) validates what it interprets and raises
``InvalidRequestError`` naming the offending path; no ``KeyError``/``TypeError``
escapes. ``system`` (a string or text blocks) becomes ``request.system``; a
``role: "system"`` message inside ``messages`` stays a ``SYSTEM`` message where it
is; ``metadata.user_id`` becomes ``user``; ``tool_choice.disable_parallel_tool_use``
becomes ``parallel_tool_calls = False``; ``stop_sequences`` becomes ``stop``. Every
other top-level field (``thinking``, ``output_config``, ``context_management``,
``service_tier``, ``container``, ``mcp_servers`` …) stays in ``extra``. Server tools
(``web_search_…``, ``code_execution_…``: Anthropic runs them itself) are not core
tools, which other protocols would offer the model as functions nobody runs: they
are kept whole in ``extra["anthropic_server_tools"]`` and written back after the
other tools.

Writing (``request_to_wire``) maps other protocols' provider-run tools (core tools
marked ``extra["hosted_tool"]``): ``web_search`` becomes Anthropic's web search
server tool (allowed domains and user location kept); any other type is a 400
naming it. Writing supplies ``max_tokens`` (Anthropic requires it) from
``default_max_tokens`` when the request has none, merges consecutive messages of
the same role (tool results first, as Anthropic requires after a ``tool_use``),
turns ``TOOL`` messages into user messages of ``tool_result`` blocks, moves
``SYSTEM`` messages found inside ``messages`` to the top-level ``system`` (older
models reject them in ``messages``), and writes back only the ``extra`` fields that
are Messages parameters (another protocol's extras are dropped: Anthropic rejects
unknown fields; ``service_tier`` goes only with a value Anthropic knows,
``context_management`` only in Anthropic's shape (an object); OpenAI's
``safety_identifier`` is ``metadata.user_id`` when the request names no user).
Round-trip normalizations: a single plain text block is written as a string,
``is_error: false`` and empty tool-result content are left out, ``null`` optional
fields are dropped, and system messages move to the top-level ``system``. See ``docs/adapters/anthropic.md`` for what
cannot cross to other protocols.
"""

from __future__ import annotations

from typing import Any

from gateway_core.billing.catalogue import catalogue_model
from gateway_core.errors import InvalidRequestError
from gateway_core.json_body import INT64_MAX
from gateway_core.model import (
    ChatRequest,
    Message,
    Part,
    Role,
    Tool,
    ToolChoice,
    ToolChoiceMode,
)
from gateway_core.reasoning import budget_for_effort

from .content import blocks_to_parts, expect, fail, kind_of, parts_to_blocks

JSON = dict[str, Any]

DEFAULT_MAX_TOKENS = 4096
SERVER_TOOLS = "anthropic_server_tools"
HOSTED = "hosted_tool"  # Tool.extra: the type of another protocol's provider-run tool (web_search …)
WEB_SEARCH_TOOL = "web_search_20250305"
ANTHROPIC_PARAMS = frozenset(
    "container context_management diagnostics inference_geo mcp_servers output_config "
    "output_format service_tier speed thinking".split()
)
_SHARED_VALUES = {  # parameters other protocols name alike, with values of their own
    "service_tier": lambda value: value in ("auto", "standard_only"),
    "context_management": lambda value: isinstance(value, dict),  # a Responses client's is a list of compaction settings
}
_INTERPRETED = frozenset(
    "model messages system tools tool_choice max_tokens temperature top_p top_k stop_sequences stream metadata".split()
)
_TOOL_KEYS = frozenset("name description input_schema type".split())
_WRITABLE_TOOL_EXTRA = frozenset(
    "allowed_callers cache_control defer_loading eager_input_streaming input_examples strict".split()
)
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}
_CHOICES = {"auto": ToolChoiceMode.AUTO, "any": ToolChoiceMode.REQUIRED, "tool": ToolChoiceMode.TOOL, "none": ToolChoiceMode.NONE}
_CHOICE_NAMES = {mode: name for name, mode in _CHOICES.items()}


# --- wire → core ---------------------------------------------------------------


def request_from_wire(body: Any) -> ChatRequest:
    """The core request for a Messages body (also a ``count_tokens`` body), or ``InvalidRequestError``."""
    if not isinstance(body, dict):
        fail(f"The request body must be a JSON object, not {kind_of(body)}.")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        fail("model: Field required (a non-empty string).")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        fail("messages: Field required (a non-empty array of messages).")
    extra = {k: v for k, v in body.items() if k not in _INTERPRETED}
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        fail(f"tools: expected an array, but got {kind_of(tools)}.")
    server_tools = [t for t in tools or () if isinstance(t, dict) and t.get("type") not in (None, "custom")]
    if server_tools:
        extra[SERVER_TOOLS] = server_tools
    metadata = body.get("metadata")
    user = None
    if isinstance(metadata, dict):
        user = expect(metadata["user_id"], str, "metadata.user_id") if metadata.get("user_id") is not None else None
        rest = {k: v for k, v in metadata.items() if k != "user_id"}
        if rest:
            extra["metadata"] = rest
    elif metadata is not None:
        fail(f"metadata: expected an object, but got {kind_of(metadata)}.")
    tool_choice, parallel = _read_tool_choice(body.get("tool_choice"))
    stop = body.get("stop_sequences")
    if stop is not None and (not isinstance(stop, list) or not all(isinstance(s, str) for s in stop)):
        fail("stop_sequences: expected an array of strings.")
    stream = body.get("stream")
    return ChatRequest(
        model=model,
        messages=tuple(_read_message(m, f"messages.{i}") for i, m in enumerate(messages)),
        system=_read_system(body.get("system")),
        tools=tuple(_read_tool(t, f"tools.{i}") for i, t in enumerate(tools or ()) if not _is_server_tool(t)),
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        max_tokens=_count(body.get("max_tokens"), "max_tokens"),
        temperature=_number(body.get("temperature"), "temperature"),
        top_p=_number(body.get("top_p"), "top_p"),
        top_k=_count(body.get("top_k"), "top_k"),
        stop=tuple(stop or ()),
        stream=bool(expect(stream, bool, "stream")) if stream is not None else False,
        user=user,
        extra=extra,
    )


def _read_system(system: Any) -> tuple[Part, ...]:
    if system is None:
        return ()
    return blocks_to_parts(system, "system")


def _read_message(raw: Any, p: str) -> Message:
    if not isinstance(raw, dict):
        fail(f"{p}: expected a message object, but got {kind_of(raw)}.")
    name = raw.get("role")
    role = _ROLES.get(name) if isinstance(name, str) else None
    if role is None:
        fail(f"{p}.role: expected 'user', 'assistant' or 'system', but got {raw.get('role')!r}.")
    if "content" not in raw:
        fail(f"{p}.content: Field required.")
    return Message(role, blocks_to_parts(raw["content"], f"{p}.content"))


def _is_server_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") not in (None, "custom")


def _read_tool(tool: Any, p: str) -> Tool:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        fail(f"{p}: expected a tool object with a string 'name'.")
    schema = tool.get("input_schema")
    if schema is not None and not isinstance(schema, dict):
        fail(f"{p}.input_schema: expected a JSON Schema object.")
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        fail(f"{p}.description: expected a string.")
    extra = {k: v for k, v in tool.items() if k not in _TOOL_KEYS}
    if tool.get("type") == "custom":
        extra["type"] = "custom"
    return Tool(tool["name"], description, schema, extra)


def _read_tool_choice(choice: Any) -> tuple[ToolChoice | None, bool | None]:
    if choice is None:
        return None, None
    if not isinstance(choice, dict) or not isinstance(choice.get("type"), str) or choice["type"] not in _CHOICES:
        fail("tool_choice: expected an object whose 'type' is 'auto', 'any', 'tool' or 'none'.")
    mode = _CHOICES[choice["type"]]
    name = None
    if mode is ToolChoiceMode.TOOL:
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            fail("tool_choice.name: the name of the tool to use is required.")
    disable = choice.get("disable_parallel_tool_use")
    parallel = None if disable is None else not expect(disable, bool, "tool_choice.disable_parallel_tool_use")
    return ToolChoice(mode, name), parallel


def _count(value: Any, param: str) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= INT64_MAX):
        fail(f"{param}: expected a non-negative 64-bit integer, but got {value!r}.")
    return value


def _number(value: Any, param: str) -> float | None:
    return None if value is None else expect(value, (int, float), param)


# --- core → wire ---------------------------------------------------------------


def request_to_wire(request: ChatRequest, model: str, *, default_max_tokens: int = DEFAULT_MAX_TOKENS, all_extra: bool = False) -> JSON:
    """The Messages body for a core request, sent as ``model``.

    ``all_extra`` writes back every ``extra`` field (for a request read from this
    wire); otherwise only the Messages parameters among them.
    """
    system = list(request.system)
    turns: list[tuple[str, list[JSON]]] = []
    for message in request.messages:
        if message.role is Role.SYSTEM:
            system.extend(message.parts)
            continue
        blocks = parts_to_blocks(message.parts)
        if not blocks:  # nothing Anthropic can carry (an empty turn is an error there)
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    out: JSON = {"model": model, "max_tokens": request.max_tokens if request.max_tokens is not None else default_max_tokens}
    out["messages"] = [{"role": role, "content": _compact(_results_first(role, blocks))} for role, blocks in turns]
    system_blocks = [b for b in parts_to_blocks(system) if b.get("type") == "text"]
    if system_blocks:
        out["system"] = _compact(system_blocks)
    tools = [tool for tool in map(_write_tool, request.tools) if tool is not None]
    server_tools = request.extra.get(SERVER_TOOLS)
    tools += server_tools if isinstance(server_tools, list) else []
    if tools:
        out["tools"] = tools
    choice = _write_tool_choice(request)
    if choice is not None:
        out["tool_choice"] = choice
    for key in ("temperature", "top_p", "top_k"):
        if getattr(request, key) is not None:
            out[key] = getattr(request, key)
    if request.stop:
        out["stop_sequences"] = list(request.stop)
    metadata = request.extra.get("metadata") if all_extra else None  # another protocol's metadata: not ours
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    user = request.user if request.user is not None or all_extra else request.extra.get("safety_identifier")
    if isinstance(user, str):  # OpenAI's safety_identifier (its newer user) names the end user as user_id does
        metadata["user_id"] = user
    if metadata:
        out["metadata"] = metadata
    for key, value in request.extra.items():
        if key == SERVER_TOOLS:
            continue
        if all_extra or (key in ANTHROPIC_PARAMS and _SHARED_VALUES.get(key, lambda v: True)(value)):
            out.setdefault(key, value)  # the core fields above win over extras
    if not all_extra:
        _structured_output(out, request.extra.get("response_format"))
        _thinking(out, request.extra, model)
    if request.stream:
        out["stream"] = True
    return out


def _structured_output(out: JSON, fmt: Any) -> None:
    """Another protocol's JSON output (OpenAI's ``response_format``, which the Gemini
    protocol writes too) as Anthropic's: a schema becomes ``output_config.format``
    (every object closed, as Anthropic's structured outputs require); plain JSON,
    which Anthropic has no switch for, an instruction at the end of the system prompt."""
    if not isinstance(fmt, dict) or "output_config" in out:
        return
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            out["output_config"] = {"format": {"type": "json_schema", "schema": _closed(schema)}}
    elif fmt.get("type") == "json_object":
        instruction = {"type": "text", "text": "Answer with one JSON object and nothing else."}
        system = out.get("system")
        out["system"] = [*( [{"type": "text", "text": system}] if isinstance(system, str) else system or []), instruction]


# another protocol's reasoning request as a thinking budget: OpenAI's reasoning_effort
# and Gemini's thinkingLevel by name (gateway_core.reasoning's table), Gemini's
# thinkingBudget as it is (-1, dynamic: medium's budget)
MIN_BUDGET = 1024  # the least budget_tokens Anthropic takes


def _thinking(out: JSON, extra: dict[str, Any], model: str) -> None:
    """Another protocol's request to reason, as Anthropic's ``thinking``: only for a
    model the catalogue says can think (an older Claude refuses the field), with a
    budget of at least 1,024 tokens that leaves 1,024 of ``max_tokens`` for the
    answer (else no thinking), and without ``temperature``/``top_k`` (which
    thinking does not take) or a ``top_p`` under 0.95."""
    budget = _reasoning_budget(extra)
    known = catalogue_model(model)
    if "thinking" in out or not budget or known is None or not known.reasoning:
        return
    budget = min(budget, int(out["max_tokens"]) - MIN_BUDGET)
    if budget < MIN_BUDGET:
        return
    out["thinking"] = {"type": "enabled", "budget_tokens": budget}
    out.pop("temperature", None)
    out.pop("top_k", None)
    if out.get("top_p") is not None and out["top_p"] < 0.95:
        out.pop("top_p")


def _reasoning_budget(extra: dict[str, Any]) -> int:
    effort = extra.get("reasoning_effort")
    if isinstance(effort, str):
        return budget_for_effort(effort)
    config = extra.get("generationConfig") or extra.get("generation_config") or {}
    thinking = (config.get("thinkingConfig") or config.get("thinking_config") or {}) if isinstance(config, dict) else {}
    if not isinstance(thinking, dict):
        return 0
    level = thinking.get("thinkingLevel") or thinking.get("thinking_level")
    if isinstance(level, str):
        return budget_for_effort(level)
    budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
    if isinstance(budget, int) and not isinstance(budget, bool):
        return budget_for_effort("medium") if budget < 0 else budget
    return 0


def _closed(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on each object that does not say."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {key: _closed(value) for key, value in schema.items()}
    if closed.get("type") == "object" and "additionalProperties" not in closed:
        closed["additionalProperties"] = False
    return closed


def _results_first(role: str, blocks: list[JSON]) -> list[JSON]:
    """A user turn's tool results go first: Anthropic wants them right after the ``tool_use`` turn."""
    if role != "user":
        return blocks
    return [b for b in blocks if b.get("type") == "tool_result"] + [b for b in blocks if b.get("type") != "tool_result"]


def _compact(blocks: list[JSON]) -> str | list[JSON]:
    """One plain text block as a string, else the blocks."""
    if len(blocks) == 1 and blocks[0].keys() == {"type", "text"} and blocks[0]["type"] == "text":
        text: str = blocks[0]["text"]
        return text
    return blocks


def _write_tool(tool: Tool) -> JSON | None:
    if "openai_tool" in tool.extra:  # another protocol's non-function tool: no Anthropic form
        return None
    if HOSTED in tool.extra:  # a tool the provider runs (a Responses client's web_search …)
        return _hosted_tool(tool)
    out: JSON = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    out["input_schema"] = tool.parameters if tool.parameters is not None else {"type": "object", "properties": {}}
    for key, value in tool.extra.items():
        if key in _WRITABLE_TOOL_EXTRA or key == "type":
            out[key] = value
    return out


def _hosted_tool(tool: Tool) -> JSON:
    """Anthropic's own web search for another protocol's; a 400 naming any other hosted type."""
    kind = tool.extra[HOSTED]
    if kind != "web_search":
        raise InvalidRequestError(
            f"Tools of type '{kind}' have no equivalent on an Anthropic model: remove them, or use a model whose "
            "channel serves that tool.", param="tools")  # fmt: skip
    options = tool.extra.get("options") if isinstance(tool.extra.get("options"), dict) else {}
    out: JSON = {"type": WEB_SEARCH_TOOL, "name": "web_search"}
    domains = options.get("filters", {}).get("allowed_domains") if isinstance(options.get("filters"), dict) else None
    if isinstance(domains, list) and domains:
        out["allowed_domains"] = domains
    location = options.get("user_location")
    if isinstance(location, dict):
        kept = {k: v for k, v in location.items() if k in ("city", "region", "country", "timezone") and isinstance(v, str)}
        if kept:
            out["user_location"] = {"type": "approximate", **kept}
    return out


def _write_tool_choice(request: ChatRequest) -> JSON | None:
    choice = request.tool_choice
    out: JSON | None = None
    if choice is not None:
        out = {"type": _CHOICE_NAMES[choice.mode]}
        if choice.mode is ToolChoiceMode.TOOL:
            out["name"] = choice.name
    parallel = request.parallel_tool_calls
    if parallel is None or not request.tools or (out is not None and out["type"] == "none"):
        return out
    if out is None:
        if parallel:  # the default: nothing to say
            return None
        out = {"type": "auto"}
    out["disable_parallel_tool_use"] = not parallel
    return out
