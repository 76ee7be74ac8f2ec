"""The circuit breakers' last reported states (table ``channel_health``).

Breakers live in each worker's memory (:mod:`gateway_core.routing.health`); a worker
writes a row here when one of its breakers opens or closes, so that
``relaygate channel list`` and the console can show them. The last worker to
report a change wins.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from .request_store import CHANNEL_SLOT, BreakerReport
from .connection import fetch_all

def save_breaker(conn: sqlite3.Connection, report: BreakerReport) -> None:
    values = attrs.asdict(report)
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    conn.execute(f"INSERT OR REPLACE INTO channel_health ({columns}) VALUES ({marks})", tuple(values.values()))


def list_breakers(conn: sqlite3.Connection) -> list[BreakerReport]:
    rows = fetch_all(conn, "SELECT * FROM channel_health ORDER BY channel_id, key_slot")
    return [BreakerReport(**_fields(row)) for row in rows]


def _fields(row: sqlite3.Row) -> dict[str, Any]:
    return {name: row[name] for name in attrs.fields_dict(BreakerReport)}
