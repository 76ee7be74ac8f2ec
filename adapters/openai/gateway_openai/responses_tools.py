"""Responses tools for channels that know only functions (pure, no I/O).

A converting channel (Anthropic, Gemini, chat completions) offers the model plain
functions. Responses clients declare more (Codex sends all of these):

- ``namespace`` tools group functions (and custom tools): each member becomes a
  function named :func:`flat_name` (``<namespace>__<name>``, cut to 64 characters of
  ``[A-Za-z0-9_-]``, which every provider accepts);
- ``custom`` tools take free-form text: they become functions of one string
  argument ``input`` (:data:`STRING_INPUT`);
- ``web_search`` (and ``web_search_preview``) becomes a core tool marked
  ``extra["hosted_tool"] = "web_search"`` (its options in ``extra["options"]``),
  which a channel type maps to its own web search (Anthropic's server tool, Gemini's
  ``googleSearch``); other hosted types (``file_search``, ``mcp``, ``local_shell`` …)
  are marked with their type, and a channel with no equivalent refuses them (400);
- ``additional_tools`` input items add their tools to the request's.

The answer goes back in the client's terms: :func:`tool_names` rebuilds, from the
client's own request, which function name stands for which namespaced or custom
tool, so a call comes back as a ``function_call`` with its ``namespace`` and
``name``, or as a ``custom_tool_call`` with the text of ``input``; a replayed call
(``function_call`` with a ``namespace``, ``custom_tool_call``) is read back into the
function form the upstream saw.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs
import orjson

from gateway_core.errors import InvalidRequestError
from gateway_core.model import Tool

JSON = dict[str, Any]

HOSTED = "hosted_tool"  # Tool.extra key: the Responses type of a tool the upstream runs itself
WEB_SEARCH = "web_search"
WEB_SEARCH_TYPES = frozenset(("web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"))
STRING_INPUT: JSON = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's input, as free-form text."}},
    "required": ["input"],
}
MAX_NAME = 64


@attrs.frozen
class ToolName:
    """What a function name sent upstream stands for in the client's request."""

    name: str
    namespace: str | None = None
    custom: bool = False


def flat_name(namespace: str | None, name: str) -> str:
    """The function name of a (namespaced) tool: ``[A-Za-z0-9_-]``, at most 64 characters."""
    joined = f"{namespace}__{name}" if namespace else name
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in joined) or "tool"
    if len(safe) <= MAX_NAME and safe == joined:
        return safe
    digest = hashlib.sha256(joined.encode()).hexdigest()[:8]
    return f"{safe[: MAX_NAME - 9]}_{digest}" if len(safe) > MAX_NAME - 9 else f"{safe}_{digest}"


def declared_tools(body: JSON) -> list[Any]:
    """The request's tools and those of its ``additional_tools`` input items."""
    tools = list(body.get("tools") or ()) if isinstance(body.get("tools"), list) else []
    items = body.get("input")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("type") == "additional_tools" and isinstance(item.get("tools"), list):
            tools.extend(item["tools"])
    return tools


def tool_names(body: JSON) -> dict[str, ToolName]:
    """Function name sent upstream → the client's tool, for namespaced and custom tools."""
    out: dict[str, ToolName] = {}
    for tool, namespace in _members(declared_tools(body)):
        name = tool.get("name")
        if not isinstance(name, str) or not name or tool.get("type") not in ("function", "custom"):
            continue
        flat = flat_name(namespace, name)
        if namespace or tool.get("type") == "custom" or flat != name:
            out[flat] = ToolName(name, namespace, tool.get("type") == "custom")
    return out


def core_tools(body: JSON) -> list[Tool]:
    """The core tools of a Responses request (``InvalidRequestError`` for a malformed one)."""
    if body.get("tools") is not None and not isinstance(body.get("tools"), list):
        raise InvalidRequestError("'tools' must be an array.", param="tools")
    out: list[Tool] = []
    seen: set[str] = set()
    for n, (tool, namespace) in enumerate(_members(declared_tools(body))):
        core = _core_tool(tool, namespace, n)
        if core is not None and core.name not in seen:
            seen.add(core.name)
            out.append(core)
    return out


def custom_input(arguments: str) -> str:
    """The free-form text of a custom tool's call made as a function (``{"input": …}``)."""
    try:
        value = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        text: str = value["input"]
        return text
    return arguments


def custom_arguments(text: str) -> str:
    """A custom tool call's text as the arguments of its function form."""
    return orjson.dumps({"input": text}).decode()


def _members(tools: list[Any]) -> list[tuple[JSON, str | None]]:
    out: list[tuple[JSON, str | None]] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            namespace = tool.get("name") if isinstance(tool.get("name"), str) else None
            out.extend((member, namespace) for member in tool["tools"] if isinstance(member, dict))
        else:
            out.append((tool, None))
    return out


def _core_tool(tool: JSON, namespace: str | None, n: int) -> Tool | None:
    kind = tool.get("type")
    if kind in ("function", "custom"):
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidRequestError(f"'tools[{n}].name' is required: a {kind} tool needs a name.", param=f"tools[{n}].name")
        description = tool.get("description") if isinstance(tool.get("description"), str) else None
        if kind == "custom":
            return Tool(flat_name(namespace, name), description, STRING_INPUT)
        parameters = tool.get("parameters")
        extra = {"strict": tool["strict"]} if isinstance(tool.get("strict"), bool) else {}
        return Tool(flat_name(namespace, name), description, parameters if isinstance(parameters, dict) else None, extra)
    if not isinstance(kind, str):
        return None
    hosted = WEB_SEARCH if kind in WEB_SEARCH_TYPES else kind
    options = {k: v for k, v in tool.items() if k != "type"}
    return Tool(hosted, extra={HOSTED: hosted, "options": options})
