"""Bedrock's errors as gateway errors (pure).

An error answer is a status with ``x-amzn-ErrorType`` naming the exception and a
body ``{"message": "…"}``; the core maps the status
(:func:`gateway_core.upstream.error_for_status`): 400 ``ValidationException`` and
the like are the client's 400; 401/403 (``UnrecognizedClientException``,
``InvalidSignatureException``, ``AccessDeniedException``) refuse the channel's key,
a retryable 502 that disables that key; 404 (an unknown model) and 424 (the model
failed) are retryable 502s; 408 a timeout; 429 (``ThrottlingException``,
``ModelNotReadyException``) the client's 429; 503 unavailable.

A throttled request is advised to retry after Bedrock's ``Retry-After`` when it
sends one, else after :data:`THROTTLE_RETRY_SECONDS`. Inside a stream a failure comes as an exception
message (``throttlingException``, ``validationException``,
``modelStreamErrorException``, ``internalServerException``,
``serviceUnavailableException``) and is mapped the same way by its name.
"""

from __future__ import annotations

import orjson

from gateway_core import (
    GatewayError,
    InvalidRequestError,
    RateLimitError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
)
from gateway_core.errors import excerpt

from .eventstream import HeaderValue

THROTTLE_RETRY_SECONDS = 1.0


def upstream_error_message(status: int, body: bytes) -> str:
    """The ``message`` of a Bedrock error body (else an excerpt of the body)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        message = data.get("message") or data.get("Message")
        if isinstance(message, str) and message:
            return message
    return excerpt(body) or f"status {status}"


def with_advice(error: GatewayError) -> GatewayError:
    """An HTTP error with a throttle's retry advice when Bedrock gave none."""
    if error.upstream_status == 429 and error.retry_after is None:
        error.retry_after = THROTTLE_RETRY_SECONDS
    return error


def stream_failure(headers: dict[str, HeaderValue], payload: bytes) -> GatewayError | None:
    """The gateway error a stream's message carries (``:message-type`` ``exception``
    or ``error``), or ``None`` for an event."""
    if headers.get(":message-type", "event") == "event":
        return None
    name = headers.get(":exception-type") or headers.get(":error-code") or "unknown"
    return error_for_exception(str(name), _message(payload, headers), payload)


def _message(payload: bytes, headers: dict[str, HeaderValue]) -> str:
    try:
        data = orjson.loads(payload) if payload else {}
    except orjson.JSONDecodeError:
        data = {}
    message = data.get("message") or data.get("Message") if isinstance(data, dict) else None
    return str(message or headers.get(":error-message") or "no message")


def error_for_exception(name: str, message: str, payload: bytes) -> GatewayError:
    """The gateway error for an exception message of a stream."""
    kind = name[:1].lower() + name[1:]
    error: GatewayError
    if kind in ("throttlingException", "modelNotReadyException", "serviceQuotaExceededException"):
        error = RateLimitError(f"the upstream is rate limiting: {message}", retry_after=THROTTLE_RETRY_SECONDS, retryable=True)
    elif kind == "validationException":
        error = InvalidRequestError(f"the upstream rejected the request: {message}", status=400)
    elif kind == "serviceUnavailableException":
        error = UpstreamUnavailableError(f"the upstream is unavailable: {message}", retryable=True)
    elif kind == "modelTimeoutException":
        error = UpstreamTimeoutError(f"the model timed out: {message}", retryable=True)
    else:
        error = UpstreamError(f"the upstream failed mid-stream ({name}): {message}", retryable=True)
    error.upstream_body = excerpt(payload)
    return error
