"""``generateContent`` request bodies ⇄ the core :class:`ChatRequest` (pure, no I/O).

Used only across protocols: a Gemini client on a gemini channel takes the fast
path, which forwards its body untouched (``safetySettings``, ``thinkingConfig``,
``cachedContent``, Google's built-in tools … all reach Google).

Reading (``request_from_wire``) validates what it interprets and raises
``InvalidRequestError`` naming the offending field. ``contents`` become messages
(see :mod:`gateway_gemini.content`), ``systemInstruction`` the system parts,
``functionDeclarations`` tools (their schemas turned into lower-case JSON Schema,
see :mod:`gateway_gemini.schema`; each distinct declaration is read once, then
kept by its bytes, see :mod:`gateway_gemini.declarations`); ``googleSearch`` becomes a provider-run
``web_search`` tool (``extra["hosted_tool"]``: Anthropic's web search server tool
on an anthropic channel, no tool on an openai one); Google's other built-in tools
(``codeExecution``, ``urlContext`` …) have no meaning elsewhere and are dropped.
``toolConfig.functionCallingConfig``: ``AUTO`` / ``VALIDATED`` → auto, ``NONE`` →
none, ``ANY`` → required, or the named tool when ``allowedFunctionNames`` names
one (with several, only those tools are offered). ``generationConfig``:
``temperature``, ``topP``, ``topK``, ``maxOutputTokens``, ``stopSequences`` map
to the core fields.

JSON output has no core field yet: it travels in ``extra["response_format"]`` in
OpenAI's shape, the one the openai channel writes as is: ``responseMimeType:
"application/json"`` with ``responseJsonSchema`` or ``responseSchema`` →
``{"type": "json_schema", "json_schema": {"name": "response", "schema": …}}``,
without a schema → ``{"type": "json_object"}``. Likewise ``seed``,
``presencePenalty`` and ``frequencyPenalty`` → ``extra`` ``seed``,
``presence_penalty``, ``frequency_penalty``. The rest of ``generationConfig``
(``thinkingConfig``, ``candidateCount``, ``responseModalities`` …) stays in
``extra["generationConfig"]``, other top-level fields (``safetySettings``,
``cachedContent``) in ``extra`` under their names: only a gemini channel writes them.

Writing (``request_to_wire``) is the reverse, for requests of other protocols sent
to a gemini channel: system messages at the head of the conversation join
``systemInstruction``, later ones stay in place as marked user text (see
:func:`~.content.contents_to_wire`); function declarations with ``parametersJsonSchema``, tool
choice as ``functionCallingConfig``, ``extra["response_format"]`` (OpenAI) or
``output_format`` / ``output_config.format`` (Anthropic) as ``responseMimeType``
and ``responseJsonSchema``, OpenAI's ``reasoning_effort`` (low / medium / high →
``thinkingBudget`` 1024 / 8192 / 24576, :mod:`gateway_core.reasoning`'s table;
minimal as low, xhigh as high; a Responses client's ``reasoning.summary`` as
``includeThoughts``), a Responses client's ``web_search`` as
``googleSearch`` (beside function declarations only for Gemini 3 and later, which
take both in one request; other provider-run tools: a 400 naming their type) and Anthropic's ``thinking`` (its
``budget_tokens``, with ``includeThoughts``) as ``thinkingConfig``. Other
protocols' fields Gemini has no place for (``user``, ``parallel_tool_calls``,
``n``, ``logit_bias`` …) are dropped: Google rejects unknown fields.
"""

from __future__ import annotations

from typing import Any

from gateway_core.json_body import INT64_MAX
from gateway_core.model import ChatRequest, Role, Tool, ToolChoice, ToolChoiceMode
from gateway_core.reasoning import budget_for_effort, common_effort

from .content import contents_to_wire, messages_from_wire, system_from_wire, system_to_wire
from .declarations import DECLARATIONS
from .schema import for_gemini, to_json_schema
from .wire import JSON, as_dict, as_list, expect, fail, field, has_field, without_fields

