"""Who may do what in a team (``docs/teams.md``): a caller's role in a team, and the
check every team operation makes first.

The caller is the signed-in user a front acts for (anything with ``user_id`` and
``is_admin``: the management API's principal), or ``None`` for the operator on the
command line. A site admin (``users.is_admin``) may do everything; in a team, an
``admin`` manages its members, keys and key limits, a ``member`` their own keys,
a ``viewer`` reads its usage. A team the caller is not in is not found: they
cannot tell it from one that does not exist. What the site alone sets (a team's
groups, wallet, rate limits and budgets; teams themselves) is refused to everyone
else."""

from __future__ import annotations

from typing import Protocol

from ..store.team_records import TeamRecord
from .context import Admin
from .errors import Forbidden, Invalid, NotFound


class Caller(Protocol):
    @property
    def user_id(self) -> int: ...

    @property
    def is_admin(self) -> bool: ...


SITE = "site"  # the caller is a site admin (or the operator's command line)
READ = frozenset({SITE, "admin", "member", "viewer"})  # the team, its members and usage
KEYS = frozenset({SITE, "admin", "member"})  # one's own keys in the team
MANAGE = frozenset({SITE, "admin"})  # members, every key of the team and their limits
SITE_ONLY = frozenset({SITE})  # teams, their groups, wallet, rate limits and budgets


def is_site(caller: Caller | None) -> bool:
    return caller is None or caller.is_admin


async def caller_role(admin: Admin, team: TeamRecord, caller: Caller | None) -> str | None:
    """``"site"``, the caller's role in the team, or ``None`` (not in it)."""
    if is_site(caller):
        return SITE
    assert caller is not None
    for member in await admin.store.memberships(caller.user_id):
        if member.team_id == team.id:
            return member.role
    return None


def require_site(caller: Caller | None, what: str) -> None:
    if not is_site(caller):
        raise Forbidden(f"Only a site admin may {what}.")


async def team_for(admin: Admin, team_id: int, caller: Caller | None, need: frozenset[str], what: str) -> tuple[TeamRecord, str]:
    """The live team ``team_id`` and the caller's role in it, when that role allows
    ``need`` (:class:`NotFound` when the caller is not in it, :class:`Forbidden`
    naming ``what`` when their role does not allow it)."""
    team = await admin.store.get_team(team_id)
    role = None if team is None or team.deleted else await caller_role(admin, team, caller)
    if team is None or role is None:
        raise NotFound(f"no team with id {team_id}")
    if role not in need:
        allowed = "a site admin" if need == SITE_ONLY else " or ".join(sorted(f"a team {r}" for r in need - {SITE})) + " (or a site admin)"
        raise Forbidden(f"Only {allowed} may {what}; you are a {role} of team {team.name!r}.")
    return team, role


async def refuse_team_wallet(admin: Admin, user_id: int, what: str) -> None:
    """:class:`Invalid` when ``user_id`` is a team's wallet (its account): nobody signs in
    as a team, nor makes it a site admin."""
    if any(team.account_id == user_id for team in await admin.store.list_teams()):
        raise Invalid(f"is a team's wallet: it cannot {what} (docs/teams.md)", "user")
