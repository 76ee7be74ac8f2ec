"""Gemini ``parts`` and ``contents`` ⇄ core parts and messages (pure, no I/O).

What the core cannot say travels in ``provider_metadata`` under ``gemini_*`` keys:

- ``gemini_thought_signature``: a part's ``thoughtSignature`` (any part kind);
- ``gemini_thought``: on a ``ReasoningPart`` read from a ``thought: true`` part;
- ``gemini_part``: a part the core has no kind for (``executableCode``,
  ``codeExecutionResult``, non-image ``inlineData`` / ``fileData`` …), kept whole on
  an *empty* ``TextPart`` (other protocols see an empty text and skip it);
- ``gemini_extra``: a part's other keys (``videoMetadata``, ``mediaResolution`` …);
- ``gemini_file``: on an ``ImagePart`` read from ``fileData`` (its ``url`` is the ``fileUri``);
- ``gemini_response``: a ``functionResponse.response`` object, on its ``ToolResultPart``;
  ``gemini_function_response``: the ``functionResponse``'s other keys.

Function-call ids. Gemini's calls usually have no ``id``; other protocols need one
to pair a call with its result. :class:`CallIds` gives a call without id the
deterministic id ``call_<name>_<content index>_<part index>`` and pairs each
``functionResponse`` with the oldest unanswered call of the same name in the
preceding model turn, by id when the ids agree (the Gemini command-line client sends
results with ids its calls never had). Writing, every ``functionCall`` and
``functionResponse`` carries the core id, and a result's ``name`` (which Gemini
requires) comes from the call of the same id when the result has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from gateway_core.errors import InvalidRequestError
from gateway_core.json_body import loads_checked
from gateway_core.model import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

from .wire import JSON, as_dict, as_list, expect, fail, field, kind_of, without_fields

SIGNATURE = "gemini_thought_signature"
_PART_KEYS = frozenset(("text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall", "functionResponse"))
_RESPONSE_KEYS = frozenset(("id", "name", "response"))
_OUTPUT_KEYS = ("output", "result", "content")
_MIME_BY_SUFFIX = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
    ".gif": "image/gif", ".heic": "image/heic", ".heif": "image/heif",
}  # fmt: skip


def safe_name(name: str) -> str:
    """``name`` with only the characters every protocol allows in an id."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name) or "call"


class CallIds:
    """Assigns and pairs function-call ids while reading one request's contents."""

    def __init__(self) -> None:
        self._pending: dict[str, list[str]] = {}

    def model_turn(self) -> None:
        self._pending = {}

    def call(self, given: Any, name: str, where: str) -> str:
        call_id = given if isinstance(given, str) and given else f"call_{safe_name(name)}_{where}"
        self._pending.setdefault(name, []).append(call_id)
        return call_id

    def result(self, given: Any, name: str, where: str) -> str:
        if isinstance(given, str) and given:
            for ids in self._pending.values():
                if given in ids:
                    ids.remove(given)
                    return given
        queue = self._pending.get(name)
        if queue:
            return queue.pop(0)
        return given if isinstance(given, str) and given else f"call_{safe_name(name)}_{where}"


# --- wire → core -----------------------------------------------------------------


def messages_from_wire(contents: Any, p: str = "contents") -> list[Message]:
    """The core messages of a ``contents`` array (roles ``user`` / ``model``)."""
    ids = CallIds()
    messages: list[Message] = []
    for i, content in enumerate(as_list(contents)):
        where = f"{p}[{i}]"
        expect(content, dict, where, "a Content object")
        role = field(content, "role") or "user"
        if role == "model":
            ids.model_turn()
            out_role = Role.ASSISTANT
        elif role in ("user", "function", "tool"):
            out_role = Role.USER
        else:
            fail(f"Invalid value at '{where}.role': expected 'user' or 'model', got {role!r}.", f"{where}.role")
        parts = [
            part_from_wire(raw, f"{where}.parts[{j}]", ids, f"{i}_{j}")
            for j, raw in enumerate(as_list(field(content, "parts")))
        ]
        if parts:
            messages.append(Message(out_role, tuple(parts)))
    return messages


def system_from_wire(instruction: Any, p: str = "systemInstruction") -> tuple[Part, ...]:
    """The parts of a ``systemInstruction`` (a Content, or a plain string some clients send)."""
    if instruction is None:
        return ()
    if isinstance(instruction, str):
        return (TextPart(instruction),) if instruction else ()
    expect(instruction, dict, p, "a Content object")
    ids = CallIds()
    return tuple(part_from_wire(raw, f"{p}.parts[{j}]", ids, f"s_{j}") for j, raw in enumerate(as_list(field(instruction, "parts"))))


