"""The wallet, the money invariants and the usage log on PostgreSQL (the admin port).

- A top-up or an adjustment is **one statement**: the balance's ``UPDATE …
  RETURNING`` and its ledger row (carrying the balance after) commit together,
  at READ COMMITTED (the row lock orders concurrent changes of one balance, so
  the ledger stays a gap-free chain). It is not run again after a lost
  connection (it may have committed): the operator is told to look.
- ``check`` reads every invariant of :mod:`gateway_core.store.audit` (the same
  SQL) in one **REPEATABLE READ, READ ONLY** snapshot.
- A page of the usage log is :func:`gateway_core.store.usage.usage_query`'s
  keyset query: each filter has an index ending in ``created_at, id``, which
  PostgreSQL scans backwards for ``ORDER BY created_at DESC, id DESC LIMIT n``.
"""

from __future__ import annotations

import time

import asyncpg
import attrs

from gateway_core.admin.port import UsageRowDict
from gateway_core.records import AuditReport, Cursor, DailySpending, HoldRecord, LedgerEntry, UsageFilter, UsageTotal
from gateway_core.store.usage import daily_query, filter_totals_query, totals_query, usage_dict, usage_query
from .admin_base import AdminBase, plain_dict
from .audit import audit
from .migrate import numbered

MAX_PROBLEMS = 100  # as SQLite's audit reports at most

# $1 user, $2 signed amount, $3 kind, $4 note, $5 now: the new balance, or no row (no such user)
_CHANGE_BALANCE = """
WITH changed AS (
    UPDATE users SET balance_micros = balance_micros + $2::bigint WHERE id = $1::bigint RETURNING balance_micros
)
INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, note, created_at)
SELECT $1::bigint, $3::text, $2::bigint, balance_micros, $4::text, $5::double precision FROM changed
RETURNING balance_after_micros
"""
_LEDGER = (
    "SELECT id, user_id, kind, amount_micros, balance_after_micros, request_id, key_id, note, created_at "
    "FROM ledger WHERE user_id = $1 AND ($2::bigint IS NULL OR id < $2::bigint) ORDER BY id DESC LIMIT $3"
)
_LEDGER_OF_REQUEST = (
    "SELECT id, user_id, kind, amount_micros, balance_after_micros, request_id, key_id, note, created_at "
    "FROM ledger WHERE request_id = $1 ORDER BY id LIMIT 100"
)
_HOLDS = (
    "SELECT request_id, user_id, key_id, amount_micros, created_at FROM holds "
    "WHERE $1::bigint IS NULL OR user_id = $1::bigint ORDER BY created_at"
)


async def change_balance(conn: asyncpg.Connection, user_id: int, amount: int, kind: str, note: str | None) -> int:
    balance = await conn.fetchval(_CHANGE_BALANCE, user_id, amount, kind, note, time.time())
    if balance is None:
        raise ValueError(f"no user with id {user_id}")
    return int(balance)


class MoneyAdmin(AdminBase):
    """The wallet's, the audit's and the usage log's part of :class:`~.admin.PostgresAdmin`."""

    async def topup(self, user_id: int, amount_micros: int, note: str | None) -> int:
        async def credit(conn: asyncpg.Connection) -> int:
            if not isinstance(amount_micros, int) or amount_micros <= 0:
                raise ValueError("a top-up must be a positive amount")
            return await change_balance(conn, user_id, amount_micros, "topup", note)

        return await self._write("topup", credit, once=True)

    async def adjust(self, user_id: int, amount_micros: int, note: str | None) -> int:
        async def change(conn: asyncpg.Connection) -> int:
            return await change_balance(conn, user_id, int(amount_micros), "adjustment", note)

        return await self._write("adjust", change, once=True)

    async def list_ledger(self, user_id: int, *, before_id: int | None, limit: int) -> list[LedgerEntry]:
        async def entries(conn: asyncpg.Connection) -> list[LedgerEntry]:
            rows = await conn.fetch(_LEDGER, user_id, before_id, max(1, min(int(limit), 1000)))
            return [LedgerEntry(**dict(row)) for row in rows]

        return await self._read("list_ledger", entries)

    async def ledger_of_request(self, request_id: str) -> list[LedgerEntry]:
        async def entries(conn: asyncpg.Connection) -> list[LedgerEntry]:
            rows = await conn.fetch(_LEDGER_OF_REQUEST, request_id)
            return [LedgerEntry(**dict(row)) for row in rows]

        return await self._read("ledger_of_request", entries)

    async def list_holds(self, user_id: int | None = None) -> list[HoldRecord]:
        async def holds(conn: asyncpg.Connection) -> list[HoldRecord]:
            return [HoldRecord(**dict(row)) for row in await conn.fetch(_HOLDS, user_id)]

        return await self._read("list_holds", holds)

    async def check_ledger(self) -> AuditReport:
        async def check(conn: asyncpg.Connection) -> AuditReport:
            return await audit(conn, max_problems=MAX_PROBLEMS)

        return await self._read("check", check)

    # --- usage -------------------------------------------------------------------

    async def page_usage(
        self, filters: UsageFilter, before: Cursor | None, limit: int, *, after: Cursor | None = None
    ) -> list[UsageRowDict]:
        sql, params = usage_query(**attrs.asdict(filters), before=before, after=after, limit=limit, indexed=False)

        async def page(conn: asyncpg.Connection) -> list[UsageRowDict]:
            rows = [usage_dict(row) for row in await conn.fetch(numbered(sql), *params)]
            return rows[::-1] if after is not None else rows

        return await self._read("page_usage", page)

    async def get_usage(self, log_id: int) -> UsageRowDict | None:
        async def one(conn: asyncpg.Connection) -> UsageRowDict | None:
            row = await conn.fetchrow("SELECT * FROM usage_logs WHERE id = $1", int(log_id))
            return usage_dict(row) if row is not None else None

        return await self._read("get_usage", one)

    async def usage_filter_totals(self, filters: UsageFilter) -> UsageTotal:
        sql, params = filter_totals_query(**attrs.asdict(filters))

        async def totals(conn: asyncpg.Connection) -> UsageTotal:
            return UsageTotal(**plain_dict(await conn.fetchrow(numbered(sql), *params)))

        return await self._read("usage_filter_totals", totals)

    async def daily_spending(self, since: float, user_id: int | None = None) -> list[DailySpending]:
        sql, params = daily_query(since, user_id, postgres=True)

        async def days(conn: asyncpg.Connection) -> list[DailySpending]:
            return [DailySpending(**plain_dict(row)) for row in await conn.fetch(numbered(sql), *params)]

        return await self._read("daily_spending", days)

    async def usage_totals(
        self, by: str, since: float, limit: int = 50, *, until: float | None = None, user_id: int | None = None,
        bucket: float | None = None,
    ) -> list[UsageTotal]:
        sql, params = totals_query(by, since, limit, until=until, user_id=user_id, bucket=bucket, postgres=True)

        async def totals(conn: asyncpg.Connection) -> list[UsageTotal]:
            return [UsageTotal(**plain_dict(row)) for row in await conn.fetch(numbered(sql), *params)]

        return await self._read("usage_totals", totals)
