"""Errors in Google's shape, and reading a Gemini upstream's errors."""

from __future__ import annotations

import orjson
import pytest

from gateway_core import (
    AuthenticationError,
    GatewayError,
    InsufficientQuotaError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestTooLargeError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
)
from gateway_core.upstream import error_for_status
from gateway_gemini.channel import _channel_error
from gateway_gemini.error_body import channel_fault, error_to_wire, format_duration, retry_delay, upstream_error_message


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (InvalidRequestError("bad"), 400, "INVALID_ARGUMENT"),
        (RequestTooLargeError("big"), 413, "INVALID_ARGUMENT"),
        (AuthenticationError("who"), 401, "UNAUTHENTICATED"),
        (PermissionDeniedError("no"), 403, "PERMISSION_DENIED"),
        (NotFoundError("gone"), 404, "NOT_FOUND"),
        (RateLimitError("slow"), 429, "RESOURCE_EXHAUSTED"),
        (InsufficientQuotaError("broke"), 429, "RESOURCE_EXHAUSTED"),
        (UpstreamError("up"), 502, "INTERNAL"),
        (UpstreamUnavailableError("busy"), 503, "UNAVAILABLE"),
        (UpstreamTimeoutError("late"), 504, "DEADLINE_EXCEEDED"),
        (InternalError("oops"), 500, "INTERNAL"),
        (GatewayError("Method POST is not allowed here; use GET.", status=405), 405, "UNIMPLEMENTED"),
    ],
)
def test_kinds_map_to_google_statuses(error, code, status):
    body = error_to_wire(error, "req_1")["error"]
    assert (body["code"], body["status"]) == (code, status)
    assert ("req_1" in body["message"]) == (code >= 500)


def test_details_carry_the_reason_and_the_retry_delay():
    error = PermissionDeniedError("not for this key", code="model_not_allowed", param="model")
    assert error_to_wire(error, "r")["error"]["details"] == [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "MODEL_NOT_ALLOWED", "domain": "relaygate", "metadata": {"param": "model"}}
    ]
    limited = error_to_wire(RateLimitError("slow down", retry_after=12.0), "r")["error"]
    assert limited["details"] == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}]
    assert "details" not in error_to_wire(InvalidRequestError("x"), "r")["error"]
    assert (format_duration(0.5), format_duration(1.25), format_duration(-1)) == ("0.5s", "1.25s", "0s")


def test_upstream_messages(examples):
    assert upstream_error_message(400, examples.raw("error_api_key_invalid.json")) == "API key not valid. Please pass a valid API key."
    assert upstream_error_message(502, b"<html><body>Bad   Gateway</body></html>") == "<html><body>Bad Gateway</body></html>"
    assert upstream_error_message(500, b"") == "the upstream answered HTTP 500 without a message"
    wrapped = orjson.dumps([orjson.loads(examples.raw("error_invalid_argument.json"))])
    assert "contents is not specified" in upstream_error_message(400, wrapped)


def test_a_bad_channel_key_is_the_channels_fault(examples):
    assert channel_fault(400, examples.raw("error_api_key_invalid.json"))
    assert not channel_fault(400, examples.raw("error_invalid_argument.json"))
    error = _channel_error(error_for_status(400, examples.raw("error_api_key_invalid.json"), upstream_error_message))
    assert isinstance(error, UpstreamError) and error.status == 502 and error.retryable and error.upstream_status == 400
    client_error = _channel_error(error_for_status(400, examples.raw("error_invalid_argument.json"), upstream_error_message))
    assert isinstance(client_error, InvalidRequestError) and not client_error.retryable


def test_a_429_takes_its_retry_delay_from_the_body(examples):
    assert retry_delay(examples.raw("error_rate_limit.json")) == 37.0
    error = _channel_error(error_for_status(429, examples.raw("error_rate_limit.json"), upstream_error_message))
    assert isinstance(error, RateLimitError) and error.retry_after == 37.0
