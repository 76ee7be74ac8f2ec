"""Channels, groups and prices on PostgreSQL (the admin port).

Values are validated and encoded by the SQLite store's pure helpers
(:func:`gateway_core.store.channels.channel_values`, ``channel_changes``,
:func:`gateway_core.store.prices.checked_price`); a channel's JSON columns are
rewritten with its row locked (``SELECT … FOR UPDATE``), so a worker marking an
upstream key disabled meanwhile is not lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import asyncpg
import attrs

from gateway_core.admin.port import ChannelFields, LimitChanges
from gateway_core.records import ChannelRecord, ChannelTraffic, DisabledKey, GroupRecord, PriceRecord
from gateway_core.store.request_store import BreakerReport
from gateway_core.store.channel_health import _fields as breaker_fields
from gateway_core.store.channels import _SELECT as _CHANNEL
from gateway_core.store.channels import INSERT_CHANNEL, channel_changes, channel_values
from gateway_core.store.channels import _channel as channel_record
from gateway_core.store.channels import _disabled as disabled_marks
from gateway_core.store.groups import LIST_GROUPS, check_ratio
from gateway_core.store.prices import _COLUMNS as PRICE_COLUMNS
from gateway_core.store.prices import checked_price, price_values
from gateway_core.store.sealing import count_unsealed
from gateway_core.store.prices import _price as price_record
from . import statements
from .admin_base import AdminBase, changed, found, plain
from .admin_users import ensure_groups, set_limits
from .migrate import numbered

_SET_PRICE = (
    f"INSERT INTO prices ({', '.join(PRICE_COLUMNS)}) VALUES ({', '.join(f'${n}' for n in range(1, len(PRICE_COLUMNS) + 1))}) "
    f"ON CONFLICT (model) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in PRICE_COLUMNS[1:])}"
)
_TRAFFIC = (
    "SELECT channel_id, count(*) AS requests, count(*) FILTER (WHERE status >= 500 OR upstream_status IS NOT NULL) AS errors, "
    "avg(duration_ms) AS mean_ms, max(created_at) AS last_at FROM usage_logs "
    "WHERE created_at >= $1 AND channel_id IS NOT NULL GROUP BY channel_id"
)
_LAST_ERRORS = (
    "SELECT DISTINCT ON (channel_id) channel_id, created_at AS at, error_message FROM usage_logs "
    "WHERE created_at >= $1 AND channel_id IS NOT NULL AND status >= 500 ORDER BY channel_id, created_at DESC, id DESC"
)


async def get_channel(conn: asyncpg.Connection, channel_id: int) -> ChannelRecord | None:
    row = await conn.fetchrow(f"{_CHANNEL} WHERE id = $1", channel_id)
    return channel_record(row) if row is not None else None


async def add_channel(conn: asyncpg.Connection, fields: Mapping[str, Any]) -> int:
    """Store a channel, creating its missing groups; its id."""
    values = channel_values(**fields)
    await ensure_groups(conn, fields.get("groups", ()))
    channel_id: int = await conn.fetchval(numbered(INSERT_CHANNEL) + " RETURNING id", *values)
    return channel_id


async def set_price(conn: asyncpg.Connection, price: PriceRecord) -> PriceRecord:
    fields = attrs.asdict(price)
    del fields["updated_at"], fields["source"]  # stored: the operator's
    record = checked_price(**fields)
    await conn.execute(_SET_PRICE, *price_values(record))
    return record


class ChannelsAdmin(AdminBase):
    """The channels', groups' and prices' part of :class:`~.admin.PostgresAdmin`."""

    async def add_channel(self, fields: ChannelFields) -> ChannelRecord:
        async def add(conn: asyncpg.Connection) -> ChannelRecord:
            return found(await get_channel(conn, await add_channel(conn, fields)))

        return await self._write("add_channel", add)

    async def find_channel(self, name: str) -> ChannelRecord | None:
        async def find(conn: asyncpg.Connection) -> ChannelRecord | None:
            row = await conn.fetchrow(f"{_CHANNEL} WHERE name = $1", name)
            return channel_record(row) if row is not None else None

        return await self._read("find_channel", find)

    async def get_channel(self, channel_id: int) -> ChannelRecord | None:
        return await self._read("get_channel", lambda conn: get_channel(conn, channel_id))

    async def list_channels(self) -> list[ChannelRecord]:
        async def channels(conn: asyncpg.Connection) -> list[ChannelRecord]:
            return [channel_record(row) for row in await conn.fetch(statements.LIST_CHANNELS)]

        return await self._read("list_channels", channels)

    async def unsealed_channels(self) -> int:
        async def unsealed(conn: asyncpg.Connection) -> int:
            return count_unsealed(row[0] for row in await conn.fetch("SELECT api_keys FROM channels"))

        return await self._read("unsealed_channels", unsealed)

    async def update_channel(self, channel_id: int, changes: ChannelFields) -> ChannelRecord | None:
        async def update(conn: asyncpg.Connection) -> ChannelRecord | None:
            await ensure_groups(conn, changes.get("groups", ()))
            marks = await conn.fetchrow("SELECT disabled_keys FROM channels WHERE id = $1 FOR UPDATE", channel_id)
            if marks is None:
                return None
            sets, params = channel_changes(changes, marks["disabled_keys"])
            if sets:
                await conn.execute(numbered(f"UPDATE channels SET {', '.join(sets)} WHERE id = ?"), *params, channel_id)
            return await get_channel(conn, channel_id)

        return await self._write("update_channel", update)

    async def enable_channel(self, channel_id: int) -> list[DisabledKey] | None:
        async def enable(conn: asyncpg.Connection) -> list[DisabledKey] | None:
            marks = await conn.fetchrow("SELECT disabled_keys FROM channels WHERE id = $1 FOR UPDATE", channel_id)
            if marks is None:
                return None
            await conn.execute("UPDATE channels SET enabled = 1, disabled_keys = '[]' WHERE id = $1", channel_id)
            await conn.execute("DELETE FROM channel_health WHERE channel_id = $1 AND key_slot != ''", channel_id)
            return disabled_marks(marks["disabled_keys"])

        return await self._write("enable_channel", enable)

    async def disable_channel(self, channel_id: int) -> bool:
        async def disable(conn: asyncpg.Connection) -> bool:
            return changed(await conn.execute("UPDATE channels SET enabled = 0 WHERE id = $1", channel_id)) > 0

        return await self._write("disable_channel", disable)

    async def delete_channel(self, channel_id: int) -> bool:
        async def delete(conn: asyncpg.Connection) -> bool:
            await conn.execute("DELETE FROM channel_health WHERE channel_id = $1", channel_id)
            return changed(await conn.execute("DELETE FROM channels WHERE id = $1", channel_id)) > 0

        return await self._write("delete_channel", delete)

    async def list_breakers(self) -> list[BreakerReport]:
        async def breakers(conn: asyncpg.Connection) -> list[BreakerReport]:
            rows = await conn.fetch("SELECT * FROM channel_health ORDER BY channel_id, key_slot")
            return [BreakerReport(**breaker_fields(row)) for row in rows]

        return await self._read("list_breakers", breakers)

    async def channel_traffic(self, since: float) -> list[ChannelTraffic]:
        async def traffic(conn: asyncpg.Connection) -> list[ChannelTraffic]:
            last_errors = {row["channel_id"]: (row["error_message"], row["at"]) for row in await conn.fetch(_LAST_ERRORS, since)}
            found_traffic = []
            for row in await conn.fetch(_TRAFFIC, since):
                message, at = last_errors.get(row["channel_id"], (None, None))
                found_traffic.append(ChannelTraffic(**{k: plain(v) for k, v in row.items()}, last_error=message, last_error_at=at))
            return found_traffic

        return await self._read("channel_traffic", traffic)

    # --- groups and prices -------------------------------------------------------

    async def set_group(self, name: str, *, ratio_ppm: int | None, limits: LimitChanges) -> GroupRecord:
        async def save(conn: asyncpg.Connection) -> GroupRecord:
            await ensure_groups(conn, [name])
            if ratio_ppm is not None:
                check_ratio(ratio_ppm)
                await conn.execute('UPDATE "groups" SET ratio_ppm = $1 WHERE name = $2', ratio_ppm, name)
            await set_limits(conn, "group", name, limits)
            return next(group for group in await _groups(conn) if group.name == name)

        return await self._write("set_group", save)

    async def list_groups(self) -> list[GroupRecord]:
        return await self._read("list_groups", _groups)

    async def set_price(self, price: PriceRecord) -> PriceRecord:
        return await self._write("set_price", lambda conn: set_price(conn, price))

    async def list_prices(self) -> list[PriceRecord]:
        async def prices(conn: asyncpg.Connection) -> list[PriceRecord]:
            return [price_record(row) for row in await conn.fetch(statements.LIST_PRICES)]

        return await self._read("list_prices", prices)

    async def delete_price(self, model: str) -> bool:
        async def delete(conn: asyncpg.Connection) -> bool:
            return changed(await conn.execute("DELETE FROM prices WHERE model = $1", model)) > 0

        return await self._write("delete_price", delete)


async def _groups(conn: asyncpg.Connection) -> list[GroupRecord]:
    return [GroupRecord(**dict(row)) for row in await conn.fetch(LIST_GROUPS)]
