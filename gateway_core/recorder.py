"""Recording each finished request: its settlement and its usage-log row,
durably, together, in one group commit."""

from __future__ import annotations

import structlog

from .context import RequestContext
from .request_store import RequestStore

log = structlog.get_logger("relaygate.request")


class Recorder:
    def __init__(self, store: RequestStore) -> None:
        self._store = store

    async def record(self, ctx: RequestContext) -> None:
        """Write the request's settlement and row; return once they are committed."""
        row = ctx.row
        charge = ctx.charge
        billed = charge is not None and (charge.held_micros or row.cost_micros)
        await self._store.record(row, charge.user_id if billed else None)
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
