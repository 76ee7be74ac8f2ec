"""Building the ASGI app: protocol routes, plugin routes, request ids, lifespan."""

from __future__ import annotations

import contextlib
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import orjson
import structlog
from starlette.datastructures import Headers, QueryParams
from starlette.routing import BaseRoute, Match, Route, Router, WebSocketRoute, compile_path

from ..base.asgi import announces_body, finish_early_answer, send_body
from ..client_protocol import ClientProtocol, RenderedError, RouteSpec
from ..config import Config, load_config
from ..request.context import new_request_id
from ..errors import GatewayError, InternalError, NotFoundError
from .plugins import collect
from ..routing.readiness import ReadyEndpoint
from ..request.relay import REQUEST_ID, ProtocolEndpoint
from ..request.session_relay import SessionEndpoint
from ..request.frame_relay import FrameEndpoint
from .app_state import SERVICES_STATE
from ..ratelimit import RateLimiter
from ..store.request_store import RequestStore
from .services import Services
from ..types import ASGIApp
from ..request.websocket_denial import decline_upgrade

log = structlog.get_logger("relaygate.app")


class PathDispatch:
    """The ASGI app of one path: picks the protocol route by method, then by the
    routes' ``match`` (several protocols may share a path), then the fallback."""

    def __init__(self, entries: list[tuple[RouteSpec, ProtocolEndpoint]], not_found: NotFound) -> None:
        self.not_found = not_found
        self.by_method: dict[str, list[tuple[RouteSpec, ProtocolEndpoint]]] = defaultdict(list)
        for spec, endpoint in entries:
            for method in spec.methods:
                self.by_method[method].append((spec, endpoint))
        for candidates in self.by_method.values():  # matchers first, fallbacks last
            candidates.sort(key=lambda item: item[0].match is None)
        self.first = entries[0][1]

    async def __call__(self, scope, receive, send) -> None:
        candidates = self.by_method.get(scope["method"])
        if not candidates:
            allowed = ", ".join(sorted(self.by_method))
            error = GatewayError(f"Method {scope['method']} is not allowed here; use {allowed}.", status=405)
            rendered = self.first.protocol.render_error(error, scope[REQUEST_ID])
            await send_body(send, 405, rendered.body, rendered.content_type.encode(), [(b"allow", allowed.encode())])
            return
        if len(candidates) == 1 and candidates[0][0].match is None:
            return await candidates[0][1](scope, receive, send)
        headers, query = Headers(scope=scope), QueryParams(scope["query_string"])
        for spec, endpoint in candidates:
            if spec.match is None or spec.match(headers, query):
                return await endpoint(scope, receive, send)
        await self.not_found(scope, receive, send)  # only matchers, none matched


class NotFound:
    """Unknown paths: a 404 in the shape of the protocol the client most likely speaks."""

    def __init__(self, protocols: list[ClientProtocol]) -> None:
        self.protocols = protocols
        # the protocols' paths: a base URL missing its '/v1' (the client asks for /chat/completions),
        # and whether a WebSocket upgrade names a path served over HTTP
        self.served = [compile_path(spec.path)[0] for protocol in protocols for spec in protocol.routes()]

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket":
            served = any(pattern.match(scope["path"]) for pattern in self.served)
            return await decline_upgrade(scope, receive, send, served, lambda error, request_id: self._render(scope, error, request_id))
        if scope["type"] != "http":
            return
        path = scope["path"]
        if "/v1/v1/" in path + "/":
            message = (
                f"The path {path} repeats the '/v1' segment. The base URL configured in your client "
                "already ends with '/v1' where the client adds it again: remove one '/v1' from the base URL."
            )
        elif any(pattern.match("/v1" + path) for pattern in self.served):
            message = (
                f"Unknown path: {scope['method']} {path}, but /v1{path} is served. The base URL configured in your "
                "client probably lacks '/v1': add it (a base URL like http://HOST:PORT/v1)."
            )
        else:
            message = f"Unknown path: {scope['method']} {path}. See the API reference for the endpoints served here."
        error = NotFoundError(message, code="unknown_path")
        await render_error(self.protocols, scope, send, error)


    def _render(self, scope, error: GatewayError, request_id: str) -> RenderedError:
        """``error`` in the shape of the protocol the client most likely speaks."""
        if not self.protocols:
            return RenderedError(error.status, orjson.dumps({"error": {"message": error.message, "type": error.kind, "request_id": request_id}}))
        headers, query = Headers(scope=scope), QueryParams(scope.get("query_string", b""))
        return max(self.protocols, key=lambda p: p.claim(scope.get("path", ""), headers, query)).render_error(error, request_id)


