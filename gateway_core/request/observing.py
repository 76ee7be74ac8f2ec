"""The observers of one app, told each event in turn (only those that override its method)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..channel_settings import FORWARD_TRACEPARENT
from ..channel_type import NO_HEADERS
from ..observers import Observer

if TYPE_CHECKING:
    from ..channel_type import Target
    from .context import RequestContext
    from .outcome import Outcome
    from ..records import UsageRow

TRACE_HEADERS = ("traceparent", "tracestate")
O = TypeVar("O", bound=Observer)


def _overriding(observers: tuple[Observer, ...], name: str) -> tuple[Any, ...]:
    base = getattr(Observer, name)
    return tuple(getattr(observer, name) for observer in observers if getattr(type(observer), name) is not base)


class Observers:
    __slots__ = ("all", "_started", "_attempt", "_stream_started", "_stream_ended", "_finished", "_breaker")

    def __init__(self, observers: Iterable[Observer] = ()) -> None:
        self.all = tuple(observers)
        self._started = _overriding(self.all, "started")
        self._attempt = _overriding(self.all, "attempt_started")
        self._stream_started = _overriding(self.all, "stream_started")
        self._stream_ended = _overriding(self.all, "stream_ended")
        self._finished = _overriding(self.all, "finished")
        self._breaker = _overriding(self.all, "breaker_changed")

    def find(self, kind: type[O]) -> O | None:
        """The first observer of ``kind`` (the metrics endpoint finds the metrics so)."""
        return next((observer for observer in self.all if isinstance(observer, kind)), None)

    def started(self, ctx: RequestContext) -> None:
        for started in self._started:
            started(ctx)

    def stream_started(self, ctx: RequestContext) -> None:
        for stream_started in self._stream_started:
            stream_started(ctx)

    def stream_ended(self, ctx: RequestContext) -> None:
        for stream_ended in self._stream_ended:
            stream_ended(ctx)

    def finished(self, ctx: RequestContext, outcome: Outcome, row: UsageRow) -> None:
        for finished in self._finished:
            finished(ctx, outcome, row)

    def breaker_changed(self, channel: str, key: str, is_open: bool) -> None:
        for changed in self._breaker:
            changed(channel, key, is_open)

    def trace_headers(self, ctx: RequestContext, target: Target) -> Mapping[str, str]:
        """The trace headers an upstream attempt sends: none unless the channel's
        ``forward_traceparent`` is on: then an observer's (a tracer's attempt span),
        else the client's as they came. Every observer is told of the attempt."""
        settings = target.channel.settings
        forward = bool(settings) and settings.get(FORWARD_TRACEPARENT.name) is not None and FORWARD_TRACEPARENT.read(settings)
        carried: Mapping[str, str] | None = None
        for attempt_started in self._attempt:
            headers = attempt_started(ctx, target, forward)
            if carried is None and headers is not None:
                carried = headers
        if not forward:
            return NO_HEADERS
        if carried is not None:
            return carried
        return {name: value for name in TRACE_HEADERS if (value := ctx.headers.get(name))}

    def start(self) -> None:
        for observer in self.all:
            observer.start()

    async def close(self) -> None:
        for observer in self.all:
            await observer.close()
