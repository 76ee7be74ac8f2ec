"""The admin port (:class:`gateway_core.admin.port.AdminStore`) on the SQLite store.

Each method runs the store's domain functions on a reader thread or through the
group-commit writer; what the domain functions raise comes out as the admin
layer's errors (a taken name as ``Conflict``, a refused value as ``Invalid``, a
failing database as ``StoreFailure``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import attrs

from ..admin.errors import AdminError, Conflict, Invalid, StoreFailure
from ..admin.port import ChannelFields, LimitChanges, UsageRowDict
from ..records import (
    AuditReport,
    ChannelRecord,
    ChannelTraffic,
    Cursor,
    DailySpending,
    DisabledKey,
    GroupRecord,
    HoldRecord,
    InitResult,
    KeyRecord,
    LedgerEntry,
    PriceRecord,
    UsageFilter,
    UsageTotal,
    UserOverview,
    UserRecord,
)
from ..billing.budgets import BudgetUse
from ..billing.codes import Redeemed, RedemptionCode
from .request_store import BreakerReport, ModelFallback
from . import budgets, channel_health, channels, codes, fallbacks, groups, keys, prices, setup, usage, users, wallet
from .audit import audit
from .connection import atomic
from .limits import get_limits, set_key_limits, set_user_limits
from .sealing import count_unsealed
from .sqlite_access import SqliteAccess
from .sqlite_retention import SqliteRetention
from .signups import SqliteSignups
from .sqlite_teams import SqliteTeams
from .sqlite_store import Store

T = TypeVar("T")


class SqliteAdmin(SqliteAccess, SqliteTeams, SqliteSignups, SqliteRetention):
    """The admin port of a running :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # --- users -------------------------------------------------------------------

    async def create_user(self, name: str, *, is_admin: bool, password_hash: str | None, groups: Sequence[str]) -> UserRecord:
        return await self._write(_create_user, name, is_admin, password_hash, list(groups))

    async def find_user(self, name: str) -> UserRecord | None:
        return await self._read(users.get_user, name)

    async def get_user(self, user_id: int) -> UserRecord | None:
        return await self._read(users.get_user_by_id, user_id)

    async def list_users(self) -> list[UserOverview]:
        return await self._read(users.list_user_overviews)

    async def set_user_enabled(self, user_id: int, enabled: bool) -> bool:
        return await self._write(users.set_user_enabled, user_id, enabled)

    async def delete_user(self, user_id: int) -> bool:
        return await self._write(users.delete_user, user_id)

    async def set_password_hash(self, user_id: int, password_hash: str | None) -> bool:
        return await self._write(users.set_password_hash, user_id, password_hash)

    async def change_user_groups(self, user_id: int, *, opened: Sequence[str], closed: Sequence[str]) -> bool:
        return await self._write(_change_user_groups, user_id, list(opened), list(closed))

    async def get_user_limits(self, user_id: int) -> dict[str, int | None] | None:
        return await self._read(get_limits, "user", user_id)

    async def set_user_limits(self, user_id: int, changes: LimitChanges) -> dict[str, int | None] | None:
        return await self._write(_set_limits, "user", set_user_limits, user_id, changes)

    # --- API keys ----------------------------------------------------------------

    async def create_key(
        self,
        user_id: int,
        *,
        name: str,
        group: str,
        quota_micros: int | None,
        expires_at: float | None,
        models: Sequence[str],
        allow_ips: Sequence[str],
        limits: LimitChanges,
    ) -> tuple[KeyRecord, str]:
        fields = {
            "name": name, "group": group, "quota_micros": quota_micros, "expires_at": expires_at,
            "models": list(models), "allow_ips": list(allow_ips), "limits": dict(limits),
        }  # fmt: skip
        return await self._write(_create_key, user_id, fields)

    async def get_key(self, key_id: int) -> KeyRecord | None:
        return await self._read(keys.get_key, key_id)

    async def list_keys(self, user_id: int, *, include_deleted: bool = False) -> list[KeyRecord]:
        return await self._read(lambda conn: keys.list_keys(conn, user_id, include_deleted=include_deleted))

    async def set_key_enabled(self, key_id: int, enabled: bool) -> bool:
        return await self._write(keys.set_key_enabled, key_id, enabled)

    async def delete_key(self, key_id: int) -> bool:
        return await self._write(keys.delete_key, key_id)

    async def update_key(
        self,
        key_id: int,
        *,
        name: str,
        quota_micros: int | None,
        expires_at: float | None,
        models: Sequence[str],
        allow_ips: Sequence[str],
        group: str | None = None,
    ) -> bool:
        return await self._write(
            lambda conn: keys.update_key(
                conn, key_id, name=name, quota_micros=quota_micros, expires_at=expires_at, models=models, allow_ips=allow_ips,
                group=group,
            )
        )

    async def set_key_limits(self, key_id: int, changes: LimitChanges) -> dict[str, int | None] | None:
        return await self._write(_set_limits, "key", set_key_limits, key_id, changes)

    async def get_key_locks(self, key_id: int) -> dict[str, Any]:
        return await self._read(keys.get_key_locks, key_id)

    async def set_key_locks(self, key_id: int, locks: Mapping[str, Any]) -> None:
        await self._write(keys.set_key_locks, key_id, locks)

    async def budget_spending(self, uses: Sequence[BudgetUse]) -> list[tuple[int, int | None]]:
        return await self._read(budgets.budget_spending, list(uses))

    async def set_key_cost_header(self, key_id: int, on: bool) -> bool:
        return await self._write(keys.set_key_cost_header, key_id, on)

    async def create_codes(
        self, batch: str, hashes: Sequence[tuple[str, str]], *, value_micros: int, group: str | None,
        expires_at: float | None, note: str | None, now: float,
    ) -> list[int]:  # fmt: skip
        return await self._write(
            lambda conn: codes.create_codes(
                conn, batch, hashes, value_micros=value_micros, group=group, expires_at=expires_at, note=note, now=now
            )
        )

    async def list_codes(self, batch: str | None, limit: int) -> list[RedemptionCode]:
        return await self._read(codes.list_codes, batch, limit)

    async def disable_code(self, code_id: int) -> bool:
        return await self._write(codes.disable_code, code_id)

    async def redeem_code(self, user_id: int, code_hash: str, now: float) -> Redeemed | str:
        return await self._write(codes.redeem_code, user_id, code_hash, now)

    # --- channels ----------------------------------------------------------------

    async def add_channel(self, fields: ChannelFields) -> ChannelRecord:
        return await self._write(_add_channel, fields)

    async def find_channel(self, name: str) -> ChannelRecord | None:
        return await self._read(channels.get_channel, name)

    async def get_channel(self, channel_id: int) -> ChannelRecord | None:
        return await self._read(channels.get_channel, channel_id)

    async def list_channels(self) -> list[ChannelRecord]:
        return await self._read(channels.list_channels)

    async def unsealed_channels(self) -> int:
        return await self._read(lambda conn: count_unsealed(row[0] for row in conn.execute("SELECT api_keys FROM channels")))

    async def update_channel(self, channel_id: int, changes: ChannelFields) -> ChannelRecord | None:
        return await self._write(_update_channel, channel_id, changes)

    async def enable_channel(self, channel_id: int) -> list[DisabledKey] | None:
        return await self._write(_enable_channel, channel_id)

    async def disable_channel(self, channel_id: int) -> bool:
        return await self._write(channels.set_channel_enabled, channel_id, False)

    async def delete_channel(self, channel_id: int) -> bool:
        return await self._write(channels.delete_channel, channel_id)

    async def list_breakers(self) -> list[BreakerReport]:
        return await self._read(channel_health.list_breakers)

    async def channel_traffic(self, since: float) -> list[ChannelTraffic]:
        return await self._read(usage.channel_traffic, since)

    # --- groups and prices -------------------------------------------------------

    async def set_group(self, name: str, *, ratio_ppm: int | None, limits: LimitChanges) -> GroupRecord:
        return await self._write(groups.save_group, name, ratio_ppm, limits)

    async def set_fallback(self, scope: str, owner: str, model: str, fallback: str) -> ModelFallback:
        return await self._write(fallbacks.set_fallback, scope, owner, model, fallback)

    async def delete_fallback(self, scope: str, owner: str, model: str) -> bool:
        return await self._write(fallbacks.delete_fallback, scope, owner, model)

    async def list_fallbacks(self) -> list[ModelFallback]:
        return await self._read(fallbacks.list_fallbacks)

    async def list_groups(self) -> list[GroupRecord]:
        return await self._read(groups.list_groups)

    async def set_price(self, price: PriceRecord) -> PriceRecord:
        fields = attrs.asdict(price)
        del fields["updated_at"], fields["source"]  # stored: the operator's
        return await self._write(lambda conn: prices.set_price(conn, **fields))

    async def list_prices(self) -> list[PriceRecord]:
        return await self._read(prices.list_prices)

    async def delete_price(self, model: str) -> bool:
        return await self._write(prices.delete_price, model)

    # --- wallet ------------------------------------------------------------------

    async def topup(self, user_id: int, amount_micros: int, note: str | None) -> int:
        return await self._write(wallet.topup, user_id, amount_micros, note)

    async def adjust(self, user_id: int, amount_micros: int, note: str | None) -> int:
        return await self._write(lambda conn: wallet.adjust(conn, user_id, amount_micros, kind="adjustment", note=note))

    async def list_ledger(self, user_id: int, *, before_id: int | None, limit: int) -> list[LedgerEntry]:
        rows = await self._read(lambda conn: wallet.list_ledger(conn, user_id, before_id=before_id, limit=limit))
        return [LedgerEntry(**row) for row in rows]

    async def ledger_of_request(self, request_id: str) -> list[LedgerEntry]:
        return [LedgerEntry(**row) for row in await self._read(wallet.ledger_of_request, request_id)]

    async def list_holds(self, user_id: int | None = None) -> list[HoldRecord]:
        return [HoldRecord(**row) for row in await self._read(wallet.list_holds, user_id)]

    async def check_ledger(self) -> AuditReport:
        return await self._read(audit)

    # --- usage -------------------------------------------------------------------

    async def page_usage(
        self, filters: UsageFilter, before: Cursor | None, limit: int, *, after: Cursor | None = None
    ) -> list[UsageRowDict]:
        wanted = attrs.asdict(filters)
        return await self._read(lambda conn: usage.query_usage(conn, **wanted, before=before, after=after, limit=limit))

    async def get_usage(self, log_id: int) -> UsageRowDict | None:
        return await self._read(usage.get_usage, int(log_id))

    async def usage_filter_totals(self, filters: UsageFilter) -> UsageTotal:
        wanted = attrs.asdict(filters)
        return await self._read(lambda conn: usage.filter_totals(conn, **wanted))

    async def daily_spending(self, since: float, user_id: int | None = None) -> list[DailySpending]:
        return await self._read(usage.daily_spending, since, user_id)

    async def usage_totals(
        self, by: str, since: float, limit: int = 50, *, until: float | None = None, user_id: int | None = None,
        bucket: float | None = None,
    ) -> list[UsageTotal]:
        return await self._read(lambda conn: usage.usage_totals(conn, by, since, limit, until=until, user_id=user_id, bucket=bucket))

    # --- set-up ------------------------------------------------------------------

    async def initialize(self, *, admin_password_hash: str, first_channel: ChannelFields | None) -> InitResult:
        return await self._write(
            lambda conn: setup.initialize(conn, admin_password_hash=admin_password_hash, first_channel=first_channel)
        )

    # --- running domain functions --------------------------------------------------

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        with translated_errors():
            return await self._store.read(fn, *args)

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        with translated_errors():
            return await self._store.write(fn, *args)


