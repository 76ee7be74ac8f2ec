"""The reservation path's parts beyond the plain hold, on PostgreSQL: holds
checked against budgets (:mod:`gateway_core.billing.budgets`) in one transaction
serialized per user, and the hold owners' leases
(:mod:`gateway_core.store.hold_owners`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import asyncpg
import attrs

from gateway_core.billing.budgets import BudgetUse
from gateway_core.store.request_store import HoldOwner, HoldRefused
from gateway_core.store.budgets import budget_refused
from gateway_core.store.hold_owners import FORGET_AFTER as FORGET_OWNERS_AFTER
from . import statements as sql
from .faults import Attempt

if TYPE_CHECKING:
    from .store import PostgresStore


async def hold_within_budgets(
    store: PostgresStore, user_id: int, amount_micros: int, request_id: str, key_id: int | None, budgets: Sequence[BudgetUse]
) -> int:
    async def reserve(conn: asyncpg.Connection, attempt: Attempt) -> int:
        if attempt.after_lost_connection:  # the lost attempt may have committed: never reserve twice
            mine = await conn.fetchrow("SELECT user_id, amount_micros FROM holds WHERE request_id = $1", request_id)
            if mine is not None and (mine["user_id"], mine["amount_micros"]) == (user_id, amount_micros):
                balance: int = await conn.fetchval("SELECT balance_micros - held_micros FROM users WHERE id = $1", user_id)
                return balance
        async with conn.transaction():
            # the key's and the user's rows first: the user's reservations and settlements (which
            # update them too) wait for each other, and the budgets read below cannot move meanwhile
            await conn.execute(sql.LOCK_OWNERS, user_id, key_id, timeout=attempt.remaining)
            for use in budgets:
                statement = sql.BUDGET_SPENT_BY_KEY if use.is_key else sql.BUDGET_SPENT_BY_USER
                spent, oldest = await conn.fetchrow(statement, use.subject, use.first_hour, use.subject_id, timeout=attempt.remaining)
                if spent + amount_micros > use.cap_micros:
                    raise budget_refused(use, amount_micros, int(spent), oldest)
            available = 0
            for _ in range(2):  # a refusal that no longer holds when read is tried once more
                balance = await conn.fetchval(
                    sql.HOLD, user_id, amount_micros, request_id, key_id, time.time(), store._owner, timeout=attempt.remaining
                )
                if balance is not None:
                    return int(balance)
                refusal = await store._hold_refusal(conn, attempt, user_id, amount_micros, key_id)
                if isinstance(refusal, Exception):
                    raise refusal
                available = refusal
            raise HoldRefused("balance", needed=amount_micros, limit=available)

    result: int = await store._write("hold", reserve)
    return result


async def renew_hold_owner(store: PostgresStore, owner: HoldOwner, gone: Sequence[str] = ()) -> list[HoldOwner]:
    async def renew(conn: asyncpg.Connection, attempt: Attempt) -> list[HoldOwner]:
        now = time.time()
        async with conn.transaction():
            await conn.execute(sql.RENEW_OWNER, *attrs.astuple(owner), timeout=attempt.remaining)
            await conn.execute(sql.END_LEASES, [other for other in gone if other != owner.id], timeout=attempt.remaining)
            await conn.execute(sql.FORGET_OWNERS, now - FORGET_OWNERS_AFTER, timeout=attempt.remaining)
            rows = await conn.fetch(sql.LIVE_OWNERS, owner.id, now, timeout=attempt.remaining)
        return [HoldOwner(*row) for row in rows]

    return await store._write("renew_hold_owner", renew)


class OwnedHolds:
    """The part of :class:`~.store.PostgresStore` that owns holds: their owner's id,
    its lease, and holds checked against budgets."""

    _owner: str | None = None

    def own_holds(self, owner: str) -> None:
        self._owner = owner

    async def renew_hold_owner(self, owner: HoldOwner, gone: Sequence[str] = ()) -> list[HoldOwner]:
        return await renew_hold_owner(cast("PostgresStore", self), owner, gone)

    async def hold_within_budgets(
        self, user_id: int, amount_micros: int, request_id: str, key_id: int | None, budgets: Sequence[Any]
    ) -> int:
        return await hold_within_budgets(cast("PostgresStore", self), user_id, amount_micros, request_id, key_id, budgets)

