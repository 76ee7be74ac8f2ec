"""The request path's writes and reads that span several tables, as domain functions."""

from __future__ import annotations

import sqlite3

from ..records import UsageRow
from .request_store import PriceSnapshot
from .groups import group_ratios
from .keys import touch_keys
from .prices import list_prices
from .usage import insert_usage
from .wallet import settle


def read_price_snapshot(conn: sqlite3.Connection) -> PriceSnapshot:
    """Every model price and group ratio, read together."""
    return PriceSnapshot({p.model: p for p in list_prices(conn)}, group_ratios(conn))


def record_request(conn: sqlite3.Connection, row: UsageRow, user_id: int | None) -> None:
    """Settle the request's charge (when ``user_id`` is given: it reserved or
    costs money) and insert its row, all or nothing: the writer runs this in one
    savepoint, and the row's unique request id makes a second attempt fail whole,
    so a request is never charged twice."""
    if user_id is not None:
        settlement = settle(
            conn, user_id, request_id=row.request_id, cost_micros=row.cost_micros, key_id=row.key_id, used_at=row.started_at
        )
        insert_usage(conn, row, settlement.overrun_micros)
        return
    insert_usage(conn, row)
    if row.key_id is not None:
        touch_keys(conn, {row.key_id: row.started_at})