_INTERPRETED = frozenset(("model", "contents", "systemInstruction", "tools", "toolConfig", "generationConfig"))
_SAMPLING = frozenset(("temperature", "topP", "topK", "maxOutputTokens", "stopSequences"))
_MAPPED = frozenset(("seed", "presencePenalty", "frequencyPenalty", "responseMimeType", "responseSchema", "responseJsonSchema"))
_DECLARATION_KEYS = frozenset(("name", "description", "parameters", "parametersJsonSchema"))
_GEMINI_TOP_LEVEL = ("safetySettings", "cachedContent")
HOSTED = "hosted_tool"  # Tool.extra: the type of another protocol's provider-run tool (web_search …)
_MODES = {
    "AUTO": ToolChoiceMode.AUTO,
    "VALIDATED": ToolChoiceMode.AUTO,
    "MODE_UNSPECIFIED": ToolChoiceMode.AUTO,
    "ANY": ToolChoiceMode.REQUIRED,
    "NONE": ToolChoiceMode.NONE,
}


# --- wire → core -----------------------------------------------------------------


def request_from_wire(body: Any, model: str, *, stream: bool = False) -> ChatRequest:
    """The core request for a ``generateContent`` body sent for ``model``."""
    if not isinstance(body, dict):
        fail("The request body must be a JSON object.")
    contents = field(body, "contents")
    if not isinstance(contents, (list, dict)) or not contents:
        fail("'contents' is required: a non-empty array of Content objects.", "contents")
    config = as_dict(expect(field(body, "generationConfig"), dict, "generationConfig", "an object"))
    tools = _tools_from_wire(field(body, "tools"))
    choice, allowed = _tool_choice_from_wire(field(body, "toolConfig"))
    if allowed and choice is not None and choice.mode is ToolChoiceMode.REQUIRED:
        tools = [t for t in tools if t.name in allowed]
    extra = without_fields(body, _INTERPRETED)
    extra.update(_mapped_config(config))
    rest = without_fields(config, _SAMPLING | _MAPPED)
    if rest:
        extra["generationConfig"] = rest
    tool_config = without_fields(as_dict(field(body, "toolConfig")), {"functionCallingConfig"})
    if tool_config:
        extra["toolConfig"] = tool_config
    return ChatRequest(
        model=model,
        messages=tuple(messages_from_wire(contents)),
        system=system_from_wire(field(body, "systemInstruction")),
        tools=tuple(tools),
        tool_choice=choice,
        max_tokens=_positive(field(config, "maxOutputTokens"), "generationConfig.maxOutputTokens"),
        temperature=_number(field(config, "temperature"), "generationConfig.temperature"),
        top_p=_number(field(config, "topP"), "generationConfig.topP"),
        top_k=_positive(field(config, "topK"), "generationConfig.topK"),
        stop=_stop(field(config, "stopSequences")),
        stream=stream,
        extra=extra,
    )


def _tools_from_wire(tools: Any) -> list[Tool]:
    out: list[Tool] = []
    for i, tool in enumerate(as_list(tools)):
        expect(tool, dict, f"tools[{i}]", "a Tool object")
        if (has_field(tool, "googleSearch") or has_field(tool, "googleSearchRetrieval")) and not any(HOSTED in t.extra for t in out):
            out.append(Tool("web_search", extra={HOSTED: "web_search", "options": {}}))  # another provider's own web search
        for j, decl in enumerate(as_list(field(tool, "functionDeclarations"))):
            p = f"tools[{i}].functionDeclarations[{j}]"
            expect(decl, dict, p, "a FunctionDeclaration object")
            out.append(DECLARATIONS.tool(decl, p, _tool_from_wire))
    return out


def _tool_from_wire(decl: JSON, p: str) -> Tool:
    name = field(decl, "name")
    if not isinstance(name, str) or not name:
        fail(f"'{p}.name' is required (a non-empty string).", f"{p}.name")
    schema = field(decl, "parametersJsonSchema")
    if schema is None:
        schema = field(decl, "parameters")
    expect(schema, dict, f"{p}.parameters", "a Schema object")
    rest = without_fields(decl, _DECLARATION_KEYS)
    return Tool(
        name=name,
        description=expect(field(decl, "description"), str, f"{p}.description", "a string"),
        parameters=to_json_schema(schema) if schema is not None else None,
        extra={"gemini_declaration": rest} if rest else {},
    )


