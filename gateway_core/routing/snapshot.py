"""A value read from the store and kept for a few seconds: the router's channel
index and the price book are such snapshots.

A fresh snapshot costs a clock comparison (no await, no database call);
a stale one is read again, once, however many requests ask for it at the same
time; :meth:`TtlSnapshot.invalidate` makes the next request read at once.
Changes made elsewhere (the CLI, another worker) are seen within ``ttl``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
_monotonic = time.monotonic


class TtlSnapshot(Generic[T]):
    def __init__(self, read: Callable[[], Awaitable[T]], *, ttl: float = 1.0) -> None:
        self._read = read
        self.ttl = ttl
        self._value: T | None = None
        self._expires = 0.0
        self._loading: asyncio.Future[T] | None = None

    def fresh(self) -> T | None:
        """The value when it is younger than ``ttl``, else ``None`` (then await :meth:`load`)."""
        if _monotonic() < self._expires:
            return self._value
        return None

    def latest(self) -> T | None:
        """The last value read, however old (``None``: none yet)."""
        return self._value

    async def current(self) -> T:
        """The fresh value, or a new read."""
        value = self.fresh()
        return value if value is not None else await self.load()

    async def load(self) -> T:
        """Read again (one read shared by concurrent callers; one caller giving up
        does not cancel it for the others)."""
        loading = self._loading
        if loading is None:
            loading = self._loading = asyncio.ensure_future(self._load())
            loading.add_done_callback(self._loaded)
        return await asyncio.shield(loading)

    def invalidate(self) -> None:
        self._expires = 0.0

    async def _load(self) -> T:
        value = await self._read()
        self._value = value
        self._expires = _monotonic() + self.ttl
        return value

    def _loaded(self, done: asyncio.Future[T]) -> None:
        if self._loading is done:
            self._loading = None
        if not done.cancelled():
            done.exception()  # retrieved: every waiter got it
