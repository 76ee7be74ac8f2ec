"""Prices: what each model costs per million tokens, in integer micro-USD."""

from __future__ import annotations

import sqlite3
import time

from ..records import PriceRecord
from .connection import fetch_all, fetch_one

_SELECT = (
    "SELECT model, input_micros_per_mtok, output_micros_per_mtok, cached_input_micros_per_mtok, "
    "cache_write_micros_per_mtok, free, updated_at FROM prices"
)


def set_price(
    conn: sqlite3.Connection,
    model: str,
    input_micros_per_mtok: int,
    output_micros_per_mtok: int,
    *,
    cached_input_micros_per_mtok: int | None = None,
    cache_write_micros_per_mtok: int | None = None,
    free: bool = False,
) -> PriceRecord:
    """Create or replace a model's price; return it as stored."""
    if not model or not model.strip():
        raise ValueError("a price needs a model name")
    values = (input_micros_per_mtok, output_micros_per_mtok, cached_input_micros_per_mtok, cache_write_micros_per_mtok)
    for value in values:
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"prices are non-negative integers of micro-USD per million tokens, got {value!r}")
    record = PriceRecord(model.strip(), *values, free=bool(free), updated_at=time.time())
    conn.execute(
        "INSERT OR REPLACE INTO prices (model, input_micros_per_mtok, output_micros_per_mtok, "
        "cached_input_micros_per_mtok, cache_write_micros_per_mtok, free, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (record.model, *values, int(record.free), record.updated_at),
    )
    return record


def get_price(conn: sqlite3.Connection, model: str) -> PriceRecord | None:
    row = fetch_one(conn, f"{_SELECT} WHERE model = ?", (model,))
    return _price(row) if row else None


def list_prices(conn: sqlite3.Connection) -> list[PriceRecord]:
    return [_price(row) for row in fetch_all(conn, f"{_SELECT} ORDER BY model")]


def delete_price(conn: sqlite3.Connection, model: str) -> bool:
    return conn.execute("DELETE FROM prices WHERE model = ?", (model,)).rowcount > 0


def _price(row: sqlite3.Row) -> PriceRecord:
    return PriceRecord(
        model=row["model"],
        input_micros_per_mtok=row["input_micros_per_mtok"],
        output_micros_per_mtok=row["output_micros_per_mtok"],
        cached_input_micros_per_mtok=row["cached_input_micros_per_mtok"],
        cache_write_micros_per_mtok=row["cache_write_micros_per_mtok"],
        free=bool(row["free"]),
        updated_at=row["updated_at"],
    )