def part_from_wire(part: Any, p: str, ids: CallIds | None = None, where: str = "0") -> Part:
    """One core part of a Gemini part; ids of calls and results through ``ids``."""
    if not isinstance(part, dict):
        fail(f"Invalid value at '{p}': expected a Part object, got {kind_of(part)}.", p)
    ids = ids or CallIds()
    meta: JSON = {}
    signature = field(part, "thoughtSignature")
    if isinstance(signature, str) and signature:
        meta[SIGNATURE] = signature
    extra = without_fields(part, _PART_KEYS)
    if extra:
        meta["gemini_extra"] = extra
    text = field(part, "text")
    if text is not None:
        expect(text, str, f"{p}.text", "a string")
        if field(part, "thought") is True:
            return ReasoningPart(text, {**meta, "gemini_thought": True})
        return TextPart(text, meta or None)
    if field(part, "thought") is True:  # a signature-only thought
        return ReasoningPart("", {**meta, "gemini_thought": True})
    call = field(part, "functionCall")
    if call is not None:
        expect(call, dict, f"{p}.functionCall", "a FunctionCall object")
        name = _name(call, f"{p}.functionCall")
        args = field(call, "args")
        expect(args, dict, f"{p}.functionCall.args", "an object")
        arguments = orjson.dumps(args if args is not None else {}).decode()
        return ToolCallPart(ids.call(field(call, "id"), name, where), name, arguments, meta or None)
    result = field(part, "functionResponse")
    if result is not None:
        return _result_from_wire(result, f"{p}.functionResponse", ids, where, meta)
    image = _image_from_wire(part, p, meta)
    if image is not None:
        return image
    return TextPart("", {"gemini_part": part})


def _name(obj: JSON, p: str) -> str:
    name = field(obj, "name")
    if not isinstance(name, str) or not name:
        fail(f"'{p}.name' is required (a non-empty string).", f"{p}.name")
    return name


def _result_from_wire(result: Any, p: str, ids: CallIds, where: str, meta: JSON) -> ToolResultPart:
    expect(result, dict, p, "a FunctionResponse object")
    name = _name(result, p)
    response = field(result, "response")
    expect(response, dict, f"{p}.response", "an object")
    text, is_error = result_text(response)
    content: list[Part] = [TextPart(text)] if text else []
    for j, raw in enumerate(as_list(field(result, "parts"))):
        content.append(part_from_wire(raw, f"{p}.parts[{j}]"))
    meta = {**meta, "gemini_response": response}
    rest = without_fields(result, _RESPONSE_KEYS)
    if rest:
        meta["gemini_function_response"] = rest
    call_id = ids.result(field(result, "id"), name, where)
    return ToolResultPart(call_id, tuple(content), is_error, name, meta)


def result_text(response: JSON | None) -> tuple[str, bool]:
    """The text of a function's ``response`` object for other protocols, and whether
    it reports an error: ``{"output": x}`` (or ``result`` / ``content``) gives ``x``,
    ``{"error": x}`` gives ``x`` as an error, anything else its JSON text."""
    if not response:
        return "", False
    if len(response) == 1:
        key, value = next(iter(response.items()))
        if key in _OUTPUT_KEYS or key == "error":
            return (value if isinstance(value, str) else orjson.dumps(value).decode()), key == "error"
    return orjson.dumps(response).decode(), False


def _image_from_wire(part: JSON, p: str, meta: JSON) -> Part | None:
    inline = field(part, "inlineData")
    if inline is not None:
        expect(inline, dict, f"{p}.inlineData", "a Blob object")
        mime = field(inline, "mimeType")
        if isinstance(mime, str) and mime.startswith("image/"):
            data = expect(field(inline, "data"), str, f"{p}.inlineData.data", "a base64 string")
            return ImagePart(data=data or "", media_type=mime, provider_metadata=meta or None)
        return None
    file = field(part, "fileData")
    if file is not None:
        expect(file, dict, f"{p}.fileData", "a FileData object")
        mime, uri = field(file, "mimeType"), field(file, "fileUri")
        if isinstance(uri, str) and uri and (mime is None or (isinstance(mime, str) and mime.startswith("image/"))):
            return ImagePart(url=uri, media_type=mime, provider_metadata={**meta, "gemini_file": True})
    return None


# --- core → wire -----------------------------------------------------------------


