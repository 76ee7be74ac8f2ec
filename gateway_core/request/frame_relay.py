"""WebSocket routes whose every client message is one request (``RouteSpec(frames_for=…)``).

``FrameEndpoint`` is the ASGI app of such a route (the Responses API over a
WebSocket). At the handshake it reads the key and runs the key's own policies
(those ordered before the group and model check: the key exists, is enabled,
accepts the client's address); refused, the client gets the protocol's error as
the handshake's HTTP answer (401, 403 …, with ``X-Request-Id``), never an
accepted socket. Accepted, the connection belongs to the protocol's
:class:`~gateway_core.client_protocol.FrameConversation`.

Each client message the conversation turns into a request body runs as one
ordinary request of the route named by ``frames_for`` (``POST``, the same
protocol's endpoint, the handshake's headers): the whole request path — the
policies, the reservation, the router with failover before the first byte, the
channel, the usage row and the charge — exactly as over HTTP. Its streamed
answer is cut into its SSE events as they come, and each event's data goes to
the client as one text message (nothing is buffered); an answer with an error
status becomes the conversation's error message. The connection then serves the
next message. One request runs at a time, in the order the messages came;
messages that come meanwhile wait (at most :data:`MAX_WAITING`; past it the
connection closes with 1008).

Limits: a message over ``[gateway] max_frame_bytes`` is answered with an error
and the connection closes (1009); with no request running or waiting for
``[gateway] websocket_idle_timeout`` seconds the gateway closes it (1000). When
the client leaves while a request runs, that request sees its client disconnect,
as over HTTP: the upstream call is cancelled and what was delivered is billed.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

import structlog
from starlette.datastructures import Headers, QueryParams
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..client_protocol import ClientProtocol, RouteSpec
from .context import RequestContext, new_request_id
from ..errors import GatewayError, InternalError, InvalidRequestError, RequestTooLargeError
from ..framing import FrameTooLargeError
from .outcome import Outcome
from ..policy import Pipeline, Policy
from .relay import REQUEST_ID
from .settlement import settle
from ..sse import SSESplitter, frame_fields
from ..types import ASGIApp
from .websocket_denial import refuse_handshake

if TYPE_CHECKING:
    from ..runtime.services import Services

log = structlog.get_logger("relaygate.frames")

MAX_WAITING = 16  # messages waiting while a request runs; one more closes the connection (1008)
MAX_ERROR_BODY = 64 * 1024  # bytes of an error answer kept for its message
KEY_POLICIES_BEFORE = 400  # the handshake runs the policies ordered before the group and model check
CLOSE_NORMAL, CLOSE_POLICY, CLOSE_TOO_BIG = 1000, 1008, 1009
# the handshake's headers every request of the connection carries, but these (its key may be in the subprotocol: kept)
_NOT_FORWARDED = frozenset((b"upgrade", b"connection", b"content-length", b"transfer-encoding", b"content-type",
                            b"sec-websocket-key", b"sec-websocket-version", b"sec-websocket-extensions", b"sec-websocket-accept"))
_JSON = (b"content-type", b"application/json")


class FrameEndpoint:
    """ASGI app of one ``frames_for`` WebSocket route of one client protocol;
    ``http_app`` is the protocol's endpoint of the route each message runs as."""

    def __init__(self, services: Services, protocol: ClientProtocol, route: RouteSpec, http_app: ASGIApp) -> None:
        assert route.frames_for is not None
        self.services = services
        self.protocol = protocol
        self.route = route
        self.http_app = http_app
        self.http_path: str = route.frames_for

    async def __call__(self, scope, receive, send) -> None:
        request_id = new_request_id()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        try:
            await self._check_key(scope, request_id)
        except GatewayError as error:
            log.info("websocket refused", path=scope.get("path"), status=error.status)
            rendered = self.protocol.render_error(error, request_id)
            await refuse_handshake(receive, send, scope, rendered, request_id, error.message)
            return
        websocket = WebSocket(scope, receive, send)
        offered = [p.strip() for p in Headers(scope=scope).get("sec-websocket-protocol", "").split(",") if p.strip()]
        try:
            await websocket.accept(subprotocol=self.protocol.session_subprotocol(offered))
        except (WebSocketDisconnect, RuntimeError, OSError):  # gone during the handshake
            return
        log.info("websocket opened", path=scope.get("path"))
        connection = Connection(self, websocket, scope)
        try:
            await connection.run()
        finally:
            structlog.contextvars.bind_contextvars(request_id=request_id)
            log.info("websocket closed", path=scope.get("path"), requests=connection.served, ended_by=connection.ended_by)

    async def _check_key(self, scope, request_id: str) -> None:
        """The key's own policies, as an HTTP request of the route would run them
        first; a refusal is settled (its usage-log row, like HTTP's) and raised."""
        services = self.services
        headers = Headers(scope=scope)
        ctx = RequestContext(
            request_id=request_id, protocol=self.protocol, client_ip=services.client_address(scope), headers=headers, endpoint=self.route.endpoint
        )
        try:
            ctx.secret = self.protocol.read_key(headers, QueryParams(scope["query_string"]))
            for policy in services.pipeline.policies:
                if policy.order >= KEY_POLICIES_BEFORE:
                    break
                await policy.admit(ctx, services)
                if type(policy).finish is not Policy.finish:
                    ctx.admitted.append(policy)
        except GatewayError as error:
            services.observers.started(ctx)
            await settle(ctx, Outcome(error.status, error=error), services)
            raise
        await Pipeline.finish(ctx, services)  # the handshake holds nothing: each message is its own request


