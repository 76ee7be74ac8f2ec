"""Recording each finished request: its settlement and its usage-log row,
durably, together, in one group commit."""

from __future__ import annotations

import sqlite3

import structlog

from .context import RequestContext
from .records import UsageRow
from .store import Store
from .store.keys import touch_keys
from .store.usage import insert_usage
from .store.wallet import settle

log = structlog.get_logger("relaygate.request")


def record_request(conn: sqlite3.Connection, row: UsageRow, user_id: int | None) -> None:
    """Settle the request's charge (when ``user_id`` is given: it reserved or
    costs money) and insert its row, all or nothing: the writer runs this in one
    savepoint, and the row's unique request id makes a second attempt fail whole,
    so a request is never charged twice."""
    if user_id is not None:
        settlement = settle(
            conn, user_id, request_id=row.request_id, cost_micros=row.cost_micros, key_id=row.key_id, used_at=row.started_at
        )
        row.overrun_micros = settlement.overrun_micros
        insert_usage(conn, row)
        return
    insert_usage(conn, row)
    if row.key_id is not None:
        touch_keys(conn, {row.key_id: row.started_at})


class Recorder:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def record(self, ctx: RequestContext) -> None:
        """Write the request's settlement and row; return once they are committed."""
        row = ctx.row
        charge = ctx.charge
        billed = charge is not None and (charge.held_micros or row.cost_micros)
        await self._store.write(record_request, row, charge.user_id if billed else None)
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
