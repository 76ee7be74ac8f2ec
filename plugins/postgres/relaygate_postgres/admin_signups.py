"""Sign-ups waiting for a site admin's approval on PostgreSQL: the SQLite store's
statements (:mod:`gateway_core.store.signups`), numbered, each operation one transaction."""

from __future__ import annotations

import time
from collections.abc import Sequence

import asyncpg

from gateway_core.records import UserRecord
from gateway_core.store import signups as sql
from gateway_core.store import teams as team_sql
from gateway_core.team_records import SignupRecord
from .admin_base import AdminBase, changed, found
from .admin_users import add_user, get_user
from .migrate import numbered


async def _signup(conn: asyncpg.Connection, where: str, *params: object) -> SignupRecord | None:
    row = await conn.fetchrow(f"{sql.SIGNUP_SELECT} WHERE {where}", *params)
    return sql.signup_record(row) if row is not None else None


class SignupsAdmin(AdminBase):
    """The sign-ups' part of :class:`~.admin.PostgresAdmin`."""

    async def add_signup(self, name: str, team: str, role: str, group: str) -> tuple[SignupRecord, bool]:
        async def add(conn: asyncpg.Connection) -> tuple[SignupRecord, bool]:
            created = changed(await conn.execute(numbered(sql.INSERT_SIGNUP), name, team, role, group, time.time())) > 0
            return found(await _signup(conn, "name = $1", name)), created

        return await self._write("add_signup", add)

    async def get_signup(self, signup_id: int) -> SignupRecord | None:
        return await self._read("get_signup", lambda conn: _signup(conn, "id = $1", signup_id))

    async def find_signup(self, name: str) -> SignupRecord | None:
        return await self._read("find_signup", lambda conn: _signup(conn, "name = $1", name))

    async def list_signups(self, status: str | None = None) -> list[SignupRecord]:
        async def listed(conn: asyncpg.Connection) -> list[SignupRecord]:
            if status is None:
                return [sql.signup_record(row) for row in await conn.fetch(f"{sql.SIGNUP_SELECT} ORDER BY id")]
            return [sql.signup_record(row) for row in await conn.fetch(f"{sql.SIGNUP_SELECT} WHERE status = $1 ORDER BY id", status)]

        return await self._read("list_signups", listed)

    async def reject_signup(self, signup_id: int) -> bool:
        async def reject(conn: asyncpg.Connection) -> bool:
            return changed(await conn.execute(numbered(sql.DECIDE_SIGNUP), "rejected", time.time(), signup_id)) > 0

        return await self._write("reject_signup", reject)

    async def approve_signup(self, signup_id: int, groups: Sequence[str], team_id: int | None, role: str) -> UserRecord | None:
        async def approve(conn: asyncpg.Connection) -> UserRecord | None:
            signup = await _signup(conn, "id = $1 FOR UPDATE", signup_id)
            if signup is None or not changed(await conn.execute(numbered(sql.DECIDE_SIGNUP), "approved", time.time(), signup_id)):
                return None
            user_id = await add_user(conn, signup.name, is_admin=False, password_hash=None, groups=list(groups))
            if team_id is not None:
                await conn.execute(numbered(team_sql.UPSERT_MEMBER), team_id, user_id, role, time.time())
            return await get_user(conn, "u.id = $1", user_id)

        return await self._write("approve_signup", approve)
