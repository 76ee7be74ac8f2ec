"""An operation of the management API: its declaration (method, path, scope,
schemas, statuses) and the endpoint that runs it.

The endpoint does for every operation, in order: the request id, the caller
(:mod:`.auth`, 401), the scope (403), the path's ids, the query and the JSON
body checked against their schemas (400 naming the field, 413 past
:data:`MAX_BODY`), then the operation's handler, which calls the admin layer;
the admin layer's errors become 400, 404, 409 or 503 in the one error shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import orjson
import structlog
from starlette.requests import Request
from starlette.responses import Response

from gateway_core.store.access_records import AuditEntry
from gateway_core.admin import Admin, AdminError, audit
from gateway_core.runtime.app_state import services_from_scope
from gateway_core.request.relay import REQUEST_ID
from .auth import Principal, authenticate, authorize
from .errors import ApiError, error_response, from_admin
from .schema import MAX_PATH_ID, PATH_TEXT, Schema, validate

MAX_BODY = 1 << 20
log = structlog.get_logger("relaygate.api")


@attrs.frozen
class Param:
    name: str
    schema: Schema
    description: str = ""


@attrs.frozen
class Operation:
    method: str
    path: str  # under /api/v1, with {name} parameters (integers unless named in text_params)
    summary: str
    tag: str
    scope: str  # read, write or admin
    handler: Callable[[ApiCall], Awaitable[Any]]
    response: Schema | None  # None: 204 No Content
    body: Schema | None = None
    query: tuple[Param, ...] = ()
    status: int = 200
    errors: tuple[int, ...] = (400, 401, 403)
    text_params: tuple[str, ...] = ()
    media_type: str = "application/json"
    headers: tuple[Param, ...] = ()

    @property
    def operation_id(self) -> str:
        return self.handler.__name__


@attrs.define
class ApiCall:
    """One request to an operation, as its handler sees it."""

    admin: Admin
    principal: Principal
    path: dict[str, Any]
    query: dict[str, Any]
    body: Any
    headers: dict[str, str]
    request_id: str
    services: Any = None  # the running gateway's (its upstream session, configuration)
    address: str | None = None  # the client's address (as the relay sees it: trusted proxies applied)

    @property
    def user_id(self) -> int:
        return self.principal.user_id

    async def audit(self, action: str, target: str, before: Any = None, after: Any = None) -> AuditEntry:
        """Record this write in the audit log (records as their JSON values)."""
        actor = self.principal.actor(self.request_id)
        return await audit.record(self.admin, actor, action, target, before, after)


class MethodDispatch:
    """The ASGI endpoint of one path: the operation of the request's method."""

    def __init__(self, operations: Sequence[Operation]) -> None:
        self.by_method = {operation.method: operation for operation in operations}

    async def __call__(self, scope, receive, send) -> None:
        request = Request(scope, receive)
        request_id = str(scope.get(REQUEST_ID, ""))
        operation = self.by_method.get(request.method)
        if operation is None:
            allowed = ", ".join(sorted(self.by_method))
            error = ApiError(405, f"Method {request.method} is not allowed here; use {allowed}.")
            response = error_response(error, request_id)
            response.headers["allow"] = allowed
        else:
            response = await run(operation, request, request_id)
        await response(scope, receive, send)


async def run(operation: Operation, request: Request, request_id: str) -> Response:
    try:
        services = services_from_scope(request.scope)
        admin = Admin.of(services)
        principal = await authenticate(admin, request.scope, services.registry.session_readers)
        authorize(principal, operation.scope, operation.method)
        call = ApiCall(
            admin, principal, _path_params(operation, request), _query(operation, request), await _body(operation, request),
            {param.name: request.headers[param.name] for param in operation.headers if param.name in request.headers}, request_id,
            services, services.client_address(request.scope),
        )  # fmt: skip
        for param in operation.headers:
            if param.name in call.headers:
                validate(call.headers[param.name], param.schema, param.name)
        result = await operation.handler(call)
    except ApiError as exc:
        return error_response(exc, request_id)
    except AdminError as exc:
        return error_response(from_admin(exc), request_id)
    if isinstance(result, Response):
        return result
    if operation.response is None:
        return Response(status_code=204)
    return Response(orjson.dumps(result), status_code=operation.status, media_type="application/json")


def _path_params(operation: Operation, request: Request) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, text in request.path_params.items():
        if name in operation.text_params:
            values[name] = validate(text, PATH_TEXT, name)
            continue
        if not text.isdigit() or len(text) > 18 or not 1 <= int(text) <= MAX_PATH_ID:
            raise ApiError(404, f"No such {name.removesuffix('_id')}: {text!r} is not an id.")
        values[name] = int(text)
    return values


def _query(operation: Operation, request: Request) -> dict[str, Any]:
    known = {param.name: param for param in operation.query}
    values: dict[str, Any] = {}
    for name, text in request.query_params.multi_items():
        param = known.get(name)
        if param is None:
            raise ApiError(400, f"{name} is not a query parameter of this operation", field=name)
        values[name] = validate(_coerce(text, param.schema, name), param.schema, name)
    return values


def _coerce(text: str, schema: Schema, name: str) -> Any:
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or ())
    try:
        if "integer" in kinds:
            return int(text)
        if "number" in kinds:
            number = float(text)
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError
            return number
    except ValueError:
        raise ApiError(400, f"{name} must be a number", field=name) from None
    if "boolean" in kinds:
        if text not in ("true", "false"):
            raise ApiError(400, f"{name} must be true or false", field=name)
        return text == "true"
    return text


async def _body(operation: Operation, request: Request) -> Any:
    if operation.body is None:
        return None
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise ApiError(413, f"The body is larger than {MAX_BODY} bytes.")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, f"The body is larger than {MAX_BODY} bytes.")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw:
        raw = b"{}"
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ApiError(400, "The body is not valid JSON.", field="body") from None
    return validate(value, operation.body)
