"""The gateway's metrics recorder: one per app, fed at the few places each fact is known.

- :meth:`Metrics.finished`, called by the settlement of every request with its
  outcome and usage-log row: requests, errors by kind, latency, time to first
  token, each upstream attempt, failovers and retries, tokens and cost;
- :meth:`Metrics.started` / :meth:`Metrics.stream_started` /
  :meth:`Metrics.stream_ended`: what is in flight;
- :meth:`Metrics.breaker`: a circuit breaker opening or closing (the health board);
- :meth:`Metrics.committed`: a store write made durable (the store's writer);
- the scrape (:mod:`.endpoint`): store and Redis round
  trips, money held.

The request path only updates plain counts (:mod:`.counts`); they reach
prometheus-client before each scrape and, with several worker processes
(:mod:`.multiprocess`), every second.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gateway_core.observers import Observer

from .counts import Counts
from .families import COUNTER, FAMILIES, GAUGE, HISTOGRAM
from .multiprocess import forget_dead_workers, leave, shared_folder

if TYPE_CHECKING:
    from gateway_core.request.context import RequestContext
    from gateway_core.request.outcome import Outcome
    from gateway_core.records import UsageRow

FLUSH_INTERVAL = 1.0  # seconds between two flushes of a worker's counts (several workers)
_STATUS_CLASS = ("1xx", "1xx", "2xx", "3xx", "4xx", "5xx")
UPSTREAM_KINDS = frozenset(("upstream", "timeout", "unavailable"))
OTHER_MODEL = "other"


class Metrics(Observer):
    """The metrics of one app, an observer of its request path. ``known_model`` says whether a model is one a
    channel serves (others are counted as ``other``); ``backlog`` gives the
    store's writes not yet durable."""

    def __init__(self, *, known_model: Callable[[str], bool] = lambda model: True) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        disable_created_metrics()  # no *_created series: one process or several workers export the same names
        self.folder = shared_folder()
        self.registry = CollectorRegistry(auto_describe=True)
        self.instruments: dict[str, Any] = {}
        for family in FAMILIES:
            name, text, labels, registry = family.name, family.help, family.labels, self.registry
            if family.kind == COUNTER:
                self.instruments[name] = Counter(name, text, labels, registry=registry)
            elif family.kind == HISTOGRAM:
                self.instruments[name] = Histogram(name, text, labels, registry=registry, buckets=family.buckets)
            elif family.kind == GAUGE:
                self.instruments[name] = Gauge(name, text, labels, registry=registry, multiprocess_mode=family.mode)  # type: ignore[arg-type]
        self._bounds = {f.name: f.buckets for f in FAMILIES if f.kind == HISTOGRAM}
        self.counts = Counts(self._bounds)
        self.known_model = known_model
        self.backlog: Callable[[], int] | None = None
        self.store_kind = ""
        self.in_flight = 0
        self.exported_faults: dict[tuple[str, str], int] = {}  # services.shared.unreachable counts already exported
        self.streams = 0
        self._task: asyncio.Task[None] | None = None

    # --- the request path ---------------------------------------------------------

    def started(self, ctx: RequestContext) -> None:
        self.in_flight += 1

    def stream_started(self, ctx: RequestContext) -> None:
        self.streams += 1

    def stream_ended(self, ctx: RequestContext) -> None:
        self.streams -= 1

    def finished(self, ctx: RequestContext, outcome: Outcome, row: UsageRow) -> None:
        """Count one settled request (once per request: its settlement calls it)."""
        self.in_flight -= 1
        counts = self.counts
        key = ctx.key
        group = key.group if key is not None else ""
        model = row.model or ""
        if model and ctx.target is None and not self.known_model(model):
            model = OTHER_MODEL
        channel = row.channel_name or ""
        status = row.status
        status_class = _STATUS_CLASS[status // 100] if 100 <= status < 600 else "other"
        protocol, endpoint = row.protocol, row.endpoint
        counts.add("relaygate_requests_total", (protocol, endpoint, model, channel, status_class, group))
        counts.observe("relaygate_request_duration_seconds", (protocol, endpoint, model, status_class), row.duration_ms / 1000.0)
        if row.first_token_ms is not None:
            counts.observe("relaygate_time_to_first_token_seconds", (protocol, model, channel), row.first_token_ms / 1000.0)
        if outcome.error is not None or status >= 400:
            kind, policy = error_kind(ctx, outcome)
            counts.add("relaygate_errors_total", (protocol, endpoint, kind, policy))
            if policy == "rate_limit" and status == 429:
                counts.add("relaygate_rate_limit_refusals_total", (group,))
        if row.input_tokens:
            counts.add("relaygate_tokens_total", (model, channel, group, "input"), row.input_tokens)
        if row.output_tokens:
            counts.add("relaygate_tokens_total", (model, channel, group, "output"), row.output_tokens)
        if row.cached_tokens:
            counts.add("relaygate_tokens_total", (model, channel, group, "cached"), row.cached_tokens)
        if row.cost_micros:
            counts.add("relaygate_cost_micro_usd_total", (model, channel, group), row.cost_micros)
        if row.attempts:
            self._attempts(row.attempts)

    def _attempts(self, attempts: list[dict[str, Any]]) -> None:
        counts = self.counts
        previous: dict[str, Any] | None = None
        for attempt in attempts:
            status = attempt.get("status") or 0
            status_class = _STATUS_CLASS[status // 100] if 100 <= status < 600 else "other"
            channel = attempt.get("channel") or ""
            counts.observe("relaygate_upstream_attempt_duration_seconds", (channel, status_class), (attempt.get("latency_ms") or 0.0) / 1000.0)
            if previous is not None:
                same = previous.get("channel_id") == attempt.get("channel_id")
                counts.add("relaygate_retries_total" if same else "relaygate_failovers_total", (previous.get("channel") or "",))
            previous = attempt

    # --- elsewhere ------------------------------------------------------------------

    def breaker_changed(self, channel: str, key: str, is_open: bool) -> None:
        """A breaker of ``channel`` (``key``: ``channel`` or the key's position) opened or closed."""
        self.instruments["relaygate_breaker_open"].labels(channel, key).set(1 if is_open else 0)

    def committed(self, seconds: float) -> None:
        """A store write became durable after ``seconds`` (any thread)."""
        self.instruments["relaygate_store_commit_seconds"].labels(self.store_kind).observe(seconds)

    def watch_store(self, store: object, kind: str) -> None:
        """Count ``store``'s write backlog and commit times (when it tells them)."""
        self.store_kind = kind
        backlog = getattr(store, "write_backlog", None)
        self.backlog = backlog if callable(backlog) else None
        if hasattr(store, "on_commit"):
            store.on_commit = self.committed

    # --- flushing and exposing ------------------------------------------------------

    def flush(self) -> None:
        """Hand what was counted to prometheus-client, and set the gauges."""
        counts, self.counts = self.counts, Counts(self._bounds)
        counts.apply(self.instruments)
        instruments = self.instruments
        instruments["relaygate_requests_in_flight"].set(self.in_flight)
        instruments["relaygate_streams_in_flight"].set(self.streams)
        if self.backlog is not None:
            instruments["relaygate_store_write_backlog"].labels(self.store_kind).set(self.backlog())

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format: this process's, or with several
        workers the sum of all of theirs."""
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.multiprocess import MultiProcessCollector

        self.flush()
        if self.folder is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, self.folder)
        return generate_latest(registry)

    def start(self) -> None:
        """With several workers: flush every second (another worker may answer the scrape)."""
        if self.folder is not None and self._task is None:
            forget_dead_workers(self.folder)
            self._task = asyncio.ensure_future(self._flush_often())

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.folder is not None:
            self.flush()
            leave(self.folder)

    async def _flush_often(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL)
            self.flush()


def error_kind(ctx: RequestContext, outcome: Outcome) -> tuple[str, str]:
    """How a failed request counts: ``(kind, policy)``, kind being ``client``,
    ``policy`` (with the refusing policy's name), ``upstream`` or ``gateway``."""
    error = outcome.error
    if error is None:
        return ("client", "") if outcome.status < 500 else ("gateway", "")
    status = error.status
    if error.kind == "internal" or error.code == "store_unavailable":
        return "gateway", ""
    if ctx.refused_by is not None:
        return ("policy", ctx.refused_by) if status < 500 else ("gateway", "")
    if error.kind in UPSTREAM_KINDS:
        return "upstream", ""
    return ("client", "") if status < 500 else ("gateway", "")