async def render_error(protocols: list[ClientProtocol], scope, send, error: GatewayError) -> None:
    request_id = scope.get(REQUEST_ID, "")
    if not protocols:
        body = orjson.dumps({"error": {"message": error.message, "type": error.kind}})
        await send_body(send, error.status, body, b"application/json")
        return
    headers, query = Headers(scope=scope), QueryParams(scope.get("query_string", b""))
    protocol = max(protocols, key=lambda p: p.claim(scope.get("path", ""), headers, query))
    rendered = protocol.render_error(error, request_id)
    await send_body(send, rendered.status, rendered.body, rendered.content_type.encode())


class RequestIdMiddleware:
    """Gives every request an id: in ``X-Request-Id``, the logs' context and the usage log.
    Also the last line of defence: an unexpected exception becomes a 500 with that id."""

    def __init__(self, app: ASGIApp, protocols: list[ClientProtocol], services: Services) -> None:
        self.app = app
        self.protocols = protocols
        self.services = services  # the app's services (tests and embedders read them)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request_id = new_request_id()
        scope[REQUEST_ID] = request_id
        structlog.contextvars.bind_contextvars(request_id=request_id)
        header = (b"x-request-id", request_id.encode())
        started = False
        unread = announces_body(scope)  # part of the request body not read yet
        status = 0

        async def receive_noting_end():
            nonlocal unread
            message = await receive()
            if not message.get("more_body", False):
                unread = False
            return message

        async def send_with_id(message) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
                # answered before the whole body came (refused, or the body ignored):
                # the connection cannot carry another request, and the client must know
                message["headers"] = [*message.get("headers", ()), header, *_CLOSE[unread]]
            elif unread and message["type"] == "http.response.body" and not message.get("more_body", False):
                return await finish_early_answer(scope, receive, send, message, drain=status != 408)
            await send(message)

        try:
            await self.app(scope, receive_noting_end if unread else receive, send_with_id)
        except Exception:
            log.exception("unhandled error", path=scope.get("path"))
            if not started:
                error = InternalError(f"The gateway failed to handle the request (request id: {request_id}).")
                await render_error(self.protocols, scope, send_with_id, error)


_CLOSE = {False: (), True: ((b"connection", b"close"),)}


