"""Recording each finished request: its settlement and its usage-log row,
durably, together, in one group commit.

The request has been served when it is recorded, so a write refused because
another process held SQLite's write lock past the busy timeout
(:class:`~gateway_core.store.request_store.StoreLocked`: nothing was written) is sent
again, with growing pauses, for up to ``[gateway] locked_retry_seconds`` (30 s): the charge
is not lost to a lock held for a while (a backup, a long CLI command). Any other
failure, or a lock held longer, is raised as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from ..billing.charge import Charge
from ..records import UsageRow
from ..store.request_store import RequestStore, StoreLocked

log = structlog.get_logger("relaygate.request")

RETRY_FIRST, RETRY_MAX = 0.05, 1.0  # seconds between two tries


async def while_locked(write: Callable[..., Awaitable[Any]], *args: Any, within: float) -> Any:
    """``write(*args)``, sent again while the database is locked by another process,
    for up to ``within`` seconds."""
    deadline = time.monotonic() + within
    pause = RETRY_FIRST
    while True:
        try:
            return await write(*args)
        except StoreLocked:
            if time.monotonic() + pause > deadline:
                raise
            log.warning("store.locked_retry", write=getattr(write, "__name__", "write"), pause_s=pause)
            await asyncio.sleep(pause)
            pause = min(RETRY_MAX, pause * 2)


class Recorder:
    def __init__(self, store: RequestStore, *, locked_retry_seconds: float) -> None:
        self._store = store
        self._locked_retry = locked_retry_seconds

    async def record(self, row: UsageRow, charge: Charge | None) -> None:
        """Write the request's settlement (when it reserved or costs money) and
        its row; return once they are committed."""
        billed = charge is not None and (charge.held_micros or row.cost_micros)
        await while_locked(self._store.record, row, charge.user_id if charge is not None and billed else None, within=self._locked_retry)
        log.info(
            "request",
            status=row.status,
            endpoint=row.endpoint,
            model=row.model,
            channel=row.channel_name,
            duration_ms=round(row.duration_ms, 2),
            end=row.end_reason,
            cost_micros=row.cost_micros,
        )