class Connection:
    """One accepted connection: its messages, one request at a time."""

    def __init__(self, endpoint: FrameEndpoint, websocket: WebSocket, scope: dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.websocket = websocket
        self.scope = scope
        self.conversation = endpoint.protocol.frame_conversation(endpoint.route)
        config = endpoint.services.config
        self.limit = config.max_frame_bytes
        self.split_limit = config.max_frame_bytes + config.max_answer_bytes
        self.idle = config.websocket_idle_timeout
        self.waiting: asyncio.Queue[str | None] = asyncio.Queue()
        self.gone = asyncio.Event()  # the client left (or the connection is closing)
        self.served = 0  # requests run
        self.ended_by = "client"  # who ended the connection: client, idle, limit, shutdown
        self.headers = [(n, v) for n, v in scope["headers"] if n not in _NOT_FORWARDED]

    async def run(self) -> None:
        reader = asyncio.ensure_future(self._read())
        try:
            while not self.gone.is_set():
                try:
                    text = await asyncio.wait_for(self.waiting.get(), self.idle)
                except asyncio.TimeoutError:
                    self.ended_by = "idle"
                    await self._close(CLOSE_NORMAL, "idle timeout")
                    return
                if text is None or self.gone.is_set():
                    return
                await self._serve(text)
        except asyncio.CancelledError:
            self.ended_by = "shutdown"
            raise
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _read(self) -> None:
        """Client messages into the queue, until the client leaves or breaks a limit."""
        try:
            while True:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                text = message.get("text")
                if text is None:
                    text = (message.get("bytes") or b"").decode("utf-8", "replace")
                size = len(text) if len(text) * 4 <= self.limit else len(text.encode("utf-8", "replace"))
                if size > self.limit:
                    error = RequestTooLargeError(f"A message of {size} bytes is over the gateway's limit of {self.limit} bytes.")
                    await self._send(self._error_message(error, new_request_id()))
                    self.ended_by = "limit"
                    await self._close(CLOSE_TOO_BIG, error.message)
                    return
                if self.waiting.qsize() >= MAX_WAITING:
                    self.ended_by = "limit"
                    await self._close(CLOSE_POLICY, f"more than {MAX_WAITING} requests waiting: send the next one when an answer is complete")
                    return
                self.waiting.put_nowait(text)
        except (WebSocketDisconnect, RuntimeError, OSError):
            return
        finally:
            self.gone.set()
            self.waiting.put_nowait(None)

    async def _serve(self, text: str) -> None:
        conversation = self.conversation
        try:
            request = conversation.request(text)
        except GatewayError as error:
            await self._send(self._error_message(error, new_request_id()))
            return
        except Exception:  # as over HTTP: a client's input never becomes a 500
            request_id = new_request_id()
            log.exception("websocket message not understood", request_id=request_id)
            unread = InvalidRequestError(f"The message could not be read (request id: {request_id}).", code="invalid_request_shape")
            await self._send(self._error_message(unread, request_id))
            return
        if request is None:
            return
        if not isinstance(request, bytes):
            for message in request:
                await self._send(message)
            return
        self.served += 1
        try:
            await self._run(request)
        except Exception:  # a bug: this request fails, the connection stays
            log.exception("websocket request failed")
            request_id = new_request_id()
            await self._send(self._error_message(InternalError(f"The gateway failed to handle the request (request id: {request_id})."), request_id))
        finally:
            conversation.finished()

    async def _run(self, body: bytes) -> None:
        """One request of the HTTP route, its answer sent on as messages."""
        request_id = new_request_id()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        pending = [body]
        del body

        async def receive() -> dict[str, Any]:
            if pending:
                return {"type": "http.request", "body": pending.pop(), "more_body": False}
            await self.gone.wait()  # the request's disconnect watch waits here
            return {"type": "http.disconnect"}

        answer = Answer(self, request_id)
        await self.endpoint.http_app(self._http_scope(request_id, len(pending[0])), receive, answer.send)

    def _http_scope(self, request_id: str, size: int) -> dict[str, Any]:
        base, path = self.scope, self.endpoint.http_path
        scope = {
            "type": "http", "asgi": base.get("asgi", {"version": "3.0"}), "http_version": base.get("http_version", "1.1"),
            "method": "POST", "scheme": "https" if base.get("scheme") == "wss" else "http", "path": path,
            "raw_path": path.encode(), "root_path": base.get("root_path", ""), "query_string": b"",
            "headers": [*self.headers, _JSON, (b"content-length", str(size).encode())],
            "client": base.get("client"), "server": base.get("server"), "extensions": {}, REQUEST_ID: request_id,
        }  # fmt: skip
        for name in ("app", "state", "router"):
            if name in base:
                scope[name] = base[name]
        return scope

    def _error_message(self, error: GatewayError, request_id: str) -> str:
        rendered = self.endpoint.protocol.render_error(error, request_id)
        return self.conversation.error(rendered.status, rendered.body, request_id)

    async def _send(self, text: str) -> None:
        if self.gone.is_set():
            return
        try:
            await self.websocket.send_text(text)
        except (WebSocketDisconnect, RuntimeError, OSError):
            self.gone.set()  # the running request sees its client disconnect

    async def _close(self, code: int, reason: str) -> None:
        self.gone.set()
        try:
            await self.websocket.close(code, reason.encode("utf-8")[:120].decode("utf-8", "ignore"))
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass


class Answer:
    """The ASGI ``send`` of one message's request: its streamed answer's events
    become messages as they come; any other answer becomes messages at its end."""

    __slots__ = ("connection", "request_id", "status", "streaming", "splitter", "held", "size")

    def __init__(self, connection: Connection, request_id: str) -> None:
        self.connection = connection
        self.request_id = request_id
        self.status = 0
        self.streaming = False
        self.splitter = SSESplitter(connection.split_limit)
        self.held: list[bytes] = []  # a non-streamed answer (an error), bounded
        self.size = 0

    async def send(self, message: MutableMapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.status = message["status"]
            content_type = next((v for n, v in message.get("headers", ()) if n.lower() == b"content-type"), b"")
            self.streaming = self.status == 200 and content_type.startswith(b"text/event-stream")
            return
        if kind != "http.response.body":
            return
        chunk = message.get("body", b"")
        connection = self.connection
        last = not message.get("more_body", False)
        if self.streaming:
            try:
                frames = list(self.splitter.feed(chunk)) if chunk else []
            except FrameTooLargeError:  # the gateway wrote it: never larger than the limits
                log.warning("websocket event over the split limit dropped")
                frames = []
            if last:
                frames.append(self.splitter.flush())  # a last event without its blank line
            for frame in frames:
                _, data = frame_fields(frame)
                if not data.strip() or data == b"[DONE]":
                    continue  # keep-alives and comments
                text = connection.conversation.event(data)
                if text is not None:
                    await connection._send(text)
        elif chunk and self.size < MAX_ERROR_BODY:
            self.held.append(chunk[: MAX_ERROR_BODY - self.size])
            self.size += len(self.held[-1])
        if last and not self.streaming:
            body = b"".join(self.held)
            if self.status == 200:
                for text in connection.conversation.answer(body):
                    await connection._send(text)
            else:
                await connection._send(connection.conversation.error(self.status, body, self.request_id))