class StatusEndpoint:
    """``GET /`` and ``GET /healthz`` (and ``HEAD``): the process is alive; readiness
    to serve is ``GET /readyz`` (readiness.py)."""

    body = b'{"name":"relaygate","status":"ok"}'

    async def __call__(self, scope, receive, send) -> None:
        if scope["method"] == "HEAD":
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(self.body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await send_body(send, 200, self.body, b"application/json")


def protocol_routes(services: Services, not_found: NotFound) -> list[BaseRoute]:
    """One route per path. More literal paths come first, so that
    ``/v1/models/{model}:generateContent`` is tried before ``/v1/models/{model}``."""
    by_path: dict[str, list[tuple[RouteSpec, ProtocolEndpoint]]] = defaultdict(list)
    sessions: list[BaseRoute] = []
    for protocol in services.registry.protocols:
        for spec in protocol.routes():
            if spec.websocket and spec.frames_for:  # each message one request of an HTTP route (frame_relay.py)
                sessions.append(WebSocketRoute(spec.path, FrameEndpoint(services, protocol, spec, _http_endpoint(services, protocol, spec.frames_for))))
            elif spec.websocket:  # a WebSocket session (session_relay.py)
                sessions.append(WebSocketRoute(spec.path, SessionEndpoint(services, protocol, spec)))
            else:
                by_path[spec.path].append((spec, ProtocolEndpoint(services, protocol, spec)))
    paths = sorted(by_path, key=lambda path: -len(_PARAM.sub("", path)))
    return [*sessions, *(Route(path, PathDispatch(by_path[path], not_found)) for path in paths)]


_PARAM = re.compile(r"\{[^}]*\}")


def _http_endpoint(services: Services, protocol: ClientProtocol, path: str) -> ProtocolEndpoint:
    """The protocol's ``POST`` endpoint at ``path`` (a ``frames_for`` route's requests)."""
    for spec in protocol.routes():
        if spec.path == path and "POST" in spec.methods and not spec.websocket:
            return ProtocolEndpoint(services, protocol, spec)
    raise ValueError(f"{protocol.name}: frames_for names {path}, which is no POST route of the protocol")


class LiteralPaths:
    """In front of the router: a request for a protocol route's literal path (no
    parameter) goes straight to its :class:`PathDispatch`, found in a dict rather
    than by matching every route's pattern in turn. Only paths that the router
    itself would give to that route are taken (checked when built); everything
    else goes to the router, as does a request under a ``root_path``."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.by_path: dict[str, Any] = {}
        for route in router.routes:
            if isinstance(route, Route) and isinstance(route.endpoint, PathDispatch) and not route.param_convertors:
                if _first_match(router, route.path) is route:
                    self.by_path[route.path] = route.endpoint

    async def __call__(self, scope, receive, send) -> None:
        dispatch = self.by_path.get(scope["path"]) if scope["type"] == "http" and not scope.get("root_path") else None
        if dispatch is None:
            return await self.router(scope, receive, send)
        scope.setdefault("router", self.router)
        scope["endpoint"], scope["path_params"] = dispatch, {}
        await dispatch(scope, receive, send)


def _first_match(router: Router, path: str) -> Route | None:
    """The route the router would pick for ``path`` — when every method picks the same one."""
    picked = []
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"):
        scope = {"type": "http", "path": path, "root_path": "", "method": method}
        picked.append(next((route for route in router.routes if route.matches(scope)[0] == Match.FULL), None))
    return picked[0] if all(route is picked[0] for route in picked) else None  # type: ignore[return-value]


def create_app(
    config: Config | None = None,
    *,
    extra_plugins: Iterable[Any] = (),
    store: RequestStore | None = None,
    rate_limiter: RateLimiter | None = None,
) -> RequestIdMiddleware:
    """The gateway's ASGI app for ``config`` (default: read from the environment).

    ``store`` and ``rate_limiter`` replace the ones the configuration names (any
    implementation of :class:`RequestStore` and :class:`RateLimiter`). Tracing to a
    provider of the embedder's own: a plugin in ``extra_plugins`` registering a
    ``relaygate_tracing.Tracing`` of it (``register_observers``)."""
    config = config or load_config()
    registry = collect(config, extra_plugins)
    services = Services.build(config, registry, store=store, rate_limiter=rate_limiter)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await services.start()
        try:
            yield {SERVICES_STATE: services}
        finally:
            await services.close()

    not_found = NotFound(registry.protocols)
    routes = [
        Route("/", StatusEndpoint(), methods=["GET", "HEAD"]),
        Route("/healthz", StatusEndpoint(), methods=["GET", "HEAD"]),
        Route("/readyz", ReadyEndpoint(services), methods=["GET", "HEAD"]),
        *protocol_routes(services, not_found),
        *registry.routes,
    ]
    router = Router(routes=routes, lifespan=lifespan, default=not_found)
    return RequestIdMiddleware(LiteralPaths(router), registry.protocols, services)


def create_app_from_env() -> RequestIdMiddleware:
    """The app as configured by ``RELAYGATE_DB`` and ``RELAYGATE_PLUGINS`` (worker processes)."""
    from .http_errors import install

    install()  # a worker process serves hypercorn's own error answers in JSON too
    return create_app(load_config())
