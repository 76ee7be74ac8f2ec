"""Ending a stream whose client stopped reading.

A stream's writes wait for the client (the server applies backpressure: a write
returns once the socket took the bytes), so a client that reads slowly holds the
upstream back rather than filling the gateway's memory. One that stops reading
would hold the stream, its upstream connection and its concurrency slot for
ever: :class:`WriteDeadline` cancels the request's task when one write has
waited ``write_timeout`` seconds, and the relay ends the stream, billing what
was delivered.

Cost: a timer per stream that wakes every ``timeout`` seconds (re-armed for what
is left of a write in progress), and per write two attribute stores and a read
of the loop's clock — no task, no timeout context per write.
"""

from __future__ import annotations

import asyncio
from typing import Any


class WriteDeadline:
    __slots__ = ("timeout", "expired", "_send", "_since", "_loop", "_task", "_timer")

    def __init__(self, send, timeout: float) -> None:
        """``send`` is the ASGI send to watch; ``timeout`` 0 watches nothing."""
        self.timeout = timeout
        self.expired = False  # a write waited past the timeout: the task was cancelled
        self._send = send
        self._since = 0.0  # loop time the write in progress began (0: none)
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._timer = self._loop.call_later(timeout, self._check) if timeout > 0 else None

    async def send(self, message: dict[str, Any]) -> None:
        self._since = self._loop.time()
        try:
            await self._send(message)
        finally:
            self._since = 0.0

    def _check(self) -> None:
        since, now = self._since, self._loop.time()
        if since and now - since >= self.timeout:
            self._timer = None
            self.expired = True
            if self._task is not None:
                self._task.cancel()
            return
        wait = self.timeout - (now - since) if since else self.timeout
        self._timer = self._loop.call_later(wait, self._check)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
