"""Anthropic content blocks ⇄ core parts (pure, no I/O), for requests and responses.

What the core cannot say travels in a part's ``provider_metadata`` under
``anthropic_*`` keys, so that wire → core → wire loses nothing:

- ``anthropic_extra``: keys of a block beyond its content (``cache_control``,
  ``citations``, a tool use's ``caller`` …), written back as they were.
- ``anthropic_block``: a block the core has no part for (``document``,
  ``search_result``, ``server_tool_use``, ``web_search_tool_result``, an image
  from the Files API …), kept whole on an *empty* ``TextPart`` (other protocols
  see an empty text and skip it).
- ``anthropic_signature``: the signature of a ``thinking`` block, on its
  ``ReasoningPart``; ``anthropic_redacted``: the ``data`` of a
  ``redacted_thinking`` block, on an empty ``ReasoningPart``.

Written back, a reasoning part without a signature (another protocol's reasoning)
is dropped from requests, as Anthropic rejects unsigned thinking blocks; answers to
Anthropic clients show it as a ``thinking`` block with an empty signature. Tool
arguments that are not a JSON object are sent as ``{"arguments": "<text>"}``, since
``input`` must be an object.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

import orjson

from gateway_core.errors import InvalidRequestError
from gateway_core.json_body import loads_checked
from gateway_core.model import ImagePart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

JSON = dict[str, Any]

_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "an object"}


# --- wire → core ---------------------------------------------------------------


def blocks_to_parts(content: Any, p: str) -> tuple[Part, ...]:
    """The parts of a message's ``content``: a string or an array of blocks."""
    if isinstance(content, str):
        return (TextPart(content),) if content else ()
    if isinstance(content, list):
        return tuple(block_to_part(block, f"{p}[{i}]") for i, block in enumerate(content))
    fail(f"{p}: expected a string or an array of content blocks, but got {kind_of(content)}.")


