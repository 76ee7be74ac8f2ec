"""The management API's routes: ``/api/v1/…``, ``/api/openapi.json``, and
``/api/docs`` with its files under ``/api/static/``, one mount that
:mod:`.plugin` registers on the gateway through ``register_routes``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from importlib import metadata
from typing import Any

import orjson
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route

from gateway_core.request.relay import REQUEST_ID
from . import audit, budgets, catalog, channels, codes, fallbacks, keys, signups, teams, tokens, usage, users, wallet
from .errors import ApiError, error_response
from .docs_page import PAGE, static_mount
from .openapi import PREFIX, document
from .operation import MethodDispatch, Operation

OPERATIONS: tuple[Operation, ...] = (
    *tokens.OPERATIONS, *keys.OPERATIONS, *usage.OPERATIONS, *wallet.OPERATIONS, *codes.OPERATIONS, *budgets.OPERATIONS,
    *users.OPERATIONS, *signups.OPERATIONS, *teams.OPERATIONS, *catalog.OPERATIONS, *fallbacks.OPERATIONS, *channels.OPERATIONS, *audit.OPERATIONS,
)  # fmt: skip


def _version() -> str:
    try:
        return metadata.version("relaygate")
    except metadata.PackageNotFoundError:
        return "0"


def api_mount() -> Mount:
    spec = document(OPERATIONS, _version())
    spec_body = orjson.dumps(spec)

    async def openapi_json(request: Any) -> Response:
        return Response(spec_body, media_type="application/json")

    async def docs(request: Any) -> Response:
        return HTMLResponse(PAGE)

    by_path: dict[str, list[Operation]] = defaultdict(list)
    for operation in OPERATIONS:
        by_path[operation.path].append(operation)
    routes: list[Any] = [Route("/openapi.json", openapi_json, methods=["GET"]), Route("/docs", docs, methods=["GET"]), static_mount()]
    literal_first = sorted(by_path, key=lambda path: (path.count("{"), path))
    routes += [Route(PREFIX.removeprefix("/api") + path, MethodDispatch(by_path[path])) for path in literal_first]
    routes.append(Route("/{rest:path}", _unknown))
    return Mount("/api", routes=routes)


async def _unknown(request: Any) -> Response:
    error = ApiError(404, f"Unknown path: {request.method} {request.url.path}. See /api/docs for the operations served here.")
    return error_response(error, str(request.scope.get(REQUEST_ID, "")))
