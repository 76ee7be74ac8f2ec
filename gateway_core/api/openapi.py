"""The OpenAPI 3.1 document of the management API, built from the operations'
declarations (:mod:`.operation`), and a readable HTML page of it rendered
here, with nothing fetched from elsewhere."""

from __future__ import annotations

import html
import json
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


STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}"
    "h2{border-bottom:1px solid #ddd;margin-top:2em}code,pre{background:#f5f5f5;border-radius:3px;padding:0 .2em}"
    "pre{padding:.6em;overflow:auto;font-size:13px}.op{margin:1em 0;padding:.6em 1em;border:1px solid #e3e3e3;border-radius:6px}"
    ".m{font-weight:bold;display:inline-block;min-width:4.5em}.s{color:#666;font-size:13px}details summary{cursor:pointer}"
)


def page(spec: dict[str, Any]) -> str:
    """The document as one HTML page: operations by tag, with parameters, bodies and answers."""
    info = spec["info"]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            by_tag.setdefault(operation["tags"][0], []).append((method.upper(), path, operation))
    out = [f"<!doctype html><html lang=en><meta charset=utf-8><title>{_e(info['title'])}</title><style>{STYLE}</style>",
           f"<h1>{_e(info['title'])} <span class=s>{_e(info['version'])}</span></h1><p>{_code(info['description'])}</p>",
           '<p>The machine-readable document: <a href="openapi.json">openapi.json</a>. '
           + " · ".join(f"<a href='#{_e(tag)}'>{_e(tag)}</a>" for tag in by_tag) + "</p>",
           _schema_block("Every error: the one shape", spec["components"]["schemas"]["Error"])]  # fmt: skip
    for tag, operations in by_tag.items():
        out.append(f"<h2 id='{_e(tag)}'>{_e(tag)}</h2>")
        for method, path, operation in operations:
            out.append(f"<div class=op><span class=m>{method}</span> <code>{_e(path)}</code> "
                       f"<span class=s>scope: {_e(operation['x-scope'])}</span><p>{_e(operation['summary'])}</p>")  # fmt: skip
            params = operation["parameters"]
            if params:
                rows = "".join(f"<li><code>{_e(p['name'])}</code> ({p['in']}) {_e(p.get('description', ''))}</li>" for p in params)
                out.append(f"<ul>{rows}</ul>")
            if "requestBody" in operation:
                out.append(_schema_block("Request body", operation["requestBody"]["content"]["application/json"]["schema"]))
            for status, answer in operation["responses"].items():
                content = answer.get("content", {})
                schema = next(iter(content.values()))["schema"] if content else None
                if status.startswith("2") and schema is not None:
                    out.append(_schema_block(f"{status} {answer['description']}", schema))
                else:
                    out.append(f"<div class=s>{_e(status)}: {_e(answer['description'])}</div>")
            out.append("</div>")
    return "\n".join(out) + "</html>"


def _schema_block(title: str, schema: dict[str, Any]) -> str:
    return f"<details><summary>{_e(title)}</summary><pre>{_e(json.dumps(schema, indent=2))}</pre></details>"


def _e(text: Any) -> str:
    return html.escape(str(text))


def _code(text: str) -> str:
    """Escaped text with its `backticked` spans as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))
