"""The usage log's rollup and pruning on PostgreSQL (the admin port's part of
:class:`~gateway_core.admin.port.AdminStore`, statements of :mod:`..usage_hourly`).

Each call is one short transaction on the pool at READ COMMITTED:

- a rollup locks ``usage_rollup``'s one row (``FOR UPDATE``): rollups of
  several replicas take turns, and each folds ids past the mark the previous
  one left. Ids are not handed out in commit order here, so it folds only up to
  the largest id seen :data:`POSTGRES_MARGIN` seconds earlier;
- a prune first takes a transaction-level advisory lock
  (``pg_try_advisory_xact_lock``): while another replica's batch holds it, this
  one deletes nothing and says so (``None``). Its ``DELETE`` takes the rows'
  locks only, for one batch, never the table's.
"""

from __future__ import annotations

import asyncpg

from gateway_core.base.retention import Prunable, RollupStep
from gateway_core.store import usage_hourly
from .admin_base import AdminBase, changed
from .migrate import numbered

# seconds after an id is seen before the rollup counts every smaller id as final:
# a settlement's transaction holds its id for at most its timeout (seconds)
POSTGRES_MARGIN = 60.0
_NOW = "SELECT extract(epoch FROM clock_timestamp())::double precision"
_PRUNE_LOCK = 0x72656C6170  # the advisory lock one prune batch at a time holds
_FOLD = numbered(usage_hourly.fold_sql(postgres=True))
_FOLD_SITE = numbered(usage_hourly.fold_site_sql(postgres=True))
_SET_STATE = numbered(usage_hourly.SET_STATE)
_PRUNE = numbered(usage_hourly.PRUNE.format(index=""))
_PRUNABLE = numbered(usage_hourly.PRUNABLE)


class PostgresRetention(AdminBase):
    async def roll_up_usage(self, batch: int, now: float | None = None, margin: float | None = None) -> RollupStep:
        wait = POSTGRES_MARGIN if margin is None else margin

        async def roll_up(conn: asyncpg.Connection) -> RollupStep:
            state = await conn.fetchrow(usage_hourly.STATE + " FOR UPDATE")
            top = await conn.fetchval(usage_hourly.TOP)
            # the database's clock by default: replicas whose clocks differ agree on the margin
            when = now if now is not None else float(await conn.fetchval(_NOW))
            step = usage_hourly.next_step(tuple(state), int(top), when, batch, wait)
            if step.folded:
                await conn.execute(_FOLD, step.rolled_id, step.end)
                await conn.execute(_FOLD_SITE, step.rolled_id, step.end)
            await conn.execute(_SET_STATE, step.end, step.seen_id, step.seen_at)
            return step

        return await self._write("roll_up_usage", roll_up)

    async def prune_usage(self, before: float, batch: int) -> int | None:
        async def prune(conn: asyncpg.Connection) -> int | None:
            if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", _PRUNE_LOCK):
                return None
            return changed(await conn.execute(_PRUNE, float(before), batch))

        return await self._write("prune_usage", prune)

    async def prunable_usage(self, before: float) -> Prunable:
        async def prunable(conn: asyncpg.Connection) -> Prunable:
            return usage_hourly.prunable_of(await conn.fetchrow(_PRUNABLE, float(before)))

        return await self._read("prunable_usage", prunable)
