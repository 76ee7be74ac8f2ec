"""Recording each finished request: its settlement and its usage-log row,
durably, together, in one group commit."""

from __future__ import annotations

import structlog

from .billing.charge import Charge
from .records import UsageRow
from .request_store import RequestStore

log = structlog.get_logger("relaygate.request")


class Recorder:
    def __init__(self, store: RequestStore) -> None:
        self._store = store

    async def record(self, row: UsageRow, charge: Charge | None) -> None:
        """Write the request's settlement (when it reserved or costs money) and
        its row; return once they are committed."""
        billed = charge is not None and (charge.held_micros or row.cost_micros)
        await self._store.record(row, charge.user_id if charge is not None and billed else None)
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
