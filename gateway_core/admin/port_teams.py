"""The admin port's part for teams and sign-ups (``docs/teams.md``; see :mod:`.port` for the
rules every method follows). Both stores implement it with the rest of the port.
A team's wallet, groups, limits and budgets are its account's: a user row, read
and changed through the users' part of the port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..records import KeyRecord, UserRecord
from ..team_records import SignupRecord, TeamMember, TeamRecord


class TeamStore(Protocol):
    async def create_team(self, name: str, account: str, groups: Sequence[str]) -> TeamRecord:
        """The team and its account named ``account`` (opened to ``groups``), in one transaction."""

    async def get_team(self, team_id: int) -> TeamRecord | None: ...

    async def find_team(self, name: str) -> TeamRecord | None: ...

    async def list_teams(self) -> list[TeamRecord]:
        """Every team, deleted ones included, by id."""

    async def rename_team(self, team_id: int, name: str, account: str) -> bool:
        """Rename a live team and its account; ``False``: no such team."""

    async def delete_team(self, team_id: int) -> bool:
        """Delete a live team, its account (as ``delete_user``) and its memberships, in one transaction."""

    async def set_member(self, team_id: int, user_id: int, role: str) -> None:
        """Add a member, or change their role."""

    async def remove_member(self, team_id: int, user_id: int) -> bool:
        """End a membership and delete the member's keys in the team, in one transaction;
        ``False``: not a member."""

    async def list_members(self, team_id: int) -> list[TeamMember]: ...

    async def memberships(self, user_id: int) -> list[TeamMember]:
        """The live teams a user is in, with their role in each."""

    async def create_team_key(self, account_id: int, member_id: int | None, fields: dict[str, Any]) -> tuple[KeyRecord, str]:
        """A key of the team's account (``fields`` as ``create_key``'s), a member's or
        (``member_id`` ``None``) the team's own; the key and its secret."""


class SignupStore(Protocol):
    """Sign-ups waiting for a site admin's approval (``docs/teams.md#self-sign-up``)."""

    async def add_signup(self, name: str, team: str, role: str, group: str) -> tuple[SignupRecord, bool]:
        """A new pending sign-up of ``name``, or the one kept before (whatever its state); and whether it is new."""

    async def get_signup(self, signup_id: int) -> SignupRecord | None: ...

    async def find_signup(self, name: str) -> SignupRecord | None: ...

    async def list_signups(self, status: str | None = None) -> list[SignupRecord]:
        """Sign-ups in ``status`` (every one: ``None``), oldest first."""

    async def reject_signup(self, signup_id: int) -> bool:
        """A pending sign-up rejected; ``False``: none pending with this id."""

    async def approve_signup(self, signup_id: int, groups: Sequence[str], team_id: int | None, role: str) -> UserRecord | None:
        """A pending sign-up approved, its user made (opened to ``groups``) and, with
        ``team_id``, made a member in ``role``, in one transaction; ``None``: none pending
        with this id (:class:`~.errors.Conflict` when its name is a user's already)."""
