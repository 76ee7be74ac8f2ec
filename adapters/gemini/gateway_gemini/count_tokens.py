"""``countTokens`` bodies ⇄ the core, and a local estimate (pure, no I/O).

A ``countTokens`` body is either ``{"contents": [...]}`` or
``{"generateContentRequest": {"model": "models/…", "contents": …, "systemInstruction":
…, "tools": …}}``; the answer is ``{"totalTokens": N}`` (plus
``cachedContentTokenCount`` and ``promptTokensDetails`` from Google).

Across protocols a count travels as a core :class:`ChatResponse` with no parts and
``usage.input_tokens`` = the count (see :func:`count_response`): the channel returns
it with a zero ``JsonReply.usage`` so that counting is never billed.
"""

from __future__ import annotations

from typing import Any

from gateway_core.model import ChatRequest, ChatResponse, ImagePart, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, Usage

from .request import request_from_wire, request_to_wire
from .wire import JSON, as_dict, as_int, fail, field

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 258  # what Gemini counts for an image up to 384 px a side


def count_request_from_wire(body: Any, model: str) -> ChatRequest:
    """The core request whose input a ``countTokens`` body counts."""
    if not isinstance(body, dict):
        fail("The request body must be a JSON object.")
    inner = field(body, "generateContentRequest")
    if isinstance(inner, dict):
        return request_from_wire(inner, model)
    if field(body, "contents") is None:
        fail("'contents' or 'generateContentRequest' is required.", "contents")
    return request_from_wire(body, model)


def count_body_to_wire(request: ChatRequest, upstream_model: str) -> JSON:
    """A ``countTokens`` body counting everything a core request sends."""
    inner = request_to_wire(request)
    inner.pop("generationConfig", None)
    return {"generateContentRequest": {"model": f"models/{upstream_model}", **inner}}


def passthrough_count_body(body: JSON, upstream_model: str) -> JSON:
    """A client's ``countTokens`` body with its inner request's model mapped."""
    for key in ("generateContentRequest", "generate_content_request"):
        inner = body.get(key)
        if isinstance(inner, dict):
            return {**body, key: {**inner, "model": f"models/{upstream_model}"}}
    return body


def count_from_wire(answer: JSON) -> int:
    return as_int(field(answer, "totalTokens"))


def count_to_wire(count: int) -> JSON:
    return {"totalTokens": count}


def count_response(count: int, model: str) -> ChatResponse:
    """A count as the core carries it between protocols."""
    return ChatResponse(id="", model=model, parts=(), stop_reason=None, usage=Usage(input_tokens=count))


def estimate_input_tokens(request: ChatRequest) -> int:
    """A local estimate of a request's input tokens: 4 characters a token, 258 an image."""
    chars = 0
    images = 0
    parts = list(request.system)
    for message in request.messages:
        parts.extend(message.parts)
    while parts:
        part = parts.pop()
        if isinstance(part, (TextPart, ReasoningPart)):
            chars += len(part.text)
        elif isinstance(part, ToolCallPart):
            chars += len(part.name) + len(part.arguments)
        elif isinstance(part, ToolResultPart):
            parts.extend(part.content)
        elif isinstance(part, ImagePart):
            images += 1
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description or "") + len(str(as_dict(tool.parameters)))
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + images * IMAGE_TOKENS
