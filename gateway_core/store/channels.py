"""Channels: the upstreams requests are routed to. Their upstream keys are
secrets: stored as given, never logged, shown only masked."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..records import ChannelRecord
from .connection import fetch_all, fetch_one, from_json, to_json

_SELECT = (
    "SELECT id, name, type, base_url, api_keys, models, model_map, groups, priority, weight, "
    "enabled, endpoints, headers, settings FROM channels"
)


def add_channel(
    conn: sqlite3.Connection,
    *,
    name: str,
    type: str,
    base_url: str,
    api_keys: Iterable[str] = (),
    models: Iterable[str] = (),
    model_map: Mapping[str, str] | None = None,
    groups: Iterable[str] = ("default",),
    priority: int = 0,
    weight: int = 1,
    enabled: bool = True,
    endpoints: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> int:
    """Store a channel (the fields of :class:`ChannelRecord`); return its id.

    A duplicate name raises ``sqlite3.IntegrityError``.
    """
    if not name or not name.strip():
        raise ValueError("a channel needs a name")
    if not type:
        raise ValueError("a channel needs a type")
    if weight < 0:
        raise ValueError("a channel's weight must not be negative")
    cursor = conn.execute(
        "INSERT INTO channels (name, type, base_url, api_keys, models, model_map, groups, priority, "
        "weight, enabled, endpoints, headers, settings, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            name.strip(),
            type,
            base_url,
            to_json(_unique(api_keys)),
            to_json(_unique(models)),
            to_json(dict(model_map or {})),
            to_json(_unique(groups)),
            int(priority),
            int(weight),
            int(bool(enabled)),
            to_json(_unique(endpoints)),
            to_json(dict(headers or {})),
            to_json(dict(settings or {})),
            time.time(),
        ),
    )
    return int(cursor.lastrowid)


def list_channels(conn: sqlite3.Connection, *, enabled_only: bool = False) -> list[ChannelRecord]:
    """Every channel (or only enabled ones), by id."""
    where = " WHERE enabled = 1" if enabled_only else ""
    return [_channel(row) for row in fetch_all(conn, f"{_SELECT}{where} ORDER BY id")]


def get_channel(conn: sqlite3.Connection, name: str) -> ChannelRecord | None:
    row = fetch_one(conn, f"{_SELECT} WHERE name = ?", (name,))
    return _channel(row) if row else None


def set_channel_enabled(conn: sqlite3.Connection, name: str, enabled: bool) -> bool:
    return conn.execute("UPDATE channels SET enabled = ? WHERE name = ?", (int(bool(enabled)), name)).rowcount > 0


def delete_channel(conn: sqlite3.Connection, name: str) -> bool:
    """Remove a channel (usage rows keep its id and name)."""
    return conn.execute("DELETE FROM channels WHERE name = ?", (name,)).rowcount > 0


def count_channels(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM channels").fetchone()[0]


def _unique(values: Iterable[str]) -> list[str]:
    return [v for v in dict.fromkeys(values) if v]


def _channel(row: sqlite3.Row) -> ChannelRecord:
    return ChannelRecord(
        id=row["id"],
        name=row["name"],
        type=row["type"],
        base_url=row["base_url"],
        api_keys=tuple(from_json(row["api_keys"], [])),
        models=tuple(from_json(row["models"], [])),
        model_map=from_json(row["model_map"], {}),
        groups=tuple(from_json(row["groups"], [])),
        priority=row["priority"],
        weight=row["weight"],
        enabled=bool(row["enabled"]),
        endpoints=tuple(from_json(row["endpoints"], [])),
        headers=from_json(row["headers"], {}),
        settings=from_json(row["settings"], {}),
    )
