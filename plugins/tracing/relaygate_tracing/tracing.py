"""OpenTelemetry traces: a span per request, a child span per upstream attempt.

Off unless the standard ``OTEL_*`` environment asks for traces
(``OTEL_TRACES_EXPORTER``, not ``none``, or an ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; ``OTEL_SDK_DISABLED=true`` turns it off):
then spans go through a batching OTLP/HTTP exporter that reads its own settings
(endpoint, headers, timeout) from that environment, and the resource from
``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``. The SDK is imported only
then. It is an observer of the request path (:mod:`gateway_core.observers`),
registered through ``register_observers`` (:mod:`.plugin`); an embedder
registers a ``Tracing`` of its own provider the same way (tests use the SDK's
in-memory exporter).

The request's span continues the client's W3C ``traceparent`` (and
``tracestate``). Nothing of it goes upstream unless the channel's
``forward_traceparent`` setting is on: then the attempt's own span is the
upstream's parent (without tracing, the client's header is passed on as it came).

Costs on the request path: none when off (one settings lookup per attempt);
when on, the spans are made at the attempt's start (its context may have to go
upstream) and ended, with their attributes, by the request's settlement.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gateway_core.config import ConfigError
from gateway_core.observers import Observer

if TYPE_CHECKING:
    from gateway_core.channel_type import Target
    from gateway_core.request.context import RequestContext
    from gateway_core.request.outcome import Outcome
    from gateway_core.records import UsageRow


def tracing_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the ``OTEL_*`` environment asks for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def tracing_from_env() -> Tracing | None:
    """Tracing as the environment configures it, or ``None`` (off)."""
    if not tracing_requested():
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:  # a dependency of this distribution, removed since
        raise ConfigError(
            f"OpenTelemetry tracing is configured (OTEL_*) but its packages are missing ({exc.name}): "
            "pip install 'relaygate[tracing]'"
        ) from None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "relaygate"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return Tracing(provider, owned=True)


class RequestTrace:
    """The spans of one request: its own (made at its first attempt or its end)
    and one per upstream attempt, in the order of ``ctx.attempts``."""

    __slots__ = ("span", "attempts")

    def __init__(self, span: Any) -> None:
        self.span = span
        self.attempts: list[tuple[Any, int]] = []  # (span, start in ns)


class Tracing(Observer):
    def __init__(self, provider: Any, *, owned: bool = False) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = provider
        self.owned = owned  # made here from the environment: shut down with the app
        self.tracer = provider.get_tracer("relaygate")
        self.propagator = TraceContextTextMapPropagator()
        self._kinds = SpanKind
        self._error = Status(StatusCode.ERROR)
        self._in_context = set_span_in_context

    def _request_trace(self, ctx: RequestContext) -> RequestTrace:
        trace: RequestTrace | None = ctx.trace
        if trace is None:
            parent = self.propagator.extract(ctx.headers)
            name = f"{ctx.protocol.name} {ctx.endpoint}".strip()
            span = self.tracer.start_span(name, context=parent, kind=self._kinds.SERVER, start_time=int(ctx.started_at * 1e9))
            trace = ctx.trace = RequestTrace(span)
        return trace

    def attempt_started(self, ctx: RequestContext, target: Target, forward: bool) -> Mapping[str, str] | None:
        """Start the span of an upstream attempt; the headers that carry it upstream
        when the channel forwards the trace context."""
        trace = self._request_trace(ctx)
        started = time.time_ns()
        span = self.tracer.start_span(
            "upstream attempt", context=self._in_context(trace.span), kind=self._kinds.CLIENT, start_time=started,
            attributes={"relaygate.channel": target.channel.name, "relaygate.channel_id": target.channel.id},
        )  # fmt: skip
        trace.attempts.append((span, started))
        if not forward:
            return None
        carrier: dict[str, str] = {}
        self.propagator.inject(carrier, context=self._in_context(span))
        return carrier

    def finished(self, ctx: RequestContext, outcome: Outcome, row: UsageRow) -> None:
        """End the request's spans with what its settlement knows."""
        trace = self._request_trace(ctx)
        now = time.time_ns()
        for index, (span, started) in enumerate(trace.attempts):
            attempt = row.attempts[index] if index < len(row.attempts) else {}
            latency_ms = attempt.get("latency_ms")
            status = attempt.get("status")
            if status is not None:
                span.set_attribute("http.response.status_code", status)
            if latency_ms is not None:
                span.set_attribute("relaygate.latency_ms", latency_ms)
            if "error" in attempt:
                span.set_status(self._error)
                span.set_attribute("error.message", attempt["error"])
            span.end(end_time=started + int(latency_ms * 1e6) if latency_ms is not None else now)
        span = trace.span
        attributes: dict[str, Any] = {
            "relaygate.request_id": row.request_id,
            "relaygate.protocol": row.protocol,
            "relaygate.endpoint": row.endpoint,
            "http.response.status_code": row.status,
            "relaygate.input_tokens": row.input_tokens,
            "relaygate.output_tokens": row.output_tokens,
            "relaygate.cached_tokens": row.cached_tokens,
            "relaygate.cost_micros": row.cost_micros,
            "relaygate.stream": row.stream,
            "relaygate.attempts": len(row.attempts),
        }
        optional = {"relaygate.model": row.model, "relaygate.key_id": row.key_id, "relaygate.channel": row.channel_name,
                    "relaygate.end_reason": row.end_reason, "error.type": row.error_type}  # fmt: skip
        attributes.update((name, value) for name, value in optional.items() if value is not None)
        span.set_attributes(attributes)
        if row.status >= 500 or (outcome.error is not None and row.status < 400):
            span.set_status(self._error)
        span.end(end_time=now)

    async def close(self) -> None:
        """Export what is pending and stop (a provider made here only)."""
        if self.owned:
            import asyncio  # here: an app alone closes a tracer

            await asyncio.to_thread(self.provider.shutdown)
