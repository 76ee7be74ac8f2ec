"""The OpenAPI 3.1 document of the management API, built from the operations'
declarations (:mod:`.operation`); :mod:`.docs_page` renders it for people."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .errors import CODES, ERROR_SCHEMA
from .operation import Operation
from .schema import PATH_ID, PATH_TEXT

PREFIX = "/api/v1"
_PARAM = re.compile(r"\{(\w+)\}")
REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Invalid input (the field is named)", 401: "No valid token or session",
           403: "Not allowed (scope, role or CSRF)", 404: "Not found (or not yours)", 409: "Conflict", 413: "Body too large", 429: "Too many attempts (Retry-After says when to try again)",
           503: "The database is unavailable"}  # fmt: skip


def document(operations: Sequence[Operation], version: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for operation in operations:
        paths.setdefault(PREFIX + operation.path, {})[operation.method.lower()] = _operation(operation)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Relaygate management API",
            "version": version,
            "description": "Manage keys, usage, wallets, users, channels and prices of a Relaygate gateway. "
            "Authenticate with a personal access token (`relaygate token create USER --scope read|write|admin`) "
            "in `Authorization: Bearer rgt-…`, or with the console's session cookie (writes also need `X-CSRF-Token`). "
            "Money is a decimal USD string beside an integer micro-USD field.",
        },
        "paths": paths,
        "components": {
            "schemas": {"Error": ERROR_SCHEMA},
            "securitySchemes": {
                "accessToken": {"type": "http", "scheme": "bearer", "bearerFormat": "rgt-…", "description": "a personal access token"},
                "consoleSession": {"type": "apiKey", "in": "cookie", "name": "rg_session", "description": "the console's session; writes need X-CSRF-Token"},
            },
        },
        "security": [{"accessToken": []}, {"consoleSession": []}],
    }


def _operation(operation: Operation) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = []
    for name in _PARAM.findall(operation.path):
        schema = PATH_TEXT if name in operation.text_params else PATH_ID
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    for param in operation.query:
        parameters.append({"name": param.name, "in": "query", "required": False, "schema": param.schema, "description": param.description})
    for param in operation.headers:
        parameters.append({"name": param.name, "in": "header", "required": False, "schema": param.schema, "description": param.description})
    responses: dict[str, Any] = {}
    if operation.response is None:
        responses[str(operation.status)] = {"description": REASONS.get(operation.status, "OK")}
    else:
        responses[str(operation.status)] = {
            "description": REASONS.get(operation.status, "OK"),
            "content": {operation.media_type: {"schema": operation.response}},
        }
    for status in sorted({*operation.errors, 401, 403, 413 if operation.body else 401, 503}):
        responses[str(status)] = _error(REASONS.get(status, CODES.get(status, "error")))
    responses["default"] = _error("Any other error, in the same shape")
    spec: dict[str, Any] = {
        "operationId": operation.operation_id,
        "summary": operation.summary,
        "tags": [operation.tag],
        "parameters": parameters,
        "responses": responses,
        "x-scope": operation.scope,
    }
    if operation.body is not None:
        spec["requestBody"] = {"required": False, "content": {"application/json": {"schema": operation.body}}}
    return spec


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
