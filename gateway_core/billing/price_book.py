"""Prices and group ratios, cached in memory for the request path.

Like the router's channel index: rebuilt from the store at most once per
``ttl`` seconds (at once after :meth:`PriceBook.invalidate`), concurrent
reloads share one read, and a fresh snapshot costs a clock comparison — no
database call and no await on the request path. Changes made elsewhere (the
CLI, the console, another worker) are seen within ``ttl``.
"""

from __future__ import annotations

import asyncio
import time


from ..request_store import PriceSnapshot, RequestStore

_monotonic = time.monotonic


class PriceBook:
    def __init__(self, store: RequestStore, *, ttl: float = 1.0) -> None:
        self._store = store
        self._ttl = ttl
        self._snapshot: PriceSnapshot | None = None
        self._expires = 0.0
        self._loading: asyncio.Future | None = None

    def fresh(self) -> PriceSnapshot | None:
        """The snapshot when it is younger than ``ttl``, else ``None`` (then await :meth:`load`)."""
        if _monotonic() < self._expires:
            return self._snapshot
        return None

    async def current(self) -> PriceSnapshot:
        return self.fresh() or await self.load()

    async def load(self) -> PriceSnapshot:
        """Read prices and ratios again (one read shared by concurrent callers)."""
        loading = self._loading
        if loading is None:
            loading = self._loading = asyncio.ensure_future(self._read())
            loading.add_done_callback(self._loaded)
        return await asyncio.shield(loading)

    def invalidate(self) -> None:
        self._expires = 0.0

    async def _read(self) -> PriceSnapshot:
        snapshot = await self._store.price_snapshot()
        self._snapshot = snapshot
        self._expires = _monotonic() + self._ttl
        return snapshot

    def _loaded(self, done: asyncio.Future) -> None:
        if self._loading is done:
            self._loading = None
        if not done.cancelled():
            done.exception()  # retrieved: every waiter got it
