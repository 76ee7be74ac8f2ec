"""OpenAI error bodies, and messages read from upstream error bodies."""

from __future__ import annotations

import httpx2 as httpx
import openai
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
from gateway_openai.error_body import error_to_wire, upstream_error_message

REQUEST_ID = "req_0123456789abcdef"


@pytest.mark.parametrize(
    ("error", "kind", "code"),
    [
        (InvalidRequestError("bad"), "invalid_request_error", None),
        (RequestTooLargeError("too big"), "invalid_request_error", "request_too_large"),
        (AuthenticationError("Incorrect API key provided."), "invalid_request_error", "invalid_api_key"),
        (PermissionDeniedError("This key may not use gpt-4o."), "invalid_request_error", None),
        (NotFoundError("The model 'x' does not exist", code="model_not_found"), "invalid_request_error", "model_not_found"),
        (NotFoundError("Invalid URL (POST /v1/nope)"), "invalid_request_error", None),
        (RateLimitError("Rate limit reached"), "rate_limit_error", "rate_limit_exceeded"),
        (InsufficientQuotaError("You exceeded your current quota."), "insufficient_quota", "insufficient_quota"),
        (UpstreamError("the upstream failed"), "server_error", "upstream_error"),
        (UpstreamUnavailableError("overloaded"), "server_error", "service_unavailable"),
        (UpstreamTimeoutError("timed out"), "server_error", "timeout"),
        (InternalError("boom"), "server_error", None),
        (UpstreamError("the upstream rejected it", status=400), "invalid_request_error", None),
    ],
)
def test_error_shapes(error: GatewayError, kind: str, code: str | None) -> None:
    body = error_to_wire(error, REQUEST_ID)
    assert set(body) == {"error"}
    assert body["error"]["type"] == kind and body["error"]["code"] == code
    assert body["error"]["param"] is None
    assert body["error"]["message"].startswith(error.message)
    assert (REQUEST_ID in body["error"]["message"]) == (error.status >= 500)


def test_code_and_param_override() -> None:
    error = InvalidRequestError("Unsupported parameter", code="unsupported_parameter", param="max_tokens")
    assert error_to_wire(error, REQUEST_ID)["error"] == {
        "message": "Unsupported parameter",
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    }


def test_request_id_not_repeated() -> None:
    error = InternalError(f"failed (request id: {REQUEST_ID})")
    assert error_to_wire(error, REQUEST_ID)["error"]["message"] == f"failed (request id: {REQUEST_ID})"
    assert error_to_wire(InternalError("boom"), REQUEST_ID)["error"]["message"] == f"boom (request id: {REQUEST_ID})"


def test_unknown_kind_follows_status() -> None:
    class Teapot(GatewayError):
        status = 418
        kind = "teapot"

    assert error_to_wire(Teapot("short and stout"), REQUEST_ID)["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("error", "sdk_class"),
    [
        (InvalidRequestError("bad"), openai.BadRequestError),
        (AuthenticationError("no key"), openai.AuthenticationError),
        (PermissionDeniedError("no"), openai.PermissionDeniedError),
        (NotFoundError("no model", code="model_not_found"), openai.NotFoundError),
        (RateLimitError("slow down"), openai.RateLimitError),
        (InsufficientQuotaError("no money"), openai.RateLimitError),
        (UpstreamError("failed"), openai.InternalServerError),
    ],
)
def test_sdk_reads_our_errors(error: GatewayError, sdk_class: type[Exception]) -> None:
    """The SDK builds its exception from our body: class by status, message, code and type from the body."""
    body = error_to_wire(error, REQUEST_ID)
    request = httpx.Request("POST", "http://gateway/v1/chat/completions")
    response = httpx.Response(error.status, json=body, request=request)
    client = openai.OpenAI(api_key="sk-test", base_url="http://gateway/v1")
    exc = client._make_status_error_from_response(response)
    assert isinstance(exc, sdk_class)
    assert exc.code == body["error"]["code"] and exc.type == body["error"]["type"]
    assert error.message in exc.message


def test_upstream_messages(examples) -> None:
    assert upstream_error_message(401, examples.raw("error_invalid_api_key.json")).startswith("Incorrect API key provided")
    assert upstream_error_message(400, examples.raw("error_context_length.json")).startswith(
        "This model's maximum context length is 128000 tokens."
    )
    assert upstream_error_message(502, examples.raw("error_bad_gateway.html")) == "502 Bad Gateway 502 Bad Gateway cloudflare"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"error": "model overloaded"}', "model overloaded"),
        (b'{"message": "Invalid token", "type": "BadRequestError", "object": "error"}', "Invalid token"),
        (b'{"detail": "Not Found"}', "Not Found"),
        (b'[{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}]', "API key not valid."),
        (b"upstream connect error or disconnect/reset before headers", "upstream connect error or disconnect/reset before headers"),
        (b"", "the upstream answered HTTP 503 (Service Unavailable) without a message"),
        (b'{"error": {"message": "", "code": 42}}', '{"error": {"message": "", "code": 42}}'),  # said as sent
        (b"\xff\xfe not utf-8 \x00", "\ufffd\ufffd not utf-8 \x00"),
    ],
)
def test_upstream_message_shapes(body: bytes, message: str) -> None:
    assert upstream_error_message(503, body) == message


def test_upstream_message_is_bounded_and_never_raises() -> None:
    long_text = upstream_error_message(500, b"x" * 10_000)
    assert len(long_text) <= 301 and long_text.endswith("…")
    html = b"<html><head><style>body{color:red}</style><script>var a=1;</script></head><body>" + b"<p>oops</p>" * 500
    assert upstream_error_message(500, html).startswith("oops oops")
    assert len(upstream_error_message(500, html)) <= 301
    assert upstream_error_message(599, None).startswith("the upstream answered HTTP 599")  # type: ignore[arg-type]
