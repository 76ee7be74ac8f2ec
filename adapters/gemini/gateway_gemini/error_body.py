"""Error bodies in Google's shape, and reading the errors a Gemini upstream sends.

Google answers ``{"error": {"code", "message", "status", "details": [...]}}``; the
``google-genai`` SDKs raise ``ClientError`` / ``ServerError`` by HTTP status and
expose ``code``, ``status`` and ``message``. The gateway's errors map so:

=====================  ======  =====================
kind                   code    status
=====================  ======  =====================
invalid_request        400     INVALID_ARGUMENT
request_too_large      413     INVALID_ARGUMENT
authentication         401     UNAUTHENTICATED
permission             403     PERMISSION_DENIED
not_found              404     NOT_FOUND
rate_limit             429     RESOURCE_EXHAUSTED
insufficient_quota     429     RESOURCE_EXHAUSTED
upstream               502     INTERNAL
unavailable            503     UNAVAILABLE
timeout                504     DEADLINE_EXCEEDED
internal               500     INTERNAL
=====================  ======  =====================

(the code is the error's HTTP status; an unlisted kind takes its status from the
code). ``details`` holds a ``google.rpc.ErrorInfo`` with the gateway's error code
as ``reason`` (``MODEL_NOT_ALLOWED`` …) when there is one, and a
``google.rpc.RetryInfo`` with ``retryDelay`` when the client should wait. A message
of a 5xx ends with the request id.

A Gemini upstream says a wrong channel key with ``400 INVALID_ARGUMENT`` and the
reason ``API_KEY_INVALID``, and an unusable project with ``FAILED_PRECONDITION``:
:func:`channel_fault` tells those apart from requests the client must fix, so the
channel type reports them as the channel's failure (502, another channel may serve).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import orjson

from gateway_core.errors import GatewayError

from .wire import JSON, as_dict, as_list

TYPE_PREFIX = "type.googleapis.com/google.rpc."
_STATUS_BY_KIND = {
    "invalid_request": "INVALID_ARGUMENT",
    "request_too_large": "INVALID_ARGUMENT",
    "authentication": "UNAUTHENTICATED",
    "permission": "PERMISSION_DENIED",
    "not_found": "NOT_FOUND",
    "rate_limit": "RESOURCE_EXHAUSTED",
    "insufficient_quota": "RESOURCE_EXHAUSTED",
    "upstream": "INTERNAL",
    "unavailable": "UNAVAILABLE",
    "timeout": "DEADLINE_EXCEEDED",
    "internal": "INTERNAL",
}
_STATUS_BY_CODE = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    405: "UNIMPLEMENTED", 409: "ABORTED", 413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 502: "INTERNAL", 503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}  # fmt: skip
_CHANNEL_REASONS = frozenset(("API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED", "SERVICE_DISABLED"))
MESSAGE_LIMIT = 1000


def error_to_wire(error: GatewayError, request_id: str) -> JSON:
    """Google's error body for a gateway error."""
    code = error.status
    status = _STATUS_BY_KIND.get(error.kind) if error.kind in _STATUS_BY_KIND and type(error).status == code else None
    status = status or _STATUS_BY_CODE.get(code) or ("INTERNAL" if code >= 500 else "INVALID_ARGUMENT")
    message = error.message or (HTTPStatus(code).phrase if code in _KNOWN_CODES else "error")
    if code >= 500 and request_id and request_id not in message:
        message = f"{message} (request id: {request_id})"
    details: list[JSON] = []
    if error.code:
        info: JSON = {"@type": TYPE_PREFIX + "ErrorInfo", "reason": error.code.upper(), "domain": "relaygate"}
        if error.param:
            info["metadata"] = {"param": error.param}
        details.append(info)
    if error.retry_after is not None:
        details.append({"@type": TYPE_PREFIX + "RetryInfo", "retryDelay": format_duration(error.retry_after)})
    body: JSON = {"code": code, "message": message, "status": status}
    if details:
        body["details"] = details
    return {"error": body}


def format_duration(seconds: float) -> str:
    """A ``google.protobuf.Duration`` in JSON: ``"12s"``, ``"0.5s"``."""
    seconds = max(0.0, seconds)
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"


def parse_duration(value: Any) -> float | None:
    if not isinstance(value, str) or not value.endswith("s"):
        return None
    try:
        return max(0.0, float(value[:-1]))
    except ValueError:
        return None


def error_object(body: bytes) -> JSON:
    """The ``error`` object of an upstream error body (``{}`` when there is none);
    Google's streamed JSON arrays wrap it in a list."""
    try:
        data = orjson.loads(body)
    except (orjson.JSONDecodeError, TypeError):
        return {}
    if isinstance(data, list) and data:
        data = data[0]
    return as_dict(as_dict(data).get("error"))


def upstream_error_message(status: int, body: bytes) -> str:
    """The human message of a Gemini upstream's error body; never raises."""
    try:
        error = error_object(body)
        message = error.get("message")
        if isinstance(message, str) and message.strip():
            text = message.strip()
        else:
            text = " ".join(body.decode("utf-8", "replace").split())[:300]
        text = text or f"the upstream answered HTTP {status} without a message"
        return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT].rstrip() + "…"
    except Exception:  # a message is always better than a second error
        return f"the upstream answered HTTP {status}"


def reasons(error: JSON) -> set[str]:
    """The ``ErrorInfo`` reasons of an upstream ``error`` object."""
    found = set()
    for detail in as_list(error.get("details")):
        reason = as_dict(detail).get("reason")
        if isinstance(reason, str):
            found.add(reason)
    return found


def channel_fault(status: int, body: bytes) -> bool:
    """Whether a 4xx of a Gemini upstream is the channel's fault (its key or project),
    not the client's request."""
    if status not in (400, 401, 403):
        return False
    error = error_object(body)
    if reasons(error) & _CHANNEL_REASONS or error.get("status") in ("FAILED_PRECONDITION", "UNAUTHENTICATED"):
        return True
    message = error.get("message")
    return isinstance(message, str) and "api key" in message.lower()


def retry_delay(body: bytes) -> float | None:
    """The ``RetryInfo.retryDelay`` of an upstream's 429, in seconds."""
    for detail in as_list(error_object(body).get("details")):
        detail = as_dict(detail)
        if str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            return parse_duration(detail.get("retryDelay"))
    return None


_KNOWN_CODES = frozenset(s.value for s in HTTPStatus)
