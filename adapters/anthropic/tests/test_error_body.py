"""Errors in Anthropic's shape, statuses the SDK maps to the right class, upstream error bodies."""

from __future__ import annotations

import anthropic
import httpx2
import orjson
import pytest

from gateway_core.errors import (
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
from gateway_anthropic.error_body import error_event, error_status_and_body, stream_error, upstream_error_message

CASES = [
    (InvalidRequestError("bad"), 400, "invalid_request_error", anthropic.BadRequestError),
    (InvalidRequestError("no such model", code="model_not_found"), 404, "not_found_error", anthropic.NotFoundError),
    (AuthenticationError("who?"), 401, "authentication_error", anthropic.AuthenticationError),
    (PermissionDeniedError("no"), 403, "permission_error", anthropic.PermissionDeniedError),
    (NotFoundError("gone"), 404, "not_found_error", anthropic.NotFoundError),
    (RequestTooLargeError("big"), 413, "request_too_large", anthropic.APIStatusError),
    (RateLimitError("slow down"), 429, "rate_limit_error", anthropic.RateLimitError),
    (InsufficientQuotaError("the key's quota is used up"), 400, "invalid_request_error", anthropic.BadRequestError),
    (UpstreamError("boom"), 502, "api_error", anthropic.InternalServerError),
    (UpstreamUnavailableError("busy"), 503, "overloaded_error", anthropic.InternalServerError),
    (UpstreamTimeoutError("slow"), 504, "timeout_error", anthropic.InternalServerError),
    (InternalError("oops"), 500, "api_error", anthropic.InternalServerError),
    (GatewayError("Method GET is not allowed here", status=405), 405, "invalid_request_error", anthropic.APIStatusError),
]


@pytest.mark.parametrize(("error", "status", "kind", "sdk_class"), CASES)
def test_error_shapes_and_the_sdk_class_they_raise(error, status, kind, sdk_class) -> None:
    got_status, body = error_status_and_body(error, "req_123")
    assert (got_status, body["type"], body["error"]["type"], body["request_id"]) == (status, "error", kind, "req_123")
    response = httpx2.Response(got_status, content=orjson.dumps(body), request=httpx2.Request("POST", "http://gw/v1/messages"))
    client = anthropic.Anthropic(api_key="x", base_url="http://gw")
    raised = client._make_status_error_from_response(response)
    assert isinstance(raised, sdk_class)
    assert (status >= 500) == ("req_123" in body["error"]["message"])


def test_insufficient_quota_says_the_credit_balance_is_too_low() -> None:
    _, body = error_status_and_body(InsufficientQuotaError("the user's balance cannot cover this request"), "req_1")
    assert body["error"]["message"] == "Your credit balance is too low to access this model: the user's balance cannot cover this request"


def test_error_event_frame() -> None:
    frame = error_event(UpstreamUnavailableError("busy"), "req_9")
    assert frame.startswith(b"event: error\ndata: ") and frame.endswith(b"\n\n")
    payload = orjson.loads(frame.split(b"data: ", 1)[1])
    assert payload["error"]["type"] == "overloaded_error" and payload["request_id"] == "req_9"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("overloaded_error", UpstreamUnavailableError),
        ("rate_limit_error", RateLimitError),
        ("timeout_error", UpstreamTimeoutError),
        ("invalid_request_error", InvalidRequestError),
        ("api_error", UpstreamError),
        (None, UpstreamError),
    ],
)
def test_stream_errors(kind, expected) -> None:
    payload = {"type": "error", "error": {"type": kind, "message": "details"}}
    error = stream_error(payload, b"event: error\n...")
    assert type(error) is expected and not error.retryable
    assert error.upstream_status == 200 and error.upstream_body.startswith("event: error")


def test_upstream_error_messages(examples) -> None:
    assert upstream_error_message(400, examples.raw("error_invalid_request.json")) == "prompt is too long: 210000 tokens > 200000 maximum"
    assert upstream_error_message(529, examples.raw("error_overloaded.json")) == "Overloaded"
    assert upstream_error_message(502, b"<html>\n<body>Bad   Gateway</body></html>") == "<html> <body>Bad Gateway</body></html>"
    assert upstream_error_message(500, b"") == "the upstream answered HTTP 500 without a message"
    assert upstream_error_message(400, b'{"error": "plain"}') == "plain"
    assert len(upstream_error_message(400, orjson.dumps({"error": {"message": "x" * 5000}}))) <= 1001
