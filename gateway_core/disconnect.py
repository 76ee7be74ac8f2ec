"""Noticing that the client hung up while the gateway waits for an upstream.

One watcher task per request reads ``receive()`` (the request body has been
read already, so the next message is ``http.disconnect``). While the relay
awaits the upstream inside :meth:`DisconnectWatch.run`, a disconnect cancels the
request's own task at once — cancelling the upstream call with it, which closes
its connection — and ``run`` raises :class:`~gateway_core.asgi.ClientGone`.
Outside ``run`` a disconnect is only noted (``gone``). Cancelling the request's
own task (rather than racing a second task with ``asyncio.wait``) keeps the
cost per request to one small task; ``Task.uncancel`` tells our cancellation
from the server's (a shutdown past its grace period), which still propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from .asgi import ClientGone

T = TypeVar("T")


class DisconnectWatch:
    __slots__ = ("gone", "_armed", "_cancelled", "_task", "_watcher")

    def __init__(self, receive, *, enabled: bool = True) -> None:
        """``enabled=False``: watch nothing (someone else reads ``receive``)."""
        self.gone = False
        self._armed = False
        self._cancelled = False  # the watcher cancelled the request's task
        self._task = asyncio.current_task()
        self._watcher = asyncio.ensure_future(self._watch(receive)) if enabled else None

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
        if self._watcher is not None:
            self._watcher.cancel()