def _tool_choice_from_wire(tool_config: Any) -> tuple[ToolChoice | None, list[str]]:
    config = field(expect(tool_config, dict, "toolConfig", "an object"), "functionCallingConfig")
    expect(config, dict, "toolConfig.functionCallingConfig", "an object")
    if not config:
        return None, []
    mode = field(config, "mode")
    names = [n for n in as_list(field(config, "allowedFunctionNames")) if isinstance(n, str)]
    if mode is None:
        return None, names
    if not isinstance(mode, str) or mode.upper() not in _MODES:
        fail(f"Invalid value at 'toolConfig.functionCallingConfig.mode': expected AUTO, ANY, NONE or VALIDATED, got {mode!r}.",
             "toolConfig.functionCallingConfig.mode")  # fmt: skip
    choice = _MODES[mode.upper()]
    if choice is ToolChoiceMode.REQUIRED and len(names) == 1:
        return ToolChoice(ToolChoiceMode.TOOL, names[0]), names
    return ToolChoice(choice), names


def _mapped_config(config: JSON) -> JSON:
    out: JSON = {}
    for wire_name, core_name in (("seed", "seed"), ("presencePenalty", "presence_penalty"), ("frequencyPenalty", "frequency_penalty")):
        value = field(config, wire_name)
        if value is not None:
            out[core_name] = value
    mime = field(config, "responseMimeType")
    schema = field(config, "responseJsonSchema")
    if schema is None:
        schema = field(config, "responseSchema")
    if mime == "application/json" or (mime is None and schema is not None):
        if isinstance(schema, dict):
            json_schema = {"name": "response", "schema": to_json_schema(schema), "strict": False}
            out["response_format"] = {"type": "json_schema", "json_schema": json_schema}
        else:
            out["response_format"] = {"type": "json_object"}
    return out


def _positive(value: Any, param: str) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= INT64_MAX):
        fail(f"Invalid value at '{param}': expected a positive integer (int64), got {value!r}.", param)
    return value


def _number(value: Any, param: str) -> float | None:
    number: float | None = expect(value, (int, float), param, "a number")
    return number


def _stop(value: Any) -> tuple[str, ...]:
    stops = expect(value, list, "generationConfig.stopSequences", "an array of strings")
    if stops and not all(isinstance(s, str) for s in stops):
        fail("Invalid value at 'generationConfig.stopSequences': expected an array of strings.", "generationConfig.stopSequences")
    return tuple(stops or ())


# --- core → wire -----------------------------------------------------------------


def request_to_wire(request: ChatRequest, *, signature_placeholder: str = "", model: str = "") -> JSON:
    """The ``generateContent`` body for a core request (the model goes in the URL;
    ``model``, the upstream's, decides whether Google Search may go with functions)."""
    # system messages, wherever they are in the conversation, keep system authority: they
    # join the system instruction in order, after the request's own system (a model reads
    # the last text of a user turn as the request: a system message there would be answered)
    messages = [m for m in request.messages if m.role is not Role.SYSTEM]
    out: JSON = {"contents": contents_to_wire(messages, signature_placeholder=signature_placeholder)}
    system = system_to_wire([*request.system, *(p for m in request.messages if m.role is Role.SYSTEM for p in m.parts)])
    if system is not None:
        out["systemInstruction"] = system
    declarations = [d for d in (_declaration(tool) for tool in request.tools) if d is not None]
    tools: list[JSON] = [{"functionDeclarations": declarations}] if declarations else []
    search = _hosted_tools(request)
    if not declarations or combines_search_with_functions(model):
        tools += search  # Gemini before 3 refuses built-in tools beside function declarations
    if tools:
        out["tools"] = tools
    tool_config = dict(as_dict(field(request.extra, "toolConfig")))
    calling = _tool_choice_to_wire(request.tool_choice) if declarations else None
    if calling is not None:
        tool_config["functionCallingConfig"] = calling
    if tool_config:
        out["toolConfig"] = tool_config
    config = generation_config(request)
    if config:
        out["generationConfig"] = config
    for name in _GEMINI_TOP_LEVEL:
        value = field(request.extra, name)
        if value is not None:
            out[name] = value
    return out


def generation_config(request: ChatRequest) -> JSON:
    """``generationConfig`` from the core fields and what ``extra`` says in any protocol's words."""
    extra = request.extra
    config: JSON = dict(as_dict(field(extra, "generationConfig")))
    for key, value in (
        ("temperature", request.temperature),
        ("topP", request.top_p),
        ("topK", request.top_k),
        ("maxOutputTokens", request.max_tokens),
    ):
        if value is not None:
            config[key] = value
    if request.stop:
        config["stopSequences"] = list(request.stop)
    for core_name, wire_name in (("seed", "seed"), ("presence_penalty", "presencePenalty"), ("frequency_penalty", "frequencyPenalty")):
        if isinstance(extra.get(core_name), (int, float)) and not isinstance(extra.get(core_name), bool):
            config.setdefault(wire_name, extra[core_name])
    if not has_field(config, "responseMimeType"):
        config.update(_response_format(extra))
    if not has_field(config, "thinkingConfig"):
        thinking = _thinking(extra)
        if thinking:
            config["thinkingConfig"] = thinking
    return config


