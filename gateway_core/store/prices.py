"""Prices: what each model costs, in integer micro-USD (per million tokens,
per image, per million characters, per minute of audio)."""

from __future__ import annotations

import sqlite3
from typing import Any
import time

from ..records import PriceRecord
from .billing_v2_schema import PRICE_V2_COLUMNS
from .connection import fetch_all, fetch_one

_COLUMNS = (
    "model", "input_micros_per_mtok", "output_micros_per_mtok", "cached_input_micros_per_mtok",
    "cache_write_micros_per_mtok", "free", "updated_at", "per_image_micros", "per_mchar_micros",
    "per_audio_minute_micros", *PRICE_V2_COLUMNS,
)  # fmt: skip
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM prices"
_INSERT = f"INSERT OR REPLACE INTO prices ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})"


def set_price(
    conn: sqlite3.Connection, model: str, input_micros_per_mtok: int, output_micros_per_mtok: int, **options: Any
) -> PriceRecord:
    """Create or replace a model's price (the options of :func:`checked_price`); return it as stored."""
    record = checked_price(model, input_micros_per_mtok, output_micros_per_mtok, **options)
    conn.execute(_INSERT, price_values(record))
    return record


def checked_price(
    model: str,
    input_micros_per_mtok: int,
    output_micros_per_mtok: int,
    *,
    cached_input_micros_per_mtok: int | None = None,
    cache_write_micros_per_mtok: int | None = None,
    free: bool = False,
    per_image_micros: int | None = None,
    per_mchar_micros: int | None = None,
    per_audio_minute_micros: int | None = None,
    **later: int | None,
) -> PriceRecord:
    """A price as both stores keep it (stamped now); ``ValueError`` for what cannot be."""
    if not model or not model.strip():
        raise ValueError("a price needs a model name")
    values = (
        input_micros_per_mtok, output_micros_per_mtok, cached_input_micros_per_mtok, cache_write_micros_per_mtok,
        per_image_micros, per_mchar_micros, per_audio_minute_micros, *later.values(),
    )  # fmt: skip
    unknown = set(later) - set(PRICE_V2_COLUMNS)
    if unknown:
        raise ValueError(f"unknown price field(s): {', '.join(sorted(unknown))}")
    if (later.get("tier_threshold_tokens") is None) != (later.get("tier_input_micros_per_mtok") is None):
        raise ValueError("a price tier needs both its input-token threshold and its input price")
    for value in values:
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"prices are non-negative integers of micro-USD, got {value!r}")
    return PriceRecord(
        model.strip(),
        input_micros_per_mtok,
        output_micros_per_mtok,
        cached_input_micros_per_mtok,
        cache_write_micros_per_mtok,
        free=bool(free),
        updated_at=time.time(),
        per_image_micros=per_image_micros,
        per_mchar_micros=per_mchar_micros,
        per_audio_minute_micros=per_audio_minute_micros,
        **later,  # type: ignore[arg-type]  # PRICE_V2_COLUMNS only: checked above
    )


def price_values(record: PriceRecord) -> tuple[Any, ...]:
    """A price's values in the order of ``_COLUMNS`` (flags as 0 or 1)."""
    return tuple(_value(record, name) for name in _COLUMNS)


def get_price(conn: sqlite3.Connection, model: str) -> PriceRecord | None:
    row = fetch_one(conn, f"{_SELECT} WHERE model = ?", (model,))
    return _price(row) if row else None


def list_prices(conn: sqlite3.Connection) -> list[PriceRecord]:
    return [_price(row) for row in fetch_all(conn, f"{_SELECT} ORDER BY model")]


def delete_price(conn: sqlite3.Connection, model: str) -> bool:
    return conn.execute("DELETE FROM prices WHERE model = ?", (model,)).rowcount > 0


def _value(record: PriceRecord, name: str):
    value = getattr(record, name)
    return int(value) if isinstance(value, bool) else value


def _price(row: sqlite3.Row) -> PriceRecord:
    fields: dict[str, Any] = {name: row[name] for name in _COLUMNS}
    fields["free"] = bool(fields["free"])
    return PriceRecord(**fields)
