"""The path of one gateway request, from the client's bytes to the upstream and back.

``ProtocolEndpoint`` is the ASGI app of one client-protocol route: it reads the
key and the body through the protocol, runs the policy pipeline, asks the router
for channels, calls the channel type (with failover before the first byte),
renders the answer in the client's protocol (straight through when both sides
speak the same wire), and records the request durably before the last byte.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog
from starlette.datastructures import Headers, QueryParams

from . import endpoints
from .asgi import ClientGone, encode_headers, read_body, send_body, stream_headers, wait_for_disconnect
from .channel_type import Exchange, JsonReply, StreamReply
from .client_protocol import Call, ClientProtocol, RouteSpec, StreamWriter
from .context import RequestContext
from .errors import GatewayError, InternalError, NotFoundError, UpstreamError, UpstreamTimeoutError
from .model import ChatRequest, Usage
from .records import UsageRow
from .router import UNSUPPORTED_ENDPOINT
from .services import Services
from .tally import StreamTally, estimate_tokens

log = structlog.get_logger("relaygate.request")

REQUEST_ID = "relaygate.request_id"
JSON_TYPE = b"application/json"


class ProtocolEndpoint:
    """ASGI app serving one route of one client protocol."""

    def __init__(self, services: Services, protocol: ClientProtocol, route: RouteSpec) -> None:
        self.services = services
        self.protocol = protocol
        self.route = route

    async def __call__(self, scope, receive, send) -> None:
        services = self.services
        headers = Headers(scope=scope)
        client_ip = services.client_address(scope)
        ctx = RequestContext(
            request_id=scope[REQUEST_ID], protocol=self.protocol, client_ip=client_ip, headers=headers
        )
        ctx.row = UsageRow(
            request_id=ctx.request_id,
            started_at=time.time(),
            protocol=self.protocol.name,
            endpoint=self.route.endpoint,
            client_ip=client_ip,
            client_request_id=headers.get("x-request-id"),
        )
        admitted: list = []
        try:
            query = QueryParams(scope["query_string"])
            ctx.secret = self.protocol.read_key(headers, query)
            body = await read_body(scope, receive, services.config.max_body_bytes)
            ctx.body_size = len(body)
            call = self.protocol.parse(self.route, body, headers, query, scope.get("path_params", {}))
            ctx.call = call
            ctx.row.model = call.model or None
            ctx.row.stream = call.stream
            admitted = await services.pipeline.admit(ctx, services)
            if call.endpoint == endpoints.MODELS:
                models = await services.router.models_for(ctx.key)
                payload = self.protocol.render_models(models, headers, query)
                await self._respond(ctx, admitted, send, 200, payload, JSON_TYPE)
            else:
                await self._relay(ctx, call, admitted, receive, send)
        except GatewayError as error:
            await self._fail(ctx, admitted, send, error)
        except ClientGone:
            ctx.row.end_reason = "client_gone"
            ctx.row.status = 499
            await self._settle(ctx, admitted)
        except asyncio.CancelledError:
            # the server gave up on the request (a shutdown past its grace period):
            # still release what it holds, charge what it delivered, and log it
            if not ctx.settled:
                ctx.row.end_reason = ctx.row.end_reason or "client_gone"
                ctx.row.status = ctx.row.status or 499
                await asyncio.shield(self._settle(ctx, admitted))
            raise
        except Exception:
            log.exception("request failed", path=scope.get("path"))
            error = InternalError(f"The gateway failed to handle the request (request id: {ctx.request_id}).")
            await self._fail(ctx, admitted, send, error)

    # --- answering -----------------------------------------------------------

    async def _respond(self, ctx: RequestContext, admitted: list, send, status: int, body: bytes, content_type: bytes) -> None:
        ctx.row.status = status
        ctx.row.end_reason = ctx.row.end_reason or "done"
        await self._settle(ctx, admitted)
        await send_body(send, status, body, content_type, ctx.response_headers)

    async def _fail(self, ctx: RequestContext, admitted: list, send, error: GatewayError) -> None:
        rendered = self.protocol.render_error(error, ctx.request_id)
        row = ctx.row
        row.status = rendered.status
        row.error_type = error.kind
        row.error_message = error.message
        if error.upstream_status is not None:
            row.upstream_status = error.upstream_status
            row.upstream_error = error.upstream_body
        await self._settle(ctx, admitted)
        headers = ctx.response_headers + encode_headers(rendered.headers)
        if error.retry_after is not None:
            headers.append((b"retry-after", str(max(1, round(error.retry_after))).encode()))
        await send_body(send, rendered.status, rendered.body, rendered.content_type.encode(), headers)

    async def _settle(self, ctx: RequestContext, admitted: list) -> None:
        """Release what the policies hold, settle the charge and record the request,
        durably, once."""
        if ctx.settled:
            return
        ctx.settled = True
        services = self.services
        ctx.row.duration_ms = ctx.elapsed_ms()
        try:
            await services.pipeline.finish(admitted, ctx, services)
        finally:
            await services.recorder.record(ctx)

    # --- calling upstream ----------------------------------------------------

    async def _relay(self, ctx: RequestContext, call: Call, admitted: list, receive, send) -> None:
        services = self.services
        try:
            targets = await services.router.candidates(ctx.key, call.model, call.endpoint)
        except NotFoundError as error:
            answer = await self.protocol.answer_locally(call) if error.code == UNSUPPORTED_ENDPOINT else None
            if answer is None:
                raise
            ctx.row.estimated = answer.estimated
            ctx.response_headers.extend(encode_headers(dict(answer.headers)))
            await self._respond(ctx, admitted, send, 200, answer.body, answer.content_type.encode())
            return
        request: ChatRequest | None = None
        last_error: GatewayError | None = None
        for attempt, target in enumerate(targets[: services.config.max_attempts]):
            channel_type = services.registry.channel_types[target.channel.type]
            passthrough = channel_type.wire(call.endpoint) == call.wire
            if not passthrough and request is None:
                request = self.protocol.to_core(call)
            exchange = Exchange(
                call=call,
                target=target,
                request=None if passthrough else request,
                session=services.session,
                timeouts=services.config.timeouts,
                request_id=ctx.request_id,
            )
            row = ctx.row
            row.channel_id, row.channel_name = target.channel.id, target.channel.name
            row.upstream_model = target.upstream_model
            started = time.perf_counter()
            try:
                reply = await channel_type.send(exchange)
            except GatewayError as error:
                row.attempts.append(_attempt(target, started, error))
                last_error = error
                if error.retryable and attempt + 1 < min(len(targets), services.config.max_attempts):
                    continue
                raise
            row.attempts.append(_attempt(target, started, None))
            if isinstance(reply, StreamReply):
                await self._stream(ctx, call, reply, passthrough, admitted, receive, send)
            else:
                await self._complete(ctx, call, reply, passthrough, admitted, send)
            return
        raise last_error or InternalError("no channel was tried")

    async def _complete(self, ctx: RequestContext, call: Call, reply: JsonReply, passthrough: bool, admitted: list, send) -> None:
        if passthrough and reply.body is not None:
            body = self.protocol.passthrough_body(call, reply.body)
        else:
            body = self.protocol.render_response(call, reply.response)
        usage = reply.usage or (reply.response.usage if reply.response else None)
        self._count(ctx, usage, output_chars=_response_chars(reply) if usage is None else 0)
        ctx.row.first_token_ms = ctx.elapsed_ms()
        await self._respond(ctx, admitted, send, 200, body, reply.content_type.encode())

    async def _stream(self, ctx: RequestContext, call: Call, reply: StreamReply, passthrough: bool, admitted: list, receive, send) -> None:
        writer = self.protocol.stream_writer(call, passthrough)
        tally = StreamTally(ctx.started)
        await send({"type": "http.response.start", "status": 200, "headers": stream_headers(writer.content_type) + ctx.response_headers})
        pump = asyncio.ensure_future(_pump(reply, writer, tally, send))
        watcher = asyncio.ensure_future(wait_for_disconnect(receive))
        error: GatewayError | None = None
        try:
            done, _ = await asyncio.wait((pump, watcher), return_when=asyncio.FIRST_COMPLETED)
            if pump in done:
                error = pump.result()
                end_reason = "done" if error is None else ("timeout" if isinstance(error, UpstreamTimeoutError) else "upstream_error")
            else:
                pump.cancel()
                await asyncio.gather(pump, return_exceptions=True)
                end_reason = "client_gone"
        except asyncio.CancelledError:
            ctx.row.end_reason = "client_gone"
            self._count(ctx, tally.usage, output_chars=tally.output_chars)
            raise
        finally:
            watcher.cancel()
            if not pump.done():
                pump.cancel()
            await reply.close()
        row = ctx.row
        row.end_reason = end_reason
        row.first_token_ms = tally.first_token_ms()
        row.status = 200 if end_reason != "client_gone" else 499
        if error is not None:
            row.error_type, row.error_message = error.kind, error.message
            row.upstream_status, row.upstream_error = error.upstream_status, error.upstream_body
        self._count(ctx, tally.usage, output_chars=tally.output_chars)
        await self._settle(ctx, admitted)
        if end_reason == "client_gone":
            return
        tail = writer.end() if error is None else writer.fail(error, ctx.request_id)
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    def _count(self, ctx: RequestContext, usage: Usage | None, output_chars: int) -> None:
        row = ctx.row
        if usage is not None:
            row.input_tokens = usage.input_tokens
            row.output_tokens = usage.output_tokens
            row.cached_tokens = usage.cached_input_tokens
            row.cache_write_tokens = usage.cache_write_tokens
            row.estimated = False
        else:
            row.input_tokens = ctx.estimated_input_tokens()
            row.output_tokens = estimate_tokens(output_chars)
            row.estimated = True


async def _pump(reply: StreamReply, writer: StreamWriter, tally: StreamTally, send) -> GatewayError | None:
    """Forward every frame as it comes; return the error that broke the stream, if any."""
    try:
        async for frame in reply.frames:
            tally.observe(frame.events)
            data = writer.write(frame)
            if data:
                await send({"type": "http.response.body", "body": data, "more_body": True})
    except GatewayError as error:
        return error
    except Exception:  # a bug in a translation must still end the stream properly
        log.exception("stream failed")
        return InternalError("The gateway failed while streaming the answer.")
    if not tally.finished:
        return UpstreamError("the upstream ended the stream before it finished")
    return None


def _attempt(target, started: float, error: GatewayError | None) -> dict[str, Any]:
    attempt: dict[str, Any] = {
        "channel": target.channel.name,
        "channel_id": target.channel.id,
        "latency_ms": round((time.perf_counter() - started) * 1000.0, 2),
        "status": 200 if error is None else (error.upstream_status or error.status),
    }
    if error is not None:
        attempt["error"] = error.message[:300]
    return attempt


def _response_chars(reply: JsonReply) -> int:
    if reply.response is not None:
        return sum(len(getattr(p, "text", "") or getattr(p, "arguments", "")) for p in reply.response.parts)
    # no usage and no parsed answer: the body's length bounds its content
    return len(reply.body) if reply.body is not None else 0

