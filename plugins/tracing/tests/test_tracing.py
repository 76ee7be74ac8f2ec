"""OpenTelemetry spans through real HTTP, caught by the SDK's in-memory exporter: the
request's span continues the client's traceparent, each upstream attempt is a child
span, and the trace context reaches an upstream only when its channel forwards it."""

from __future__ import annotations

import asyncio

import openai
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from gateway_core.config import Config
from gateway_core.testing import FakeUpstream, GatewayProcess
from gateway_core import hookimpl
from relaygate_tracing import Tracing, tracing_requested
from gateway_openai.fake_upstream import Fault, FakeOpenAI

MODEL = "gpt-traced"
CHAT = [{"role": "user", "content": "trace me"}]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


class ProviderTracing:
    """Tracing to the test's own provider, registered as an embedder would (``register_observers``)."""

    def __init__(self, provider) -> None:
        self.provider = provider

    @hookimpl
    def register_observers(self, register):
        register(lambda gateway: Tracing(self.provider))


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai",))


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
async def world(seed, fake_upstream):
    """A primary channel that does not forward the trace context, a backup that does."""
    primary, backup = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL], settings={"forward_traceparent": True})
    seed.price(MODEL, 1_000_000, 2_000_000)
    user = seed.user("alice", balance_usd=5)
    key_id, secret = seed.key(user)
    return primary, backup, key_id, secret


def client(gateway, secret: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, default_headers=headers or None)


def header(upstream: FakeOpenAI, name: str) -> str | None:
    return upstream.requests[-1]["headers"].get(name)


async def test_a_request_span_continues_the_client_trace_with_a_child_per_attempt(world, spans, start_gateway, seed):
    primary, backup, key_id, secret = world
    provider, exporter = spans
    gateway = start_gateway(extra_plugins=[ProviderTracing(provider)])
    primary.fail_next(Fault(status=500))
    answer = await client(gateway, secret, traceparent=TRACEPARENT, tracestate="vendor=1").chat.completions.create(model=MODEL, messages=CHAT)
    assert answer.choices[0].message.content == "echo: trace me"

    finished = exporter.get_finished_spans()
    request = next(s for s in finished if s.kind is SpanKind.SERVER)
    attempts = sorted((s for s in finished if s.kind is SpanKind.CLIENT), key=lambda s: s.start_time)
    assert len(finished) == 3 and len(attempts) == 2
    assert format(request.context.trace_id, "032x") == TRACE_ID  # the client's trace, continued
    assert request.parent is not None and format(request.parent.span_id, "016x") == PARENT_ID
    assert request.name == "openai chat"
    row = seed.rows("SELECT * FROM usage_logs")[0]
    attributes = request.attributes
    assert attributes["relaygate.model"] == MODEL and attributes["relaygate.key_id"] == key_id
    assert attributes["http.response.status_code"] == 200 and attributes["relaygate.protocol"] == "openai"
    assert (attributes["relaygate.input_tokens"], attributes["relaygate.output_tokens"]) == (row["input_tokens"], row["output_tokens"])
    assert attributes["relaygate.cost_micros"] == row["cost_micros"] > 0
    assert attributes["relaygate.request_id"] == row["request_id"]
    assert request.status.status_code is StatusCode.UNSET

    failed, answered = attempts
    for span in attempts:
        assert span.parent is not None and span.parent.span_id == request.context.span_id
        assert span.context.trace_id == request.context.trace_id
        assert request.start_time <= span.start_time <= span.end_time <= request.end_time
    assert (failed.attributes["relaygate.channel"], failed.attributes["http.response.status_code"]) == ("primary", 500)
    assert failed.status.status_code is StatusCode.ERROR
    assert (answered.attributes["relaygate.channel"], answered.attributes["http.response.status_code"]) == ("backup", 200)
    assert answered.attributes["relaygate.latency_ms"] > 0

    # the primary does not forward the trace context; the backup gets its own attempt's span as parent
    assert header(primary, "traceparent") is None and header(primary, "tracestate") is None
    assert header(backup, "traceparent") == f"00-{TRACE_ID}-{format(answered.context.span_id, '016x')}-01"
    assert header(backup, "tracestate") == "vendor=1"


async def test_a_refused_request_has_its_span_and_no_attempt(world, spans, start_gateway):
    provider, exporter = spans
    gateway = start_gateway(extra_plugins=[ProviderTracing(provider)])
    with pytest.raises(openai.AuthenticationError):
        await client(gateway, "sk-not-a-key").chat.completions.create(model=MODEL, messages=CHAT)
    (span,) = exporter.get_finished_spans()
    assert span.kind is SpanKind.SERVER and span.parent is None  # no traceparent: a new trace
    assert span.attributes["http.response.status_code"] == 401
    assert span.attributes["error.type"] == "authentication"


async def test_without_tracing_only_a_forwarding_channel_gets_the_client_traceparent(world, start_gateway):
    primary, backup, _, secret = world
    gateway = start_gateway()
    traced = client(gateway, secret, traceparent=TRACEPARENT)
    await traced.chat.completions.create(model=MODEL, messages=CHAT)
    assert header(primary, "traceparent") is None  # the primary answered: never forwarded
    primary.fail_next(Fault(status=503))
    await traced.chat.completions.create(model=MODEL, messages=CHAT)
    assert header(backup, "traceparent") == TRACEPARENT  # passed on as it came


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
    ],
)
def test_tracing_is_off_unless_the_environment_asks_for_it(environ, on):
    assert tracing_requested(environ) is on


class Collector(FakeUpstream):
    """An OTLP/HTTP trace collector on loopback: keeps every export it receives."""

    def __init__(self) -> None:
        super().__init__(api_key=None)
        self.exports: list[ExportTraceServiceRequest] = []

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/traces", self.traces)

    async def traces(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        self.exports.append(export)
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(), content_type="application/x-protobuf")


async def test_the_otel_environment_sends_spans_to_an_otlp_collector(world, fake_upstream, relaygate_config, tmp_path):
    _, _, _, secret = world
    collector = await fake_upstream(Collector())
    plugins = tmp_path / "plugins.toml"
    plugins.write_text('load = ["openai"]\n')
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_SERVICE_NAME": "relaygate-traced", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins), env=env) as gateway:
        await client(gateway, secret, traceparent=TRACEPARENT).chat.completions.create(model=MODEL, messages=CHAT)
        for _ in range(100):
            if collector.exports:
                break
            await asyncio.sleep(0.1)
    spans = {}
    services = set()
    for export in collector.exports:
        for resource_spans in export.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            for scope_spans in resource_spans.scope_spans:
                spans.update((span.name, span) for span in scope_spans.spans)
    assert services == {"relaygate-traced"}
    assert set(spans) == {"openai chat", "upstream attempt"}
    assert spans["openai chat"].trace_id.hex() == TRACE_ID
    assert spans["upstream attempt"].parent_span_id == spans["openai chat"].span_id