def combines_search_with_functions(model: str) -> bool:
    """Whether the model takes Google Search in the same request as functions (Gemini 3 and later)."""
    _, found, rest = model.removeprefix("models/").partition("gemini-")
    major = rest.split(".")[0].split("-")[0] if found else ""
    return major.isdigit() and int(major) >= 3


def _hosted_tools(request: ChatRequest) -> list[JSON]:
    """Google Search for another protocol's web search (a Responses ``web_search``, Anthropic's
    ``web_search_…`` server tool); a 400 naming any other Responses provider-run tool."""
    kinds = {tool.extra[HOSTED] for tool in request.tools if HOSTED in tool.extra}
    server_tools = request.extra.get("anthropic_server_tools")
    if any(isinstance(t, dict) and str(t.get("type", "")).startswith("web_search_") for t in as_list(server_tools)):
        kinds.add("web_search")
    for kind in sorted(kinds - {"web_search"}):
        fail(f"Tools of type '{kind}' have no equivalent on a Gemini model: remove them, or use a model whose "
             "channel serves that tool.", "tools")  # fmt: skip
    return [{"googleSearch": {}}] if kinds else []


def _declaration(tool: Tool) -> JSON | None:
    if HOSTED in tool.extra:
        return None  # see _hosted_tools
    if "openai_tool" in tool.extra or "anthropic_tool" in tool.extra:
        return None  # another protocol's built-in tool: Gemini has no such function
    out: JSON = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    if tool.parameters is not None:
        out["parametersJsonSchema"] = for_gemini(tool.parameters)
    out.update(as_dict(tool.extra.get("gemini_declaration")))
    return out


def _tool_choice_to_wire(choice: ToolChoice | None) -> JSON | None:
    if choice is None:
        return None
    if choice.mode is ToolChoiceMode.TOOL:
        return {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    mode = {ToolChoiceMode.AUTO: "AUTO", ToolChoiceMode.NONE: "NONE", ToolChoiceMode.REQUIRED: "ANY"}[choice.mode]
    return {"mode": mode}


def _response_format(extra: JSON) -> JSON:
    fmt = extra.get("response_format")
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema":
            schema = as_dict(fmt.get("json_schema")).get("schema")
            out: JSON = {"responseMimeType": "application/json"}
            if isinstance(schema, dict):
                out["responseJsonSchema"] = for_gemini(schema)
            return out
        if fmt.get("type") == "json_object":
            return {"responseMimeType": "application/json"}
        return {}
    anthropic = extra.get("output_format") or as_dict(extra.get("output_config")).get("format")
    if isinstance(anthropic, dict) and anthropic.get("type") == "json_schema":
        schema = anthropic.get("schema")
        out = {"responseMimeType": "application/json"}
        if isinstance(schema, dict):
            out["responseJsonSchema"] = for_gemini(schema)
        return out
    return {}


def _thinking(extra: JSON) -> JSON:
    out: JSON = {}
    effort = common_effort(extra.get("reasoning_effort"))  # minimal as low, xhigh as high
    if effort is not None:
        out["thinkingBudget"] = budget_for_effort(effort)
    if extra.get("reasoning_summary") in ("auto", "concise", "detailed"):
        out["includeThoughts"] = True  # a Responses client asks to see a summary of the reasoning
    if out:
        return out
    thinking = extra.get("thinking")  # Anthropic's, with its named effort (output_config.effort) over a budget
    named = common_effort(as_dict(extra.get("output_config")).get("effort"))
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"):
        budget = thinking.get("budget_tokens") if thinking.get("type") == "enabled" else None
        if named is not None:
            budget = budget_for_effort(named)
        if isinstance(budget, int) and not isinstance(budget, bool):
            return {"includeThoughts": True, "thinkingBudget": budget}
        return {"includeThoughts": True}
    if named is not None and not isinstance(thinking, dict):
        return {"thinkingBudget": budget_for_effort(named)}
    return {}
