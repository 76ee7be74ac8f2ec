"""Channels: the upstreams requests are routed to. Their upstream keys are
secrets: stored as given, never logged, shown only masked (see
docs/operations.md for how they are protected at rest)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..records import ChannelRecord, DisabledKey, key_fingerprint
from .connection import fetch_all, fetch_one, from_json, inserted_id, to_json
from .sealing import seal, unseal

_SELECT = (
    "SELECT id, name, type, base_url, api_keys, models, model_map, groups, priority, weight, "
    "enabled, endpoints, headers, settings, concurrency, timeout_connect, timeout_first_byte, "
    "timeout_idle, disabled_keys FROM channels"
)
TIMEOUT_FIELDS = ("timeout_connect", "timeout_first_byte", "timeout_idle")
# what update_channel may change, and how each is stored
_EDITABLE: dict[str, str] = {
    "name": "text", "type": "text", "base_url": "text", "api_keys": "list", "models": "list",
    "model_map": "map", "groups": "list", "priority": "int", "weight": "int", "enabled": "bool",
    "endpoints": "list", "headers": "map", "settings": "map", "concurrency": "int",
    "timeout_connect": "seconds", "timeout_first_byte": "seconds", "timeout_idle": "seconds",
}  # fmt: skip


def add_channel(conn: sqlite3.Connection, **fields: Any) -> int:
    """Store a channel (the fields of :class:`ChannelRecord`, see
    :func:`channel_values`); return its id. A duplicate name raises
    ``sqlite3.IntegrityError``."""
    values = channel_values(**fields)
    cursor = conn.execute(INSERT_CHANNEL, values)
    return inserted_id(cursor)


def _column(field: str) -> str:
    """A channel's column as SQL names it (``groups`` is a keyword of PostgreSQL's)."""
    return '"groups"' if field == "groups" else field


INSERT_COLUMNS = (
    "name", "type", "base_url", "api_keys", "models", "model_map", "groups", "priority", "weight", "enabled",
    "endpoints", "headers", "settings", "created_at", "concurrency", *TIMEOUT_FIELDS,
)  # fmt: skip
INSERT_CHANNEL = (
    f"INSERT INTO channels ({', '.join(_column(c) for c in INSERT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in INSERT_COLUMNS)})"
)


def channel_values(
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
    concurrency: int = 0,
    timeout_connect: float | None = None,
    timeout_first_byte: float | None = None,
    timeout_idle: float | None = None,
) -> tuple[Any, ...]:
    """A new channel's values in the order of ``INSERT_COLUMNS``, as both stores
    keep them; ``ValueError`` for what cannot be."""
    if not name or not name.strip():
        raise ValueError("a channel needs a name")
    if not type:
        raise ValueError("a channel needs a type")
    if weight < 0:
        raise ValueError("a channel's weight must not be negative")
    timeouts = {"timeout_connect": timeout_connect, "timeout_first_byte": timeout_first_byte, "timeout_idle": timeout_idle}
    return (
        name.strip(),
        type,
        base_url,
        to_json([seal(key) for key in _unique(api_keys)]),
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
        _concurrency(concurrency),
        *(_seconds(name, value) for name, value in timeouts.items()),
    )


def update_channel(conn: sqlite3.Connection, channel: int | str, /, **fields: Any) -> bool:
    """Change the given fields of a channel (by id or name); ``False`` when there is none.

    Fields are those of :func:`add_channel`; a timeout of ``None`` goes back to
    the gateway's default. New ``api_keys`` keep the disabled marks of the keys
    they keep and drop the others'.
    """
    row = conn.execute(f"SELECT id, disabled_keys FROM channels WHERE {_where(channel)}", (channel,)).fetchone()
    if row is None:
        return False
    sets, params = channel_changes(fields, row[1])
    if sets:
        conn.execute(f"UPDATE channels SET {', '.join(sets)} WHERE id = ?", (*params, row[0]))
    return True


def channel_changes(fields: Mapping[str, Any], disabled_keys: str | None) -> tuple[list[str], list[Any]]:
    """The ``column = ?`` assignments and their values that change a channel's
    ``fields``, given its stored ``disabled_keys`` (new ``api_keys`` keep the marks
    of the keys they keep); ``ValueError`` for what cannot be."""
    sets: list[str] = []
    params: list[Any] = []
    for field, value in fields.items():
        kind = _EDITABLE.get(field)
        if kind is None:
            raise ValueError(f"a channel has no editable field {field!r}")
        if field == "name" and (not value or not str(value).strip()):
            raise ValueError("a channel needs a name")
        if field == "weight" and value < 0:
            raise ValueError("a channel's weight must not be negative")
        sets.append(f"{_column(field)} = ?")
        params.append(_stored(field, kind, value))
    if "api_keys" in fields:
        kept = _disabled(disabled_keys)
        keys = _unique(fields["api_keys"])
        positions = {key_fingerprint(key): n for n, key in enumerate(keys)}
        marks = [_mark(d, positions[d.fingerprint]) for d in kept if d.fingerprint in positions]
        sets.append("disabled_keys = ?")
        params.append(to_json(marks))
    return sets, params


def disable_channel_key(conn: sqlite3.Connection, channel_id: int, fingerprint: str, index: int, reason: str) -> bool:
    """Mark an upstream key of a channel disabled with ``reason`` (kept once: the
    first reason stays); ``False`` when the channel or the key is gone."""
    row = conn.execute("SELECT api_keys, disabled_keys FROM channels WHERE id = ?", (channel_id,)).fetchone()
    marked = None if row is None else with_key_disabled(row[0], row[1], fingerprint, index, reason)
    if marked is None:
        return False
    if marked != row[1]:
        conn.execute("UPDATE channels SET disabled_keys = ? WHERE id = ?", (marked, channel_id))
    return True


def with_key_disabled(api_keys: str | None, disabled_keys: str | None, fingerprint: str, index: int, reason: str) -> str | None:
    """A channel's ``disabled_keys`` text once its upstream key ``fingerprint`` is
    marked (unchanged when it is already: the first reason stays), given its
    ``api_keys`` text; ``None`` when the channel has no such key."""
    positions = {key_fingerprint(unseal(key)): n for n, key in enumerate(from_json(api_keys, []))}
    if fingerprint not in positions:
        return None
    disabled = _disabled(disabled_keys)
    if any(d.fingerprint == fingerprint for d in disabled):
        return disabled_keys
    marks = [_mark(d, d.index) for d in disabled]
    marks.append({"index": positions.get(fingerprint, index), "fingerprint": fingerprint, "reason": reason[:500], "at": time.time()})
    return to_json(marks)


def enable_channel_keys(conn: sqlite3.Connection, channel: int | str) -> list[DisabledKey]:
    """Use every upstream key of a channel (by id or name) again, and forget their
    breaker states; return the marks removed."""
    row = conn.execute(f"SELECT id, disabled_keys FROM channels WHERE {_where(channel)}", (channel,)).fetchone()
    if row is None:
        return []
    conn.execute("UPDATE channels SET disabled_keys = '[]' WHERE id = ?", (row[0],))
    conn.execute("DELETE FROM channel_health WHERE channel_id = ? AND key_slot != ''", (row[0],))
    return _disabled(row[1])


def list_channels(conn: sqlite3.Connection, *, enabled_only: bool = False) -> list[ChannelRecord]:
    """Every channel (or only enabled ones), by id."""
    where = " WHERE enabled = 1" if enabled_only else ""
    return [_channel(row) for row in fetch_all(conn, f"{_SELECT}{where} ORDER BY id")]


def get_channel(conn: sqlite3.Connection, channel: int | str) -> ChannelRecord | None:
    """The channel with this id or name."""
    row = fetch_one(conn, f"{_SELECT} WHERE {_where(channel)}", (channel,))
    return _channel(row) if row else None


def set_channel_enabled(conn: sqlite3.Connection, channel: int | str, enabled: bool) -> bool:
    sql = f"UPDATE channels SET enabled = ? WHERE {_where(channel)}"
    return conn.execute(sql, (int(bool(enabled)), channel)).rowcount > 0


def delete_channel(conn: sqlite3.Connection, channel: int | str) -> bool:
    """Remove a channel (by id or name) and its breaker states (usage rows keep its id and name)."""
    row = conn.execute(f"SELECT id FROM channels WHERE {_where(channel)}", (channel,)).fetchone()
    if row is None:
        return False
    conn.execute("DELETE FROM channel_health WHERE channel_id = ?", (row[0],))
    return conn.execute("DELETE FROM channels WHERE id = ?", (row[0],)).rowcount > 0


def count_channels(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM channels").fetchone()[0]


def _where(channel: int | str) -> str:
    """The condition naming a channel by id (an int) or by name (a str)."""
    return "id = ?" if isinstance(channel, int) else "name = ?"


def _unique(values: Iterable[str]) -> list[str]:
    return [v for v in dict.fromkeys(values) if v]


def _concurrency(value: int | None) -> int:
    value = int(value or 0)
    if value < 0:
        raise ValueError("a channel's concurrency cap must not be negative (0: no cap)")
    return value


def _seconds(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not value > 0:
        raise ValueError(f"a channel's {name.replace('_', ' ')} must be more than 0 seconds")
    return value


def _stored(field: str, kind: str, value: Any) -> Any:
    if field == "api_keys":
        return to_json([seal(key) for key in _unique(value)])
    if kind == "list":
        return to_json(_unique(value))
    if kind == "map":
        return to_json(dict(value or {}))
    if kind == "bool":
        return int(bool(value))
    if kind == "int":
        return _concurrency(value) if field == "concurrency" else int(value)
    if kind == "seconds":
        return _seconds(field, value)
    return str(value).strip() if field == "name" else value


def _disabled(text: str | None) -> list[DisabledKey]:
    marks = from_json(text, [])
    return [
        DisabledKey(index=int(m.get("index", 0)), fingerprint=str(m.get("fingerprint", "")), reason=str(m.get("reason", "")), at=float(m.get("at", 0.0)))
        for m in marks
        if isinstance(m, dict)
    ]


def _mark(disabled: DisabledKey, index: int) -> dict[str, Any]:
    return {"index": index, "fingerprint": disabled.fingerprint, "reason": disabled.reason, "at": disabled.at}


def _channel(row: sqlite3.Row) -> ChannelRecord:
    return ChannelRecord(
        id=row["id"],
        name=row["name"],
        type=row["type"],
        base_url=row["base_url"],
        api_keys=tuple(unseal(key) for key in from_json(row["api_keys"], [])),
        models=tuple(from_json(row["models"], [])),
        model_map=from_json(row["model_map"], {}),
        groups=tuple(from_json(row["groups"], [])),
        priority=row["priority"],
        weight=row["weight"],
        enabled=bool(row["enabled"]),
        endpoints=tuple(from_json(row["endpoints"], [])),
        headers=from_json(row["headers"], {}),
        settings=from_json(row["settings"], {}),
        concurrency=row["concurrency"] or 0,
        timeout_connect=row["timeout_connect"],
        timeout_first_byte=row["timeout_first_byte"],
        timeout_idle=row["timeout_idle"],
        disabled_keys=tuple(_disabled(row["disabled_keys"])),
    )
