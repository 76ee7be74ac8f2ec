"""The management API's one error shape: ``{"error": {"code", "message",
"field", "request_id"}}``, and the admin layer's errors mapped onto it."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from gateway_core.admin.errors import AdminError, Conflict, Forbidden, Invalid, Locked, NotFound, StoreFailure

CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    429: "too_many_requests",
    500: "internal_error",
    503: "store_unavailable",
}

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "request_id"],
            "properties": {
                "code": {"type": "string", "description": "machine-readable: " + ", ".join(sorted(set(CODES.values())))},
                "message": {"type": "string", "description": "for people"},
                "field": {"type": ["string", "null"], "description": "the request field to blame, for invalid_request"},
                "request_id": {"type": "string", "description": "as in X-Request-Id and the logs"},
            },
        }
    },
}


class ApiError(Exception):
    def __init__(
        self, status: int, message: str, *, code: str | None = None, field: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or CODES.get(status, "error")
        self.field = field
        self.retry_after = retry_after  # seconds, sent as Retry-After


def from_admin(exc: AdminError) -> ApiError:
    if isinstance(exc, Locked):  # the key's owner loosening what the operator set: not theirs to change
        return ApiError(403, _sentence(exc.message), code="locked", field=exc.field)
    if isinstance(exc, Forbidden):  # a team role that does not allow it (docs/teams.md)
        return ApiError(403, _sentence(exc.message))
    if isinstance(exc, Invalid):
        return ApiError(400, _sentence(exc.message), field=exc.field)
    if isinstance(exc, NotFound):
        return ApiError(404, _sentence(exc.message))
    if isinstance(exc, Conflict):
        return ApiError(409, _sentence(exc.message))
    if isinstance(exc, StoreFailure):
        return ApiError(503, _sentence(exc.message))
    return ApiError(400, _sentence(exc.message))


def error_response(error: ApiError, request_id: str) -> Response:
    body = {"error": {"code": error.code, "message": error.message, "field": error.field, "request_id": request_id}}
    headers = {"www-authenticate": 'Bearer realm="relaygate"'} if error.status == 401 else {}
    if error.retry_after is not None:
        headers["retry-after"] = str(max(1, int(-(-error.retry_after // 1))))
    return Response(orjson.dumps(body), status_code=error.status, media_type="application/json", headers=headers)


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:]).rstrip(".") + "." if text else "Failed."
