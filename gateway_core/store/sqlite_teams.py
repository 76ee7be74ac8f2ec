"""The teams' part of the admin port on SQLite (:class:`~gateway_core.admin.port_teams.TeamStore`, :mod:`.teams`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..records import KeyRecord
from .team_records import TeamMember, TeamRecord
from . import teams


class SqliteTeams:
    """Mixed into :class:`~.sqlite_admin.SqliteAdmin`, whose ``_read`` and ``_write`` it uses."""

    _read: Callable[..., Awaitable[Any]]
    _write: Callable[..., Awaitable[Any]]

    async def create_team(self, name: str, account: str, groups: Sequence[str]) -> TeamRecord:
        team: TeamRecord = await self._write(teams.create_team, name, account, list(groups))
        return team

    async def get_team(self, team_id: int) -> TeamRecord | None:
        team: TeamRecord | None = await self._read(teams.get_team, team_id)
        return team

    async def find_team(self, name: str) -> TeamRecord | None:
        team: TeamRecord | None = await self._read(teams.find_team, name)
        return team

    async def list_teams(self) -> list[TeamRecord]:
        listed: list[TeamRecord] = await self._read(teams.list_teams)
        return listed

    async def rename_team(self, team_id: int, name: str, account: str) -> bool:
        return bool(await self._write(teams.rename_team, team_id, name, account))

    async def delete_team(self, team_id: int) -> bool:
        return bool(await self._write(teams.delete_team, team_id))

    async def set_member(self, team_id: int, user_id: int, role: str) -> None:
        await self._write(teams.set_member, team_id, user_id, role)

    async def remove_member(self, team_id: int, user_id: int) -> bool:
        return bool(await self._write(teams.remove_member, team_id, user_id))

    async def list_members(self, team_id: int) -> list[TeamMember]:
        members: list[TeamMember] = await self._read(teams.list_members, team_id)
        return members

    async def memberships(self, user_id: int) -> list[TeamMember]:
        members: list[TeamMember] = await self._read(teams.memberships, user_id)
        return members

    async def create_team_key(self, account_id: int, member_id: int | None, fields: dict[str, Any]) -> tuple[KeyRecord, str]:
        created: tuple[KeyRecord, str] = await self._write(teams.create_team_key, account_id, member_id, dict(fields))
        return created
