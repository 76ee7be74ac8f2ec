"""Redemption codes on PostgreSQL (the admin port's part; see
:mod:`gateway_core.store.codes` for the rules, kept the same here).

A redemption is one transaction: the code's conditional ``UPDATE … RETURNING``
(concurrent redeemers of one code wait on its row lock and then find it
redeemed), the balance's ``UPDATE … RETURNING`` with its ``redemption`` ledger
row, and the group the code opens. It is not run again after a lost connection
(it may have committed).
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from gateway_core.billing.codes import Redeemed, RedemptionCode
from gateway_core.store.codes import REDEEM, SELECT_CODES, WHY_NOT, code_record, why_not
from .admin_base import AdminBase, changed
from .admin_money import change_balance
from .admin_users import open_groups
from .migrate import numbered

_INSERT = (
    "INSERT INTO redemption_codes (batch, code_hash, prefix, value_micros, group_name, expires_at, note, enabled, created_at) "
    "SELECT $1, h, p, $4, $5, $6, $7, 1, $8 FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t (h, p, n) "
    "ORDER BY n RETURNING id"
)
_REDEEM = REDEEM.replace("?1", "$1::bigint").replace("?2", "$2::double precision").replace("?3", "$3::text")


class CodesAdmin(AdminBase):
    async def create_codes(
        self, batch: str, hashes: Sequence[tuple[str, str]], *, value_micros: int, group: str | None,
        expires_at: float | None, note: str | None, now: float,
    ) -> list[int]:  # fmt: skip
        async def create(conn: asyncpg.Connection) -> list[int]:
            rows = await conn.fetch(
                _INSERT, batch, [h for h, _ in hashes], [p for _, p in hashes], value_micros, group, expires_at, note, now
            )
            return sorted(row["id"] for row in rows)

        return await self._write("create_codes", create)

    async def list_codes(self, batch: str | None, limit: int) -> list[RedemptionCode]:
        where = " WHERE c.batch = $1" if batch else " WHERE $1::text IS NULL"
        sql = f"{SELECT_CODES}{where} ORDER BY c.id DESC LIMIT $2"

        async def listed(conn: asyncpg.Connection) -> list[RedemptionCode]:
            return [code_record(row) for row in await conn.fetch(sql, batch, max(1, min(int(limit), 10000)))]

        return await self._read("list_codes", listed)

    async def disable_code(self, code_id: int) -> bool:
        sql = "UPDATE redemption_codes SET enabled = 0 WHERE id = $1"
        return await self._write("disable_code", lambda conn: _changed(conn, sql, code_id))

    async def redeem_code(self, user_id: int, code_hash: str, now: float) -> Redeemed | str:
        async def redeem(conn: asyncpg.Connection) -> Redeemed | str:
            async with conn.transaction():
                if await conn.fetchval("SELECT 1 FROM users WHERE id = $1", user_id) is None:
                    raise ValueError(f"no user with id {user_id}")
                row = await conn.fetchrow(_REDEEM, user_id, now, code_hash)
                if row is None:
                    return why_not(await conn.fetchrow(numbered(WHY_NOT), code_hash), now)
                code_id, value, group = row["id"], row["value_micros"], row["group_name"]
                balance = await change_balance(conn, user_id, value, "redemption", f"redemption code {code_id}")
                if group is not None:
                    await open_groups(conn, user_id, [group])
                return Redeemed(code_id, value, balance, group)

        return await self._write("redeem_code", redeem, once=True)


async def _changed(conn: asyncpg.Connection, sql: str, *params: object) -> bool:
    return changed(await conn.execute(sql, *params)) > 0

