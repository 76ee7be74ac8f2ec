"""WebSocket sessions relayed to an upstream message by message (``RouteSpec(websocket=True)``).

``SessionEndpoint`` is the ASGI app of one WebSocket route. At the handshake it
reads the key and parses the call through the protocol, runs the policy
pipeline (the first response's reservation), picks a channel (failover while
connecting) and opens the upstream session with the channel's key; refused, the
client gets the protocol's error message, then the close (1008; 1011 for the
gateway's or the upstream's failure). Then both directions are pumped at once,
each message sent on as it arrives (nothing is buffered; a message over
``[gateway] max_frame_bytes`` closes the session with 1009).

Billing is a stream's, response by response. The session holds one reservation;
when the upstream reports a response done (its usage), the request is settled —
one usage-log row per response, recorded before the client gets the ``done``
message — and the next response's reservation is made (the policies run again:
a key disabled or a balance spent ends the session with their error). Responses
that overlap share one row. When the client leaves while a response runs, the
upstream is asked to cancel it and the session waits up to :data:`DRAIN_SECONDS`
for its usage; when the upstream drops, what the running response delivered is
estimated. The session's end settles the open reservation: a last row, with no
tokens unless a response was cut short.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import structlog
from starlette.datastructures import Headers, QueryParams
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..channel_type import AnswerLimits, Exchange, Target
from ..client_protocol import Call, ClientProtocol, RouteSpec
from .context import RequestContext, new_request_id
from ..errors import GatewayError, InternalError, RequestTooLargeError, UpstreamError, UpstreamUnavailableError
from ..routing.failover import AttemptPlan, attempt_record
from ..routing.health import Lease
from ..model import PartDelta, StreamFinish, StreamStart, Usage, UsageReport
from .outcome import Outcome, answered, end_reason_of
from ..sessions import UpstreamSession
from .reservation import confirm
from .settlement import settle
from ..tally import estimate_tokens

if TYPE_CHECKING:
    from ..runtime.services import Services

log = structlog.get_logger("relaygate.session")

DRAIN_SECONDS = 15.0  # how long a left client's running responses may take to report their usage
CLOSE_NORMAL, CLOSE_POLICY, CLOSE_TOO_BIG, CLOSE_ERROR = 1000, 1008, 1009, 1011


class SessionEndpoint:
    """ASGI app serving one WebSocket route of one client protocol."""

    def __init__(self, services: Services, protocol: ClientProtocol, route: RouteSpec) -> None:
        self.services = services
        self.protocol = protocol
        self.route = route
        self.limits = AnswerLimits(services.config.max_answer_bytes, services.config.max_frame_bytes)

    async def __call__(self, scope, receive, send) -> None:
        websocket = WebSocket(scope, receive, send)
        headers = Headers(scope=scope)
        request_id = new_request_id()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        ctx = self.context(headers, request_id, self.services.client_address(scope))
        try:
            query = QueryParams(scope["query_string"])
            ctx.secret = self.protocol.read_key(headers, query)
            ctx.call = self.protocol.parse(self.route, b"", headers, query, scope.get("path_params", {}))
            await self.services.pipeline.admit(ctx, self.services)
            await confirm(ctx)  # a session answers as it goes: its reservation is known before anything is relayed
            upstream, lease = await self._open(ctx, ctx.call)
        except GatewayError as error:
            await self._refuse(websocket, ctx, error)
            return
        except asyncio.CancelledError:  # the server is stopping: release what the handshake holds
            await asyncio.shield(settle(ctx, Outcome(499, "shutdown"), self.services))
            raise
        except Exception:
            log.exception("session failed to open", path=scope.get("path"))
            await self._refuse(websocket, ctx, InternalError(f"The gateway failed to open the session (request id: {request_id})."))
            return
        offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
        try:
            try:
                await websocket.accept(subprotocol=self.protocol.session_subprotocol(offered))
            except (WebSocketDisconnect, RuntimeError, OSError):  # gone during the handshake
                await settle(ctx, Outcome(499, "client_gone"), self.services)
                return
            broken = await Session(self, websocket, ctx, upstream).run()
            if broken is not None:
                self.services.health.stream_failed(lease, broken)  # a session the upstream broke counts against it
        finally:
            await upstream.close()
            lease.release()

    def context(self, headers: Headers, request_id: str, client_ip: str | None) -> RequestContext:
        ctx = RequestContext(request_id=request_id, protocol=self.protocol, client_ip=client_ip, headers=headers, endpoint=self.route.endpoint)
        self.services.observers.started(ctx)
        return ctx

    async def _open(self, ctx: RequestContext, call: Call) -> tuple[UpstreamSession, Lease]:
        """The upstream session, through the first channel that opens one."""
        services = self.services
        session = services.session
        if session is None:
            raise UpstreamUnavailableError("The gateway is not running its upstream connections (it is starting or stopping).")
        routes = await services.router.candidates(ctx.authenticated_key(), call.model, call.endpoint)
        config = services.config
        plan = AttemptPlan(services.health, routes, call.model, config.max_attempts, ctx.started + config.attempt_deadline)
        while True:
            lease = await plan.take()
            if lease is None:
                raise plan.final_error()
            channel = lease.route.channel
            target = Target(channel=channel, api_key=lease.api_key, upstream_model=channel.upstream_model(call.model))
            ctx.target = target
            exchange = Exchange(
                call=call, target=target, request=None, session=session, timeouts=plan.timeouts(lease),
                request_id=ctx.request_id, trace_headers=services.observers.trace_headers(ctx, target), limits=self.limits,
            )  # fmt: skip
            started = time.perf_counter()
            try:
                upstream = await services.registry.channel_types[channel.type].open_session(exchange)
            except GatewayError as error:
                ctx.attempts.append(attempt_record(lease, started, error))
                plan.failed(lease, error)
                if error.retryable:
                    continue
                raise
            except BaseException:  # cancelled, or a bug: the channel's slot is given back
                lease.release()
                raise
            services.health.succeeded(lease)
            ctx.attempts.append(attempt_record(lease, started, None))
            return upstream, lease

    async def _refuse(self, websocket: WebSocket, ctx: RequestContext, error: GatewayError) -> None:
        """Tell the client why, then close (the handshake is accepted to carry the message)."""
        await settle(ctx, Outcome(error.status, error=error), self.services)
        try:
            await websocket.accept()
            await websocket.send_text(self.protocol.session_error(error, ctx.request_id))
            await websocket.close(CLOSE_POLICY if error.status < 500 else CLOSE_ERROR, _reason(error))
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass  # the client is already gone


class Session:
    """One accepted session: the two pumps and the billing of its responses."""

    def __init__(self, endpoint: SessionEndpoint, websocket: WebSocket, ctx: RequestContext, upstream: UpstreamSession) -> None:
        self.endpoint = endpoint
        self.services = endpoint.services
        self.websocket = websocket
        self.ctx = ctx
        self.upstream = upstream
        self.max_bytes = self.services.config.max_frame_bytes
        self.running = 0  # responses started and not done
        self.usage: Usage | None = None  # reported by the done responses of the open row
        self.input_chars = 0  # client text since the open row began (an estimate's input)
        self.output_chars = 0  # output text of the running responses (an estimate's output)
        self.first_token_ms: float | None = None
        self.client_left = False  # the upstream's messages are no longer sent on
        self.draining = False  # the session waits for the running responses' usage

    async def run(self) -> GatewayError | None:
        """Pump both directions until one ends; the upstream's error, if it broke the session."""
        client = asyncio.ensure_future(self._from_client())
        upstream = asyncio.ensure_future(self._from_upstream())
        status, end_reason, error, broken = 499, "client_gone", None, None
        try:
            await asyncio.wait((client, upstream), return_when=asyncio.FIRST_COMPLETED)
            if client.done():
                error = client.result()
                if error is not None:
                    status, end_reason = error.status, "client_error"
                await self._drain(upstream)
                await self._close(error)
            else:
                client.cancel()
                error = upstream.result()
                status, end_reason = (200, "done") if error is None else (502, end_reason_of(error))
                broken = error if isinstance(error, UpstreamError) else None
                await self._close(error)
        except Exception:  # a bug: the session still ends properly
            log.exception("session failed")
            error = InternalError("The gateway failed while relaying the session.")
            status, end_reason = 500, "internal_error"
            await self._close(error)
        finally:
            for task in (client, upstream):
                task.cancel()
            await asyncio.gather(client, upstream, return_exceptions=True)
            await self._settle_last(status, end_reason, error)
        return broken

    # --- the two directions ------------------------------------------------------------

    async def _from_client(self) -> GatewayError | None:
        """Client → upstream until the client leaves (``None``) or breaks a limit."""
        websocket, upstream, limit = self.websocket, self.upstream, self.max_bytes
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return None
            text, data = message.get("text"), message.get("bytes")
            payload: str | bytes = text if text is not None else (data or b"")
            if len(payload) > limit:
                return RequestTooLargeError(f"A message of {len(payload)} bytes is over the gateway's limit of {limit} bytes.")
            if text is not None:
                self.input_chars += len(text)
            try:
                await upstream.send(payload)
            except GatewayError:  # the upstream is gone: its pump ends the session
                await asyncio.Future()

    async def _from_upstream(self) -> GatewayError | None:
        """Upstream → client until the upstream closes (``None``) or drops (its error);
        while draining, until the running responses are done."""
        try:
            async for message in self.upstream.messages():
                refused = await self._response_done() if self._observe(message.events) else None
                if not self.client_left:
                    await self._send(message.data)
                if self.draining and self.running == 0:
                    return None
                if refused is not None:  # the next response cannot be reserved: the session ends
                    return refused
        except GatewayError as error:
            return error
        return None

    async def _send(self, data: str | bytes) -> None:
        try:
            if isinstance(data, str):
                await self.websocket.send_text(data)
            else:
                await self.websocket.send_bytes(data)
        except (WebSocketDisconnect, RuntimeError, OSError):
            self.client_left = True  # its pump ends the session; the upstream is still read for usage

    def _observe(self, events) -> bool:
        """Count a message's events; whether a response finished with it."""
        finished = False
        for event in events:
            kind = type(event)
            if kind is StreamStart:
                self.running += 1
                if self.first_token_ms is None:
                    self.first_token_ms = self.ctx.elapsed_ms()
            elif kind is PartDelta:
                self.output_chars += len(event.text)
            elif kind is UsageReport:
                self.usage = event.usage if self.usage is None else _add(self.usage, event.usage)
            elif kind is StreamFinish:
                self.running = max(0, self.running - 1)
                finished = True
        return finished

    async def _response_done(self) -> GatewayError | None:
        """A response finished: when none runs any more, settle the open row and
        reserve for the next response (its refusal ends the session)."""
        if self.running:
            return None  # overlapping responses share the row
        await settle(self.ctx, self._outcome(200, "done"), self.services)
        if self.client_left:
            return None  # no next response
        previous = self.ctx
        ctx = self.ctx = self.endpoint.context(previous.headers, new_request_id(), previous.client_ip)
        structlog.contextvars.bind_contextvars(request_id=ctx.request_id)
        ctx.secret, ctx.call, ctx.target = previous.secret, previous.call, previous.target
        self.usage, self.input_chars, self.output_chars, self.first_token_ms = None, 0, 0, None
        try:
            await self.services.pipeline.admit(ctx, self.services)
            await confirm(ctx)
        except GatewayError as error:
            await settle(ctx, Outcome(error.status, error=error), self.services)
            return error
        return None

    # --- the end -------------------------------------------------------------------------

    async def _drain(self, upstream: asyncio.Future) -> None:
        """The client left: have the running responses cancelled and wait for their usage."""
        self.client_left = self.draining = True
        if not self.running or upstream.done():
            return
        try:
            await self.upstream.cancel_responses()
            await asyncio.wait_for(asyncio.shield(upstream), DRAIN_SECONDS)
        except (asyncio.TimeoutError, GatewayError, OSError) as exc:
            log.info("session.drain_incomplete", running=self.running, error=repr(exc))

    async def _close(self, error: GatewayError | None) -> None:
        if self.client_left and error is None:
            return
        try:
            if error is not None:
                await self.websocket.send_text(self.endpoint.protocol.session_error(error, self.ctx.request_id))
                code = CLOSE_TOO_BIG if isinstance(error, RequestTooLargeError) else (CLOSE_POLICY if error.status < 500 else CLOSE_ERROR)
                await self.websocket.close(code, _reason(error))
            else:
                await self.websocket.close(CLOSE_NORMAL)
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass

    async def _settle_last(self, status: int, end_reason: str, error: GatewayError | None) -> None:
        """Settle the open row: a cut response's estimate, or nothing used."""
        if self.ctx.settled:
            return
        if self.running == 0 and self.usage is None:
            status = 200 if status == 499 else status  # no answer was cut: the session just ended
        if self.running and error is None and end_reason == "done":
            error, end_reason = UpstreamError("the upstream closed the session while a response ran"), "upstream_error"
        try:
            await asyncio.shield(settle(self.ctx, self._outcome(status, end_reason, error), self.services))
        except Exception:  # the row could not be written: logged, the session is over anyway
            log.exception("session.settle_failed")

    def _outcome(self, status: int, end_reason: str, error: GatewayError | None = None) -> Outcome:
        return answered(
            self.usage, estimate_tokens(self.input_chars) if self.output_chars else 0, self.output_chars,
            status=status, end_reason=end_reason, error=error, first_token_ms=self.first_token_ms,
        )  # fmt: skip


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cached_input_tokens=a.cached_input_tokens + b.cached_input_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
    )


def _reason(error: GatewayError) -> str:
    """A close reason within the protocol's 123 bytes."""
    return error.message.encode("utf-8")[:120].decode("utf-8", "ignore")


