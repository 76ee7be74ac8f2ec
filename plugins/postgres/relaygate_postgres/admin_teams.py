"""The teams' part of the admin port on PostgreSQL: the SQLite store's statements
(:mod:`gateway_core.store.teams`), numbered, each operation one transaction."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import asyncpg

from gateway_core.records import KeyRecord
from gateway_core.store import teams as sql
from gateway_core.store.team_records import TeamMember, TeamRecord
from .admin_base import AdminBase, changed, found
from .admin_users import add_user, create_key, get_key
from .migrate import numbered

_DELETE_ACCOUNT = (
    "UPDATE users SET enabled = 0, deleted_at = $1, sessions_after = $1, password_hash = NULL WHERE id = $2 AND deleted_at IS NULL"
)


async def _team(conn: asyncpg.Connection, where: str, *params: object) -> TeamRecord | None:
    row = await conn.fetchrow(f"{sql.TEAM_SELECT} WHERE {where}", *params)
    return sql.team_record(row) if row is not None else None


class TeamsAdmin(AdminBase):
    """The teams' part of :class:`~.admin.PostgresAdmin`."""

    async def create_team(self, name: str, account: str, groups: Sequence[str]) -> TeamRecord:
        async def create(conn: asyncpg.Connection) -> TeamRecord:
            account_id = await add_user(conn, account, is_admin=False, password_hash=None, groups=list(groups))
            team_id = await conn.fetchval(numbered(sql.INSERT_TEAM) + " RETURNING id", name, account_id, time.time())
            return found(await _team(conn, "id = $1", team_id))

        return await self._write("create_team", create)

    async def get_team(self, team_id: int) -> TeamRecord | None:
        return await self._read("get_team", lambda conn: _team(conn, "id = $1", team_id))

    async def find_team(self, name: str) -> TeamRecord | None:
        return await self._read("find_team", lambda conn: _team(conn, "name = $1", name))

    async def list_teams(self) -> list[TeamRecord]:
        async def listed(conn: asyncpg.Connection) -> list[TeamRecord]:
            return [sql.team_record(row) for row in await conn.fetch(f"{sql.TEAM_SELECT} ORDER BY id")]

        return await self._read("list_teams", listed)

    async def rename_team(self, team_id: int, name: str, account: str) -> bool:
        async def rename(conn: asyncpg.Connection) -> bool:
            team = await _team(conn, "id = $1 FOR UPDATE", team_id)
            if team is None or not changed(await conn.execute(numbered(sql.RENAME_TEAM), name, team_id)):
                return False
            await conn.execute(numbered(sql.RENAME_ACCOUNT), account, team.account_id)
            return True

        return await self._write("rename_team", rename)

    async def delete_team(self, team_id: int) -> bool:
        async def delete(conn: asyncpg.Connection) -> bool:
            now = time.time()
            team = await _team(conn, "id = $1 FOR UPDATE", team_id)
            if team is None or not changed(await conn.execute(numbered(sql.DELETE_TEAM), now, team_id)):
                return False
            await conn.execute(_DELETE_ACCOUNT, now, team.account_id)
            await conn.execute("UPDATE api_keys SET deleted = 1, enabled = 0 WHERE user_id = $1 AND deleted = 0", team.account_id)
            await conn.execute("UPDATE access_tokens SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL", now, team.account_id)
            await conn.execute(numbered(sql.DELETE_MEMBERS), team_id)
            return True

        return await self._write("delete_team", delete)

    async def set_member(self, team_id: int, user_id: int, role: str) -> None:
        async def upsert(conn: asyncpg.Connection) -> None:
            await conn.execute(numbered(sql.UPSERT_MEMBER), team_id, user_id, role, time.time())

        await self._write("set_member", upsert)

    async def remove_member(self, team_id: int, user_id: int) -> bool:
        async def remove(conn: asyncpg.Connection) -> bool:
            team = await _team(conn, "id = $1", team_id)
            if team is None or not changed(await conn.execute(numbered(sql.DELETE_MEMBER), team_id, user_id)):
                return False
            await conn.execute(numbered(sql.DELETE_MEMBER_KEYS), team.account_id, user_id)
            return True

        return await self._write("remove_member", remove)

    async def list_members(self, team_id: int) -> list[TeamMember]:
        async def listed(conn: asyncpg.Connection) -> list[TeamMember]:
            rows = await conn.fetch(f"{sql.MEMBER_SELECT} WHERE m.team_id = $1 ORDER BY u.name", team_id)
            return [sql.member_record(row) for row in rows]

        return await self._read("list_members", listed)

    async def memberships(self, user_id: int) -> list[TeamMember]:
        async def listed(conn: asyncpg.Connection) -> list[TeamMember]:
            rows = await conn.fetch(f"{sql.MEMBER_SELECT} WHERE m.user_id = $1 AND t.deleted_at IS NULL ORDER BY t.name", user_id)
            return [sql.member_record(row) for row in rows]

        return await self._read("memberships", listed)

    async def create_team_key(self, account_id: int, member_id: int | None, fields: dict[str, Any]) -> tuple[KeyRecord, str]:
        async def create(conn: asyncpg.Connection) -> tuple[KeyRecord, str]:
            key_id, secret = await create_key(conn, account_id, **fields)
            if member_id is not None:
                await conn.execute(numbered(sql.SET_KEY_MEMBER), member_id, key_id)
            return found(await get_key(conn, key_id)), secret

        return await self._write("create_team_key", create)