def contents_to_wire(messages: Sequence[Message], *, signature_placeholder: str = "") -> list[JSON]:
    """The ``contents`` for core messages: consecutive messages of one Gemini role
    merged (function responses first in a user turn), empty ones left out. System
    messages have no place in ``contents`` (the caller puts them in the system
    instruction) and are left out here. ``signature_placeholder`` goes on the first
    ``functionCall`` of a model turn that has no thought signature."""
    names: dict[str, str] = {}
    contents: list[JSON] = []
    for message in messages:
        role = "model" if message.role is Role.ASSISTANT else "user"
        parts: list[JSON] = []
        if message.role is Role.SYSTEM:
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                names[part.id] = part.name
            parts.extend(part_to_wire(part, names))
        if not parts:
            continue
        if role == "model" and signature_placeholder:
            _sign_first_call(parts, signature_placeholder)
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
        if role == "user":
            merged = contents[-1]["parts"]
            merged.sort(key=lambda wire: "functionResponse" not in wire)  # stable: results first
    return contents


def system_to_wire(parts: Sequence[Part]) -> JSON | None:
    """A ``systemInstruction`` of the text parts of ``parts`` (others have no place there)."""
    texts = [{"text": p.text} for p in parts if isinstance(p, (TextPart, ReasoningPart)) and p.text]
    return {"parts": texts} if texts else None


def part_to_wire(part: Part, names: dict[str, str] | None = None, *, thoughts: bool = False) -> list[JSON]:
    """The Gemini parts of one core part (none for what Gemini cannot take).

    Reasoning read from Gemini goes back as a ``thought`` part; another provider's
    reasoning only when ``thoughts`` (an answer to a client that asked for thoughts:
    a request to Gemini cannot carry it)."""
    meta = part.provider_metadata or {}
    out: list[JSON]
    if isinstance(part, TextPart):
        if "gemini_part" in meta:
            return [meta["gemini_part"]]
        if not part.text and SIGNATURE not in meta:
            return []
        out = [{**(meta.get("gemini_extra") or {}), "text": part.text}]
    elif isinstance(part, ReasoningPart):
        if not meta.get("gemini_thought") and not (thoughts and part.text):
            return []
        out = [{**(meta.get("gemini_extra") or {}), "text": part.text, "thought": True}]
    elif isinstance(part, ImagePart):
        out = [{**(meta.get("gemini_extra") or {}), **image_to_wire(part)}]
    elif isinstance(part, ToolCallPart):
        call = {"id": part.id, "name": part.name, "args": arguments_object(part.arguments)}
        out = [{"functionCall": call}]
    else:
        return _result_to_wire(part, names or {})
    if meta.get(SIGNATURE):
        out[0]["thoughtSignature"] = meta[SIGNATURE]
    return out


def image_to_wire(part: ImagePart) -> JSON:
    meta = part.provider_metadata or {}
    url = part.url
    if url and url.startswith("data:"):
        head, _, data = url.partition(",")
        mime = head[5:].split(";")[0] or part.media_type or "image/png"
        return {"inlineData": {"mimeType": mime, "data": data}}
    if url:
        return {"fileData": {"mimeType": part.media_type or guess_mime(url), "fileUri": url}}
    if meta.get("gemini_file"):
        return {"fileData": {"mimeType": part.media_type or "image/png", "fileUri": ""}}
    return {"inlineData": {"mimeType": part.media_type or "image/png", "data": part.data or ""}}


def guess_mime(url: str) -> str:
    path = url.split("?", 1)[0].lower()
    for suffix, mime in _MIME_BY_SUFFIX.items():
        if path.endswith(suffix):
            return mime
    return "image/jpeg"


def arguments_object(arguments: str) -> JSON:
    """Tool-call arguments (JSON text) as the object Gemini's ``args`` must be."""
    if not arguments.strip():
        return {}
    try:  # within the default limits, or kept as text: it must serialise again
        value = loads_checked(arguments)
    except InvalidRequestError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def _result_to_wire(part: ToolResultPart, names: dict[str, str]) -> list[JSON]:
    meta = part.provider_metadata or {}
    texts = "".join(p.text for p in part.content if isinstance(p, TextPart))
    response = meta.get("gemini_response")
    if not isinstance(response, dict):
        response = {"error" if part.is_error else "output": texts}
    name = part.name or names.get(part.tool_call_id) or part.tool_call_id
    result: JSON = {**as_dict(meta.get("gemini_function_response")), "id": part.tool_call_id, "name": name, "response": response}
    out: list[JSON] = [{"functionResponse": result}]
    if meta.get(SIGNATURE):
        out[0]["thoughtSignature"] = meta[SIGNATURE]
    if "parts" not in result:  # images of another protocol's result: beside it, in the same turn
        out.extend(image_to_wire(p) for p in part.content if isinstance(p, ImagePart))
    return out


def _sign_first_call(parts: list[JSON], placeholder: str) -> None:
    calls = [p for p in parts if "functionCall" in p]
    if calls and not any(p.get("thoughtSignature") for p in calls):
        calls[0]["thoughtSignature"] = placeholder
