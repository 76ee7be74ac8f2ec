"""Error bodies in OpenAI's shape, and the message inside an upstream's error body.

OpenAI answers ``{"error": {"message", "type", "param", "code"}}``. Its SDKs pick the
exception class from the HTTP status alone, so ``type`` and ``code`` are for people
and scripts; they follow what OpenAI itself sends:

=====================  =====================  =======================
kind                   type                   code (default)
=====================  =====================  =======================
invalid_request        invalid_request_error  null
request_too_large      invalid_request_error  request_too_large
authentication         invalid_request_error  invalid_api_key
permission             invalid_request_error  null   (OpenAI's 401/403 "insufficient permissions")
not_found              invalid_request_error  null   (the core sets ``model_not_found``)
rate_limit             rate_limit_error       rate_limit_exceeded
insufficient_quota     insufficient_quota     insufficient_quota
upstream               server_error           upstream_error (invalid_request_error below 500)
unavailable            server_error           service_unavailable
timeout                server_error           timeout
internal and others    server_error           null   (invalid_request_error below 500)
=====================  =====================  =======================

``error.code`` and ``error.param`` win when set. A message of a status >= 500 ends
with ``(request id: …)`` so that a user can quote it to the operator.
"""

from __future__ import annotations

import html
import re
from http import HTTPStatus
from typing import Any

import orjson

from gateway_core.errors import GatewayError

JSON = dict[str, Any]

_SHAPES: dict[str, tuple[str, str | None]] = {
    "invalid_request": ("invalid_request_error", None),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "permission": ("invalid_request_error", None),
    "not_found": ("invalid_request_error", None),
    "rate_limit": ("rate_limit_error", "rate_limit_exceeded"),
    "insufficient_quota": ("insufficient_quota", "insufficient_quota"),
    "upstream": ("server_error", "upstream_error"),
    "unavailable": ("server_error", "service_unavailable"),
    "timeout": ("server_error", "timeout"),
    "internal": ("server_error", None),
}
TEXT_LIMIT = 300
MESSAGE_LIMIT = 1000
_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.S | re.I)
_SPACE = re.compile(r"\s+")


def error_to_wire(error: GatewayError, request_id: str) -> JSON:
    """The OpenAI error body for a gateway error."""
    kind, code = _SHAPES.get(error.kind, ("server_error", None))
    if error.status < 500 and kind == "server_error":
        kind, code = "invalid_request_error", None
    message = error.message or _phrase(error.status)
    if error.status >= 500 and request_id and request_id not in message:
        message = f"{message} (request id: {request_id})"
    return {
        "error": {
            "message": message,
            "type": kind,
            "param": error.param,
            "code": error.code if error.code is not None else code,
        }
    }


def upstream_error_message(status: int, body: bytes) -> str:
    """The human message of an upstream error body; never raises.

    Reads ``{"error": {"message"}}``, ``{"error": "…"}``, ``{"message"}``,
    ``{"detail"}`` and a list of those (Google's compatibility layer); falls back
    to the body's text (JSON as sent, HTML stripped of its tags), bounded to about
    300 characters.
    """
    try:
        return _message(status, body)
    except Exception:  # a message is always better than a second error
        return _fallback(status)


def _message(status: int, body: bytes) -> str:
    if not body:
        return _fallback(status)
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else str(body)
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        data = None
    found = _json_message(data)
    if found:
        return _bound(found, MESSAGE_LIMIT)
    if data is None and text.lstrip().startswith("<"):
        text = html.unescape(_TAG.sub(" ", text))
    text = _SPACE.sub(" ", text).strip()
    return _bound(text, TEXT_LIMIT) if text else _fallback(status)


def _json_message(data: Any) -> str | None:
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        data = error
    elif isinstance(error, str) and error.strip():
        return error.strip()
    for key in ("message", "detail", "error_description"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _bound(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _fallback(status: int) -> str:
    return f"the upstream answered HTTP {status} ({_phrase(status)}) without a message"


def _phrase(status: int) -> str:
    return HTTPStatus(status).phrase if status in _STATUSES else "error"


_STATUSES = frozenset(s.value for s in HTTPStatus)
