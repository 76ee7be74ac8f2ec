"""Moderations (``POST /v1/moderations``): the call, and its usage (pure, no I/O).

Only ``openai`` channels serve them, on the fast path (the body as it came, the
model mapped). ``model`` may be left out (or null), as OpenAI allows: the call is then for
:data:`DEFAULT_MODEL`, the name the operator prices and maps like any other.

Billing: OpenAI reports no usage for moderations; the input is counted at 4
characters a token over its texts (images count nothing) and the usage row is
marked estimated. Moderations have no output; the price per request applies.
"""

from __future__ import annotations

from typing import Any

from gateway_core import Call, InvalidRequestError, RouteSpec
from gateway_core.model import MediaUsage, Usage
from gateway_core.tally import estimate_tokens

from .calls import PROTOCOL
from .chat_response import usage_from_wire

MODERATIONS_WIRE = "openai.moderations"
DEFAULT_MODEL = "omni-moderation-latest"
INPUT_TYPES = ("text", "image_url")
ESTIMATED = MediaUsage(estimated=True)  # marks a usage counted here, not reported (no units of its own)
JSON = dict[str, Any]


def moderation_call(route: RouteSpec, data: JSON) -> Call:
    """A moderations body as a call; 400 when its model or input is not usable."""
    model = data.get("model")
    model = DEFAULT_MODEL if model is None else model
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("'model' must be a non-empty string (or left out for omni-moderation-latest).", param="model")
    if not _moderatable(data.get("input")):
        raise InvalidRequestError(
            "The request needs an 'input': a string, an array of strings, or an array of "
            "{'type': 'text', 'text': …} and {'type': 'image_url', 'image_url': {'url': …}} objects.",
            param="input",
        )
    return Call(PROTOCOL, route.endpoint, MODERATIONS_WIRE, model, False, data)


def _moderatable(items: Any) -> bool:
    if isinstance(items, str):
        return True
    if not isinstance(items, list) or not items:
        return False
    return all(isinstance(i, str) for i in items) or all(isinstance(i, dict) and i.get("type") in INPUT_TYPES for i in items)


def input_chars(items: Any) -> int:
    """The characters of text a moderations ``input`` holds."""
    if isinstance(items, str):
        return len(items)
    total = 0
    for item in items if isinstance(items, list) else ():
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            total += len(item["text"])
    return total


def moderation_usage(answer: Any, body: JSON) -> tuple[Usage, MediaUsage | None]:
    """The usage an answer reports, else the input's estimate (marked estimated)."""
    reported = usage_from_wire(answer.get("usage")) if isinstance(answer, dict) else None
    if reported is not None:
        return reported, None
    return Usage(input_tokens=estimate_tokens(input_chars(body.get("input")))), ESTIMATED
