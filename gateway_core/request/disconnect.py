"""Noticing that the client hung up while the gateway waits for an upstream.

A watcher task reads ``receive()`` (the request body has been read already, so
the next message is ``http.disconnect``). While the relay awaits the upstream
inside :meth:`DisconnectWatch.run`, a disconnect cancels the request's own task
at once — cancelling the upstream call with it, which closes its connection —
and ``run`` raises :class:`~gateway_core.base.asgi.ClientGone`. Outside ``run`` a
disconnect is only noted (``gone``). ``Task.uncancel`` tells our cancellation
from the server's (a shutdown past its grace period), which still propagates.

Cost: the watcher task starts only once the request has taken ``delay`` seconds
(0.1 by default, up to a tick of :mod:`~gateway_core.base.coarse_timers` more) — a
coarse timer until then. A request answered sooner (most of the
gateway's own overhead benchmark) never pays for a task, and an upstream call a
client abandons earlier is cancelled when the watcher starts, since the
disconnect waits for it in ``receive``. Cancelling the request's own task rather
than racing a second task with ``asyncio.wait`` keeps the rest cheap too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from ..base.asgi import ClientGone
from ..base.coarse_timers import Timer, timers_of

T = TypeVar("T")
WATCH_DELAY = 0.1  # seconds before a request's watcher task starts


class DisconnectWatch:
    __slots__ = ("gone", "_armed", "_cancelled", "_task", "_watcher", "_timers", "_timer", "_receive")

    def __init__(self, receive, *, enabled: bool = True, delay: float = WATCH_DELAY) -> None:
        """``enabled=False``: watch nothing (someone else reads ``receive``)."""
        self.gone = False
        self._armed = False
        self._cancelled = False  # the watcher cancelled the request's task
        self._task = asyncio.current_task()
        self._receive = receive
        self._watcher: asyncio.Task | None = None
        self._timers = timers_of(asyncio.get_running_loop())
        self._timer: Timer | None = self._timers.after(delay, self._start) if enabled else None

    def _start(self) -> None:
        self._timer = None
        self._watcher = asyncio.ensure_future(self._watch(self._receive))

    async def _watch(self, receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                if self._armed and self._task is not None:
                    self._cancelled = True
                    self._task.cancel()
                return

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``; raise ``ClientGone`` (after cancelling it) if the
        client disconnects first."""
        if self.gone:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise ClientGone()
        self._armed = True
        try:
            result = await awaitable
        except asyncio.CancelledError:
            self._armed = False
            if self._cancelled and self._task.uncancel() == 0:  # type: ignore[union-attr]
                raise ClientGone() from None
            raise
        finally:
            self._armed = False
        if self._cancelled:  # the awaitable swallowed our cancellation
            self._task.uncancel()  # type: ignore[union-attr]
            raise ClientGone()
        return result

    def close(self) -> None:
        self._armed = False
        if self._timer is not None:
            self._timers.cancel(self._timer)
            self._timer = None
        if self._watcher is not None:
            self._watcher.cancel()