@contextmanager
def translated_errors() -> Iterator[None]:
    """SQLite's and the domain functions' exceptions as the admin layer's errors."""
    try:
        yield
    except AdminError:
        raise
    except sqlite3.IntegrityError as exc:
        raise Conflict(_describe_integrity_error(exc)) from exc
    except sqlite3.Error as exc:
        raise StoreFailure(f"database error: {exc}") from exc
    except ValueError as exc:
        raise Invalid(str(exc)) from exc


def _describe_integrity_error(exc: sqlite3.IntegrityError) -> str:
    """``UNIQUE constraint failed: users.name`` → ``a users record with this name already exists``."""
    message = str(exc)
    prefix = "UNIQUE constraint failed: "
    if message.startswith(prefix):
        table, _, column = message[len(prefix) :].split(",")[0].strip().partition(".")
        return f"a {table} record with this {column or 'key'} already exists"
    if "FOREIGN KEY" in message:
        return "it refers to a record that does not exist"
    return message


# --- several domain functions in one transaction ---------------------------------------


def _create_user(conn: sqlite3.Connection, name: str, is_admin: bool, password_hash: str | None, opened: list[str]) -> UserRecord:
    user_id = users.add_user(conn, name, is_admin=is_admin, password_hash=password_hash, groups=opened)
    return _found(users.get_user_by_id(conn, user_id))


