"""Observers of the request path: the ``register_observers`` hook.

An :class:`Observer` is told what happens to each request (started, its
upstream attempts, its stream's start and end, finished with its outcome and
usage row) and to channels' breakers. Its methods run inline on the event
loop, on the hot path: they must be quick, never block, never raise. Each is a
no-op here; the gateway calls only the methods an observer overrides. The
core registers none: the first-party plugins ``relaygate-metrics``
(Prometheus, ``GET /metrics``) and ``relaygate-tracing`` (OpenTelemetry, when
the ``OTEL_*`` environment asks for traces) register theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .channel_type import Target
    from .request.context import RequestContext
    from .gateway import Gateway
    from .request.outcome import Outcome
    from .records import UsageRow


class Observer:
    """Told of the request path's events; override what you need."""

    def started(self, ctx: RequestContext) -> None:
        """A request arrived (before its key is read); ``finished`` follows, once."""

    def attempt_started(self, ctx: RequestContext, target: Target, forward: bool) -> Mapping[str, str] | None:
        """An upstream attempt is about to be sent to ``target``. ``forward``: the channel's
        ``forward_traceparent`` is on; return the trace headers the attempt carries then
        (the first observer's that returns some; ``None``: nothing to add)."""
        return None

    def stream_started(self, ctx: RequestContext) -> None:
        """The response stream to the client began."""

    def stream_ended(self, ctx: RequestContext) -> None:
        """The response stream ended (done, cut, the client gone)."""

    def finished(self, ctx: RequestContext, outcome: Outcome, row: UsageRow) -> None:
        """The request settled: its outcome and its usage row (recorded, or on its way)."""

    def breaker_changed(self, channel: str, key: str, is_open: bool) -> None:
        """A breaker of ``channel`` opened or closed (``key``: ``"channel"`` or the upstream key's position)."""

    def start(self) -> None:
        """The gateway starts serving (a task may be started here)."""

    async def close(self) -> None:
        """The gateway stops: export what is pending."""


MakeObserver = Callable[["Gateway"], "Observer | None"]
"""What ``register_observers`` registers: the observer of one app (``None``: off for this one)."""
