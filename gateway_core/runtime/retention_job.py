"""The retention job ``serve`` runs in each worker (:mod:`gateway_core.admin.retention`):
every ``[retention] interval_seconds`` it rolls the usage log up into hourly
totals and, with ``usage_days`` set, prunes it. Workers and replicas running it
at once take turns (SQLite's writer, PostgreSQL's row and advisory locks)."""

from __future__ import annotations

import asyncio
import random

import structlog

from ..admin import Admin
from ..admin import retention
from ..base.retention import Retention

log = structlog.get_logger("relaygate.retention")


class RetentionJob:
    def __init__(self, admin: Admin, settings: Retention) -> None:
        self.admin = admin
        self.settings = settings
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def run_once(self) -> None:
        report = await retention.prune(self.admin, self.settings)
        if report.pruned:
            log.info("retention.pruned", rows=report.pruned, before=report.cutoff, rolled_id=report.rolled_id)

    async def _run(self) -> None:
        interval = self.settings.interval_seconds
        await asyncio.sleep(interval * random.uniform(0.5, 1.0))  # workers started together do not run together
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is closing or failing: the next run goes on
                log.error("retention.failed", error=repr(exc))
            await asyncio.sleep(interval)
