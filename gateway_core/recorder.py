"""Recording each finished request: its usage-log row, durably, in one group commit."""

from __future__ import annotations

import sqlite3

import structlog

from .context import RequestContext
from .records import UsageRow
from .store import Store
from .store.keys import touch_keys
from .store.usage import insert_usage

log = structlog.get_logger("relaygate.request")


def _record(conn: sqlite3.Connection, row: UsageRow) -> None:
    insert_usage(conn, row)
    if row.key_id is not None:
        touch_keys(conn, {row.key_id: row.started_at})


class Recorder:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def record(self, ctx: RequestContext) -> None:
        """Write the request's row and wait until it is committed."""
        row = ctx.row
        await self._store.write(_record, row)
        log.info(
            "request",
            status=row.status,
            endpoint=row.endpoint,
            model=row.model,
            channel=row.channel_name,
            duration_ms=round(row.duration_ms, 2),
            end=row.end_reason,
        )