def block_to_part(block: Any, p: str) -> Part:
    """One content block as a core part (unknown blocks: kept whole on an empty text)."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        fail(f"{p}: expected a content block object with a string 'type'.")
    kind = block["type"]
    if kind == "text":
        return TextPart(expect(block.get("text"), str, f"{p}.text"), _extra(block, "text"))
    if kind == "image":
        return _image(block, p)
    if kind == "tool_use":
        call_id = expect(block.get("id"), str, f"{p}.id")
        name = expect(block.get("name"), str, f"{p}.name")
        arguments = block.get("input", {})
        return ToolCallPart(call_id, name, dump_json(arguments if arguments is not None else {}), _extra(block, "id", "name", "input"))
    if kind == "tool_result":
        call_id = expect(block.get("tool_use_id"), str, f"{p}.tool_use_id")
        content = block.get("content")
        parts = () if content is None else blocks_to_parts(content, f"{p}.content")
        is_error = block.get("is_error")
        if is_error is not None and not isinstance(is_error, bool):
            fail(f"{p}.is_error: expected a boolean, but got {kind_of(is_error)}.")
        return ToolResultPart(call_id, parts, bool(is_error), provider_metadata=_extra(block, "tool_use_id", "content", "is_error"))
    if kind == "thinking":
        text = expect(block.get("thinking"), str, f"{p}.thinking")
        meta = {**(_extra(block, "thinking", "signature") or {}), "anthropic_signature": block.get("signature")}
        return ReasoningPart(text, meta)
    if kind == "redacted_thinking":
        return ReasoningPart("", {"anthropic_redacted": block.get("data")})
    return TextPart("", {"anthropic_block": block})


def _image(block: JSON, p: str) -> Part:
    source = block.get("source")
    meta = _extra(block, "source")
    if isinstance(source, dict) and source.get("type") == "base64":
        data = expect(source.get("data"), str, f"{p}.source.data")
        media_type = expect(source.get("media_type"), str, f"{p}.source.media_type")
        return ImagePart(data=data, media_type=media_type, provider_metadata=meta)
    if isinstance(source, dict) and source.get("type") == "url":
        return ImagePart(url=expect(source.get("url"), str, f"{p}.source.url"), provider_metadata=meta)
    if not isinstance(source, dict):
        fail(f"{p}.source: an image block needs a source object.")
    return TextPart("", {"anthropic_block": block})  # a file id and future sources


def _extra(block: JSON, *content_keys: str) -> JSON | None:
    extra = {k: v for k, v in block.items() if k != "type" and k not in content_keys}
    return {"anthropic_extra": extra} if extra else None


# --- core → wire ---------------------------------------------------------------


def parts_to_blocks(parts: Iterable[Part], *, unsigned_thinking: bool = False) -> list[JSON]:
    """The content blocks of ``parts``; parts with no Anthropic form are skipped."""
    blocks = (part_to_block(part, unsigned_thinking=unsigned_thinking) for part in parts)
    return [block for block in blocks if block is not None]


def part_to_block(part: Part, *, unsigned_thinking: bool = False) -> JSON | None:
    """One part as a content block, or ``None`` when Anthropic has no place for it."""
    meta = part.provider_metadata or {}
    extra: JSON = meta.get("anthropic_extra") or {}
    if isinstance(part, TextPart):
        if "anthropic_block" in meta:
            kept: JSON = meta["anthropic_block"]
            return kept
        return {"type": "text", "text": part.text, **extra} if part.text else None
    if isinstance(part, ImagePart):
        return {"type": "image", "source": image_source(part), **extra}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": tool_input(part.arguments), **extra}
    if isinstance(part, ToolResultPart):
        block: JSON = {"type": "tool_result", "tool_use_id": part.tool_call_id}
        content = content_value(part.content)
        if content:
            block["content"] = content
        if part.is_error:
            block["is_error"] = True
        return {**block, **extra}
    if isinstance(part, ReasoningPart):
        if meta.get("anthropic_redacted") is not None:
            return {"type": "redacted_thinking", "data": meta["anthropic_redacted"]}
        signature = meta.get("anthropic_signature")
        if isinstance(signature, str) and (signature or unsigned_thinking):
            return {"type": "thinking", "thinking": part.text, "signature": signature, **extra}
        if unsigned_thinking and part.text:
            return {"type": "thinking", "thinking": part.text, "signature": ""}
        return None
    return None


def content_value(parts: Sequence[Part]) -> str | list[JSON]:
    """A message's ``content``: a string for one plain text part, else an array of blocks."""
    if len(parts) == 1 and isinstance(parts[0], TextPart) and not parts[0].provider_metadata and parts[0].text:
        return parts[0].text
    return parts_to_blocks(parts)


def image_source(part: ImagePart) -> JSON:
    if part.data is not None:
        return {"type": "base64", "media_type": part.media_type or "image/png", "data": part.data}
    url = part.url or ""
    head, sep, data = url.partition(",")
    if url.startswith("data:") and sep and head.endswith(";base64"):
        return {"type": "base64", "media_type": head[5:-7] or "image/png", "data": data}
    return {"type": "url", "url": url}


def tool_input(arguments: str) -> Any:
    """A tool call's JSON text as the ``input`` object Anthropic requires."""
    if not arguments.strip():
        return {}
    try:  # within the default limits, or kept as text: it must serialise again
        value = loads_checked(arguments)
    except InvalidRequestError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": arguments}


# --- helpers -------------------------------------------------------------------


def dump_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def expect(value: Any, kind: type | tuple[type, ...], p: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        name = _NAMES.get(kind, "a value") if isinstance(kind, type) else "a number"
        fail(f"{p}: expected {name}, but got {kind_of(value)}.")
    return value


def kind_of(value: Any) -> str:
    return "null" if value is None else _NAMES.get(type(value), type(value).__name__)


def fail(message: str) -> NoReturn:
    raise InvalidRequestError(message)
