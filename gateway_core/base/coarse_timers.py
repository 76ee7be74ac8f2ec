"""Timeouts of the request path, rounded up to the next tick of a shared clock.

Every request arms a few timeouts that almost never fire: the body's read
timeout, the upstream's first-byte timeout, the delay before a disconnect
watcher starts. ``asyncio.timeout`` and ``loop.call_later`` each put a timer in
the loop's heap and take it out again, several microseconds a request.
:class:`CoarseTimers` keeps them in buckets of :data:`TICK` seconds instead,
with one loop timer for the earliest bucket: arming is a set insertion,
disarming a set removal. A timeout fires up to one tick late (and, as a loop
timer may, up to a couple of milliseconds early).

:func:`deadline` is the ``async with`` form, with ``asyncio.timeout``'s rules:
on expiry it cancels the task and, on the way out, turns that cancellation
(only its own: ``Task.uncancel`` tells) into ``TimeoutError``.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Callable
from typing import Any

TICK = 0.05  # seconds: how late a timeout may fire
EARLY = 0.002  # seconds a loop timer may fire before its time (uvloop's clock counts milliseconds)


class Timer:
    """One armed callback (see :meth:`CoarseTimers.after`)."""

    __slots__ = ("callback", "bucket")

    def __init__(self, callback: Callable[[], Any], bucket: int) -> None:
        self.callback = callback
        self.bucket = bucket


class CoarseTimers:
    """The coarse timers of one event loop (:func:`timers_of`)."""

    __slots__ = ("_loop", "_buckets", "_ticks", "_handle", "_armed_tick")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._buckets: dict[int, set[Timer]] = {}
        self._ticks: list[int] = []  # a heap of the buckets' ticks
        self._handle: asyncio.TimerHandle | None = None
        self._armed_tick = 0  # the tick the loop timer is set for (0: none)

    def after(self, seconds: float, callback: Callable[[], Any]) -> Timer:
        """Call ``callback`` (in the loop) once ``seconds`` have passed, at most one tick late."""
        tick = math.ceil((self._loop.time() + seconds) / TICK)
        bucket = self._buckets.get(tick)
        if bucket is None:
            bucket = self._buckets[tick] = set()
            heapq.heappush(self._ticks, tick)
            if not self._armed_tick or tick < self._armed_tick:
                self._arm(tick)
        timer = Timer(callback, tick)
        bucket.add(timer)
        return timer

    def cancel(self, timer: Timer) -> None:
        """Disarm ``timer`` (nothing if it fired or was disarmed)."""
        bucket = self._buckets.get(timer.bucket)
        if bucket is not None:
            bucket.discard(timer)

    def _arm(self, tick: int) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_tick = tick
        self._handle = self._loop.call_at(tick * TICK, self._fire)

    def _fire(self) -> None:
        self._handle, self._armed_tick = None, 0
        now = self._loop.time()
        ticks, buckets = self._ticks, self._buckets
        while ticks and ticks[0] * TICK <= now + EARLY:
            for timer in buckets.pop(heapq.heappop(ticks), ()):
                try:
                    timer.callback()
                except Exception as exc:  # one callback's failure must not stop the others
                    self._loop.call_exception_handler({"message": "coarse timer callback failed", "exception": exc})
        while ticks and not buckets.get(ticks[0]):  # buckets emptied by cancels: no timer for them
            buckets.pop(heapq.heappop(ticks), None)
        if ticks:
            self._arm(ticks[0])


_TIMERS: dict[int, tuple[asyncio.AbstractEventLoop, CoarseTimers]] = {}


def timers_of(loop: asyncio.AbstractEventLoop) -> CoarseTimers:
    """The coarse timers of ``loop`` (made on first use)."""
    found = _TIMERS.get(id(loop))
    if found is not None and found[0] is loop:
        return found[1]
    for key in [key for key, (other, _) in _TIMERS.items() if other.is_closed()]:
        del _TIMERS[key]  # loops that ended (tests run many)
    timers = CoarseTimers(loop)
    _TIMERS[id(loop)] = (loop, timers)
    return timers


class deadline:  # noqa: N801 - used like asyncio.timeout
    """``async with deadline(seconds):`` — ``TimeoutError`` when the block takes
    longer than ``seconds`` (up to one tick more), as ``asyncio.timeout`` does."""

    __slots__ = ("_seconds", "_task", "_timers", "_timer", "_cancelling", "expired")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self.expired = False

    async def __aenter__(self) -> deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("deadline() must be used inside a task")
        self._task: asyncio.Task[Any] = task
        self._cancelling = task.cancelling()
        self._timers = timers_of(asyncio.get_running_loop())
        self._timer = self._timers.after(self._seconds, self._expire)
        return self

    def _expire(self) -> None:
        if not self._task.done():
            self.expired = True
            self._task.cancel()

    async def __aexit__(self, kind, value, traceback) -> bool | None:
        self._timers.cancel(self._timer)
        if self.expired and self._task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
            raise TimeoutError from value
        return None
