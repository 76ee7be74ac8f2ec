"""Error bodies in Anthropic's shape, and reading the errors an Anthropic upstream sends.

Anthropic answers ``{"type": "error", "error": {"type", "message"}, "request_id"}``.
Its SDKs pick the exception class from the HTTP status (529 is ``OverloadedError``),
so the status matters most; ``error.type`` follows what Anthropic itself sends:

=====================  ======  =======================================================
core ``kind``          status  ``error.type``
=====================  ======  =======================================================
invalid_request        400     invalid_request_error
  (code model_not_found) 404   not_found_error (Anthropic's own answer to an unknown model)
authentication         401     authentication_error
permission             403     permission_error
not_found              404     not_found_error
request_too_large      413     request_too_large
rate_limit             429     rate_limit_error
insufficient_quota     400     invalid_request_error, "Your credit balance is too low …"
                               (the provider's own answer; a 429 would make Claude Code
                               retry for minutes instead of showing the message), with
                               ``x-should-retry: false`` when waiting cannot cure it
upstream               502     api_error
unavailable            503     overloaded_error
timeout                504     timeout_error
internal and others    500     api_error (invalid_request_error below 500)
=====================  ======  =======================================================

The status is the core error's own except for the two rows that say otherwise.
A message of a status >= 500 ends with ``(request id: …)`` so that a user can
quote it to the operator; the id is also the body's ``request_id``.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core.errors import (
    GatewayError,
    InvalidRequestError,
    RateLimitError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
    excerpt,
)

JSON = dict[str, Any]

TYPES: dict[str, str] = {
    "invalid_request": "invalid_request_error",
    "authentication": "authentication_error",
    "permission": "permission_error",
    "not_found": "not_found_error",
    "request_too_large": "request_too_large",
    "rate_limit": "rate_limit_error",
    "insufficient_quota": "invalid_request_error",
    "upstream": "api_error",
    "unavailable": "overloaded_error",
    "timeout": "timeout_error",
    "internal": "api_error",
}
CREDIT_TOO_LOW = "Your credit balance is too low to access this model"
BALANCE_TOO_LOW = "Your balance is too low: "  # the core's words, said once in Anthropic's
MESSAGE_LIMIT = 1000


def error_status_and_body(error: GatewayError, request_id: str) -> tuple[int, JSON]:
    """The HTTP status and the Anthropic error body for a gateway error."""
    status = error.status
    kind = TYPES.get(error.kind, "api_error")
    message = error.message or "error"
    if error.kind == "insufficient_quota":
        status = 400
        message = f"{CREDIT_TOO_LOW}: {message.removeprefix(BALANCE_TOO_LOW)}"
    elif error.kind == "invalid_request" and error.code == "model_not_found":
        status, kind = 404, "not_found_error"
    if status < 500 and kind in ("api_error", "overloaded_error", "timeout_error"):
        kind = "invalid_request_error"
    if status >= 500 and request_id and request_id not in message:
        message = f"{message} (request id: {request_id})"
    body: JSON = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id or None}
    return status, body


def error_event(error: GatewayError, request_id: str) -> bytes:
    """The ``event: error`` frame that ends a stream broken after it started."""
    _, body = error_status_and_body(error, request_id)
    return b"event: error\ndata: " + orjson.dumps(body) + b"\n\n"


def upstream_error_message(status: int, body: bytes) -> str:
    """The human message of an Anthropic upstream's error body; never raises.

    Reads ``{"error": {"message"}}`` (also ``{"error": "…"}`` and ``{"message"}``
    from compatible servers), else the body's text, bounded.
    """
    try:
        data = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        data = None
    found = _json_message(data)
    if found:
        return _bound(found)
    text = " ".join(body.decode("utf-8", "replace").split()) if body else ""
    return _bound(text, 300) if text else f"the upstream answered HTTP {status} without a message"


def stream_error(payload: Any, raw: bytes) -> GatewayError:
    """The gateway error for an ``event: error`` an upstream sent mid-stream.

    ``overloaded_error`` becomes the core's unavailable error (503, like a 529 before
    the stream), ``rate_limit_error`` a rate limit, a timeout a timeout, the rest an
    upstream error. None of them is retried: the client has seen part of the answer.
    """
    error = payload.get("error") if isinstance(payload, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    message = f"the upstream reported an error mid-stream: {_json_message(payload) or kind or 'unknown error'}"
    result: GatewayError
    if kind == "overloaded_error":
        result = UpstreamUnavailableError(message)
    elif kind == "rate_limit_error":
        result = RateLimitError(message)
    elif kind == "timeout_error":
        result = UpstreamTimeoutError(message)
    elif kind in ("invalid_request_error", "request_too_large"):
        result = InvalidRequestError(message, status=400)
    else:
        result = UpstreamError(message)
    result.upstream_status = 200
    result.upstream_body = excerpt(raw)
    return result


def _json_message(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        data = error
    elif isinstance(error, str) and error.strip():
        return error.strip()
    message = data.get("message")
    return message.strip() if isinstance(message, str) and message.strip() else None


def _bound(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "…"