def _change_user_groups(conn: sqlite3.Connection, user_id: int, opened: list[str], closed: list[str]) -> bool:
    with atomic(conn):
        if users.get_user_by_id(conn, user_id) is None:
            return False
        users.open_groups(conn, user_id, opened)
        users.close_groups(conn, user_id, closed)
    return True


def _set_limits(
    conn: sqlite3.Connection, subject: str, change: Callable[..., bool], ident: int, changes: LimitChanges
) -> dict[str, int | None] | None:
    return get_limits(conn, subject, ident) if change(conn, ident, changes) else None


def _create_key(conn: sqlite3.Connection, user_id: int, fields: dict[str, Any]) -> tuple[KeyRecord, str]:
    key_id, secret = keys.create_key(conn, user_id, **fields)
    return _found(keys.get_key(conn, key_id)), secret


def _add_channel(conn: sqlite3.Connection, fields: ChannelFields) -> ChannelRecord:
    with atomic(conn):
        groups.ensure_groups(conn, fields.get("groups", ()))
        channel_id = channels.add_channel(conn, **fields)
    return _found(channels.get_channel(conn, channel_id))


def _update_channel(conn: sqlite3.Connection, channel_id: int, changes: ChannelFields) -> ChannelRecord | None:
    with atomic(conn):
        groups.ensure_groups(conn, changes.get("groups", ()))
        if not channels.update_channel(conn, channel_id, **changes):
            return None
    return channels.get_channel(conn, channel_id)


def _enable_channel(conn: sqlite3.Connection, channel_id: int) -> list[DisabledKey] | None:
    with atomic(conn):
        if not channels.set_channel_enabled(conn, channel_id, True):
            return None
        return channels.enable_channel_keys(conn, channel_id)


def _found(record: T | None) -> T:
    if record is None:
        raise AssertionError("a row written in this transaction is missing")
    return record
