"""What can go wrong, said once, rendered by each client protocol in its own shape.

The core raises these; a client protocol's ``render_error`` turns one into a
status, headers and a body of its wire format. ``kind`` is the stable name a
protocol maps to its own error types.
"""

from __future__ import annotations


class GatewayError(Exception):
    """Base of every error the gateway reports to a client.

    ``upstream_status`` and ``upstream_body`` (a bounded excerpt) record what an
    upstream said when the error came from one; they go to the usage log, not to
    the client. ``retryable`` says another channel (or key) may succeed;
    ``key_refused`` that the upstream refused the channel's key itself.
    """

    status: int = 500
    kind: str = "internal"
    upstream_status: int | None = None
    upstream_body: str | None = None
    # the upstream refused the channel's own key (401/403 …): the relay disables the key
    key_refused: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        retry_after: float | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.param = param
        self.retry_after = retry_after
        self.headers = headers or {}
        self.retryable = retryable  # another channel may succeed where this failed
        if status is not None:
            self.status = status

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status})"


class InvalidRequestError(GatewayError):
    status = 400
    kind = "invalid_request"


class AuthenticationError(GatewayError):
    status = 401
    kind = "authentication"


class PermissionDeniedError(GatewayError):
    status = 403
    kind = "permission"


class NotFoundError(GatewayError):
    status = 404
    kind = "not_found"


class RequestTooLargeError(GatewayError):
    status = 413
    kind = "request_too_large"


class RateLimitError(GatewayError):
    status = 429
    kind = "rate_limit"


class InsufficientQuotaError(GatewayError):
    status = 429
    kind = "insufficient_quota"


class InternalError(GatewayError):
    status = 500
    kind = "internal"


class UpstreamError(GatewayError):
    """The upstream failed or answered with an error."""

    status = 502
    kind = "upstream"


class UpstreamUnavailableError(GatewayError):
    status = 503
    kind = "unavailable"


class UpstreamTimeoutError(GatewayError):
    status = 504
    kind = "timeout"


def should_not_retry(error: GatewayError) -> bool:
    """A refusal that waiting does not cure: a balance or quota spent (a budget
    that resets soon carries its ``retry_after`` instead). Protocols whose SDKs
    read ``x-should-retry`` send it ``false`` for these, so a client asks once."""
    return error.kind == InsufficientQuotaError.kind and error.retry_after is None


UPSTREAM_EXCERPT_LIMIT = 2000


def excerpt(body: bytes | str, limit: int = UPSTREAM_EXCERPT_LIMIT) -> str:
    """A bounded, printable excerpt of an upstream body for logs."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    return text if len(text) <= limit else text[:limit] + "…"
