"""Releases reservations their request never settled (its process was killed).

A reservation older than ``[gateway] stale_hold_seconds`` cannot belong to a
request still running, so every worker releases such holds now and then (at
start, then every ``interval``); releasing deletes the hold first, so two
workers never release one twice, and a request that settles after all still
captures its cost.
"""

from __future__ import annotations

import asyncio
import time

import structlog

from ..request_store import RequestStore

log = structlog.get_logger("relaygate.billing")


class HoldSweeper:
    def __init__(self, store: RequestStore, stale_after: float, *, interval: float | None = None) -> None:
        self._store = store
        self.stale_after = stale_after
        self.interval = interval if interval is not None else max(1.0, min(60.0, stale_after / 4))
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def sweep(self) -> int:
        released = await self._store.release_stale_holds(time.time() - self.stale_after)
        if released:
            log.warning("billing.stale_holds_released", count=released, older_than_s=self.stale_after)
        return released

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is closing or failing: try again later
                log.error("billing.sweep_failed", error=repr(exc))
            await asyncio.sleep(self.interval)
