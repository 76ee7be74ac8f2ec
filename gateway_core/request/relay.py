"""The path of one gateway request, from the client's bytes to the upstream and back.

``ProtocolEndpoint`` is the ASGI app of one client-protocol route: it reads the
key and the body through the protocol, runs the policy pipeline, asks the router
for channels, calls the channel type (with failover before the first byte),
renders the answer in the client's protocol (straight through when both sides
speak the same wire), and records the request durably before the last byte.

Each branch ends its request with an :class:`~gateway_core.request.outcome.Outcome`
(status, end reason, error, usage or estimate, first-token time) handed to
:func:`~gateway_core.request.settlement.settle`, the one place that fills the usage row.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import attrs
import structlog
from starlette.datastructures import Headers, QueryParams

from .. import endpoints
from ..base.asgi import ClientGone, encode_headers, read_body, send_body, stream_headers
from ..channel_type import AnswerLimits, Exchange, JsonReply, StreamReply, Target
from .client_input import reading_client_input
from ..client_protocol import Call, Caller, ClientProtocol, LocalAnswer, RouteSpec, StreamWriter
from .context import RequestContext
from .disconnect import DisconnectWatch
from ..echo_ids import split_ids
from ..errors import GatewayError, InternalError, NotFoundError, UpstreamError, UpstreamUnavailableError
from ..routing.failover import AttemptPlan, attempt_record
from ..routing.fallbacks import fall_back
from ..routing.health import Lease
from ..model import ChatRequest, ChatResponse, CoreRequest
from ..money import format_usd
from .outcome import CLIENT_GONE, CUT_BY_SHUTDOWN, DONE, Outcome, answered, end_reason_of
from ..store.request_store import StoreUnavailable
from .reservation import confirm
from ..secrets import redact
from .settlement import settle
from .stream_contract import StreamContract
from .stream_pump import CLIENT_ENDED, pump, streamed_outcome
from ..tally import StreamTally, input_estimate
from ..uploads import Upload
from ..upstream import read_by_read
from .write_deadline import WriteDeadline

if TYPE_CHECKING:
    from ..runtime.services import Services

log = structlog.get_logger("relaygate.request")

REQUEST_ID = "relaygate.request_id"
COST_HEADER = b"x-relaygate-cost-usd"  # a billed answer's cost, when its key or the gateway opts in
SHUTDOWN_SEND_SECONDS = 1.0  # how long a stream cut by a shutdown may take to send its error event
JSON_TYPE = b"application/json"
NO_QUERY = QueryParams("")  # immutable: shared by the requests without a query string


class ProtocolEndpoint:
    """ASGI app serving one route of one client protocol."""

    def __init__(self, services: Services, protocol: ClientProtocol, route: RouteSpec) -> None:
        self.services = services
        self.protocol = protocol
        self.route = route
        self.limits = AnswerLimits(services.config.max_answer_bytes, services.config.max_frame_bytes)

    async def __call__(self, scope, receive, send) -> None:
        services = self.services
        headers = Headers(scope=scope)
        ctx = RequestContext(
            request_id=scope[REQUEST_ID], protocol=self.protocol, client_ip=services.client_address(scope),
            headers=headers, endpoint=self.route.endpoint,
        )
        services.observers.started(ctx)
        try:
            query = QueryParams(scope["query_string"]) if scope["query_string"] else NO_QUERY
            ctx.secret = self.protocol.read_key(headers, query)
            path_params, limit = scope.get("path_params", {}), self.route.max_body_bytes or services.config.max_body_bytes
            if self.route.stream_body:  # an upload: only its head is read here, the channel streams the rest
                upload: Upload = Upload.open(scope, receive, limit, services.config.body_timeout)
                with reading_client_input(ctx.request_id, "parse"):
                    call = await self.protocol.parse_upload(self.route, upload, headers, query, path_params)
                ctx.body_size = upload.text_size
            else:
                body = await read_body(scope, receive, limit, services.config.body_timeout)
                ctx.body_size = len(body)
                with reading_client_input(ctx.request_id, "parse"):
                    call = self.protocol.parse(self.route, body, headers, query, path_params)
                del body  # parsed: not held for the rest of the request (a large body's memory)
            ctx.call = call
            await services.pipeline.admit(ctx, services)
            if call.endpoint == endpoints.MODELS:
                models = await services.router.models_for(ctx.authenticated_key())
                payload = self.protocol.render_models(call, models, headers, query)
                await self._respond(ctx, send, DONE, payload, JSON_TYPE)
            else:
                prepared = await self.protocol.prepare(call, Caller(ctx.authenticated_key(), services.responses))
                if isinstance(prepared, LocalAnswer):
                    await self._respond(ctx, send, Outcome(200, "done", estimated=prepared.estimated), prepared.body, prepared.content_type.encode())
                    return
                ctx.call = prepared
                await self._relay(ctx, prepared, receive, send)
        except GatewayError as error:  # on a body not read to its end, the answer closes the connection (app.py)
            await self._fail(ctx, send, error)
        except ClientGone:
            await settle(ctx, CLIENT_GONE, services)
        except asyncio.CancelledError:
            # the server gave up on the request (a shutdown past its grace period):
            # still release what it holds and log it (a stream settles what it delivered itself)
            if not ctx.settled:
                await asyncio.shield(settle(ctx, CUT_BY_SHUTDOWN, services))
            raise
        except Exception:
            log.exception("request failed", path=scope.get("path"))
            internal = InternalError(f"The gateway failed to handle the request (request id: {ctx.request_id}).")
            await self._fail(ctx, send, internal)

    # --- answering -----------------------------------------------------------

    async def _respond(self, ctx: RequestContext, send, outcome: Outcome, body: bytes, content_type: bytes) -> None:
        await confirm(ctx)  # a reservation written beside the upstream call: committed (or its refusal raised)
        await settle(ctx, outcome, self.services)
        headers = ctx.response_headers
        row, key = ctx.row, ctx.key
        if row is not None and ctx.charge is not None and key is not None and (key.cost_header or self.services.config.cost_header):
            headers = headers + [(COST_HEADER, format_usd(row.cost_micros).encode())]
        await send_body(send, outcome.status, body, content_type, headers)

    async def _fail(self, ctx: RequestContext, send, error: GatewayError) -> None:
        rendered = self.protocol.render_error(error, ctx.request_id)
        try:
            await settle(ctx, Outcome(rendered.status, error=error), self.services)
        except StoreUnavailable as lost:  # the database is gone: the client still hears why, not a 500
            log.warning("request.not_recorded", status=rendered.status, error=str(lost))
        headers = ctx.response_headers + encode_headers(rendered.headers)
        if error.retry_after is not None:
            headers.append((b"retry-after", str(max(1, round(error.retry_after))).encode()))
        await send_body(send, rendered.status, rendered.body, rendered.content_type.encode(), headers)

    def _caller(self, ctx: RequestContext) -> Caller:
        channel = ctx.target.channel if ctx.target is not None else None
        return Caller(ctx.authenticated_key(), self.services.responses, channel)

    # --- calling upstream ----------------------------------------------------

    async def _relay(self, ctx: RequestContext, call: Call, receive, send) -> None:
        services = self.services
        try:
            routes = await services.router.candidates(ctx.authenticated_key(), call.model, call.endpoint)
        except NotFoundError as error:
            answer = None
            if error.code == endpoints.UNSUPPORTED_ENDPOINT:
                with reading_client_input(ctx.request_id, "answer_locally"):
                    answer = await self.protocol.answer_locally(call)
            if answer is None:
                raise
            ctx.response_headers.extend(encode_headers(dict(answer.headers)))
            await self._respond(ctx, send, Outcome(200, "done", estimated=answer.estimated), answer.body, answer.content_type.encode())
            return
        if call.channel_id is not None:  # state one channel holds (ClientProtocol.prepare)
            routes = [route for route in routes if route.channel.id == call.channel_id]
            if not routes:
                raise NotFoundError(f"The channel holding the state this request names no longer serves '{call.model}' here.")
        config = services.config
        health = services.health
        plan = AttemptPlan(health, routes, call.model, config.max_attempts, ctx.started + config.attempt_deadline, ctx.slot_limits)
        if services.affinity is not None:  # session affinity: where the session went last goes first
            await plan.follow(services.affinity, ctx.authenticated_key().id, ctx.protocol, call.body, ctx.headers)
        early = EarlyHead() if call.stream and config.keepalive_interval > 0 else None
        if early is not None:  # keep-alives may send the head before any upstream answers
            await confirm(ctx)
        # an upload's body is read by the channel as it sends it: the upload notices a disconnect itself
        watch = DisconnectWatch(receive, enabled=getattr(call, "upload", None) is None)
        request: CoreRequest | None = None
        session = services.session
        if session is None:
            raise UpstreamUnavailableError("The gateway is not running its upstream connections (it is starting or stopping).")
        lease: Lease | None = None
        try:
            while True:
                lease = await plan.take()
                if lease is None and await fall_back(services, ctx, plan):  # another model's channels
                    lease = await plan.take()
                if lease is None:
                    if early is None or early.writer is None:
                        raise plan.final_error()
                    await self._end_early(ctx, early.writer, plan.final_error(), send)
                    return
                channel = lease.route.channel
                channel_type = services.registry.channel_types[channel.type]
                upstream_model = channel.upstream_model(plan.model)
                passthrough = channel_type.model_wire(call.endpoint, channel, upstream_model) == call.wire
                if not passthrough and request is None:
                    with reading_client_input(ctx.request_id, "to_core"):
                        request = self.protocol.to_core(call)
                    if isinstance(request, ChatRequest):  # data folded into tool-call ids goes back to provider_metadata
                        request = split_ids(request)
                target = Target(channel=channel, api_key=lease.api_key, upstream_model=upstream_model)
                exchange = Exchange(
                    call=call,
                    target=target,
                    request=None if passthrough else request,
                    session=session,
                    timeouts=plan.timeouts(lease),
                    request_id=ctx.request_id,
                    trace_headers=services.observers.trace_headers(ctx, target),
                    limits=self.limits,
                )
                ctx.target = target
                started = time.perf_counter()
                try:
                    if early is not None:
                        reply = await self._send_keeping_alive(ctx, call, channel_type, exchange, passthrough, early, watch, send)
                    else:
                        reply = await watch.run(channel_type.send(exchange))
                except GatewayError as error:
                    redact_error(error, lease.api_key)
                    ctx.attempts.append(attempt_record(lease, started, error))
                    plan.failed(lease, error)
                    if early is not None and early.writer is not None:  # the client has the head: end its stream
                        await self._end_early(ctx, early.writer, error, send)
                        return
                    if error.retryable:
                        continue
                    raise
                except ClientGone:  # the upstream call was cancelled; the row counts the prompt sent (estimated)
                    ctx.attempts.append(attempt_record(lease, started, None, 499))
                    await settle(ctx, answered(None, ctx.text_input_tokens(), 0, status=499, end_reason="client_gone"), services)
                    raise
                streaming = isinstance(reply, StreamReply)
                health.succeeded(lease, streaming)
                ctx.attempts.append(attempt_record(lease, started, None))
                if streaming:
                    contract = StreamContract(channel_type.name)  # every frame is checked against it
                    broken = await self._stream(ctx, call, reply, contract, passthrough, watch, send, early.writer if early else None)
                    health.stream_ended(lease, broken, ctx.row is not None and ctx.row.end_reason == "done")
                else:
                    await self._complete(ctx, call, reply, passthrough, send)
                return
        finally:
            watch.close()
            if lease is not None:
                lease.release()  # the channel's concurrency slot

    async def _send_keeping_alive(self, ctx: RequestContext, call: Call, channel_type, exchange: Exchange, passthrough: bool, early: EarlyHead, watch: DisconnectWatch, send):
        """Send the attempt; while its first byte is late, send keep-alives every
        ``keepalive_interval`` seconds of the request — the first one sends the
        response head (200, SSE) and sets ``early.writer``, after which an error
        can only end the stream."""
        interval = self.services.config.keepalive_interval
        task = asyncio.ensure_future(channel_type.send(exchange))
        try:
            while True:
                waited = time.perf_counter() - ctx.started
                due = (int(waited / interval) + 1) * interval - waited
                done, _ = await watch.run(asyncio.wait((task,), timeout=due))
                if done:
                    return task.result()
                writer = early.writer
                if writer is None:
                    writer = early.writer = self.protocol.stream_writer(call, passthrough)
                    headers = stream_headers(writer.content_type) + ctx.response_headers
                    await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": writer.keepalive(), "more_body": True})
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _end_early(self, ctx: RequestContext, writer: StreamWriter, error: GatewayError, send) -> None:
        """End a stream whose head went out before any upstream answered (nothing billed)."""
        await settle(ctx, Outcome(200, end_reason_of(error), error), self.services)
        await send({"type": "http.response.body", "body": writer.fail(error, ctx.request_id), "more_body": False})

    async def _complete(self, ctx: RequestContext, call: Call, reply: JsonReply, passthrough: bool, send) -> None:
        # a channel may answer in the client's own wire although asked to convert (JsonReply.wire)
        if reply.body is not None and (passthrough or (reply.wire is not None and reply.wire == call.wire)):
            body = self.protocol.passthrough_body(call, reply.body)
        elif reply.response is not None:
            body = self.protocol.render_response(call, reply.response)
        else:
            raise InternalError("The channel type answered with neither a body nor a response (a bug in its adapter).")
        usage = reply.usage or getattr(reply.response, "usage", None)
        chat = isinstance(reply.response, (ChatResponse, type(None)))
        chars = _response_chars(reply) if usage is None and chat else 0
        # media: images, characters, audio, priced per unit (billing.charge)
        outcome = answered(usage, input_estimate(usage, ctx.text_input_tokens), chars, media=reply.media, first_token_ms=ctx.elapsed_ms())
        if reply.estimated and not outcome.estimated:  # the channel's own count of what the upstream did not report
            outcome = attrs.evolve(outcome, estimated=True)
        native = passthrough or (reply.wire is not None and reply.wire == call.wire)
        await self.protocol.keep(call, self._caller(ctx), body, native)
        await self._respond(ctx, send, outcome, body, reply.content_type.encode())

    async def _stream(self, ctx: RequestContext, call: Call, reply: StreamReply, contract: StreamContract, passthrough: bool, watch: DisconnectWatch, send, writer: StreamWriter | None = None) -> GatewayError | None:
        """Pump the stream to the client; return the error that broke it, if any.

        ``writer`` is given when keep-alives already sent the response head."""
        if writer is None:
            await confirm(ctx, reply.close)  # refused: the upstream stream is closed unread
            writer = self.protocol.stream_writer(call, passthrough)
            await send({"type": "http.response.start", "status": 200, "headers": stream_headers(writer.content_type) + ctx.response_headers})
        tally = StreamTally(ctx.started)
        error: GatewayError | None = None
        self.services.observers.stream_started(ctx)
        deadline = WriteDeadline(send, self.services.config.write_timeout)  # a client that stopped reading
        try:
            error = await watch.run(pump(reply, contract, writer, tally, deadline.send))
            end_reason = "done" if error is None else end_reason_of(error)
        except ClientGone:
            end_reason = "client_gone"
        except asyncio.CancelledError:
            if not deadline.expired or asyncio.current_task().uncancel():  # type: ignore[union-attr]
                # the server gave up on the request (its shutdown grace ran out)
                await asyncio.shield(self._cut_by_shutdown(ctx, tally, writer, send))
                raise
            end_reason = "write_timeout"  # the client stopped reading: ended here; the server closes the connection
        finally:
            self.services.observers.stream_ended(ctx)
            deadline.close()
            await reply.close()
        await settle(ctx, streamed_outcome(ctx, tally, end_reason, error), self.services)
        if end_reason in CLIENT_ENDED:
            return None
        tail = writer.end() if error is None else writer.fail(error, ctx.request_id)
        if error is None:
            await self.protocol.keep(call, self._caller(ctx), writer, passthrough)
        await send({"type": "http.response.body", "body": tail, "more_body": False})
        return error

    async def _cut_by_shutdown(self, ctx: RequestContext, tally: StreamTally, writer: StreamWriter, send) -> None:
        """A stream the server's shutdown cut: charge what it delivered (``shutdown``),
        then end it with the protocol's error event, if the client can still get it."""
        error = UpstreamUnavailableError("The gateway is shutting down; the answer was cut short. Retry the request.", retry_after=1.0)
        await settle(ctx, streamed_outcome(ctx, tally, "shutdown", error), self.services)
        try:
            tail = writer.fail(error, ctx.request_id)
            await asyncio.wait_for(send({"type": "http.response.body", "body": tail, "more_body": False}), SHUTDOWN_SEND_SECONDS)
        except Exception as exc:  # the connection is already gone
            log.info("shutdown error event not sent", request_id=ctx.request_id, error=repr(exc))


class EarlyHead:
    """The writer of a stream whose head keep-alives sent before any upstream answered."""

    __slots__ = ("writer",)

    def __init__(self) -> None:
        self.writer: StreamWriter | None = None


def redact_error(error: GatewayError, api_key: str) -> None:
    """Mask the channel's key wherever an upstream echoed it back."""
    error.message = redact(error.message, api_key)
    if error.upstream_body:
        error.upstream_body = redact(error.upstream_body, api_key)


def _response_chars(reply: JsonReply) -> int:
    if isinstance(reply.response, ChatResponse):
        return sum(len(getattr(p, "text", "") or getattr(p, "arguments", "")) for p in reply.response.parts)
    if reply.response is not None:
        return 0  # an embedding has no text to count
    # no usage and no parsed answer: the body's length bounds its content
    return len(reply.body) if reply.body is not None else 0

