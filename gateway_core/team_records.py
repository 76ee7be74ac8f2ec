"""Teams as the admin layer reads them (``docs/teams.md``): a team, and one person's
role in it. A team's money, groups, limits and budgets are those of its account
(``account_id``, a row of ``users``), read as a :class:`~gateway_core.records.UserRecord`."""

from __future__ import annotations

import attrs

ROLES = ("admin", "member", "viewer")  # a team admin, a member (their own keys), a viewer (usage only)
ACCOUNT_PREFIX = "team:"  # a team's account is the user named "team:NAME"; no person may take such a name


@attrs.frozen
class TeamRecord:
    id: int
    name: str
    account_id: int  # the users row that is the team's wallet
    created_at: float | None = None
    deleted: bool = False


@attrs.frozen
class TeamMember:
    team_id: int
    team_name: str
    user_id: int
    user_name: str
    role: str
    created_at: float | None = None


def account_name(team_name: str) -> str:
    """The name of a team's account (its wallet) in ``users``."""
    return f"{ACCOUNT_PREFIX}{team_name}"


SIGNUP_STATES = ("pending", "approved", "rejected")


@attrs.frozen
class SignupRecord:
    """A person who signed in through single sign-on and waits for a site admin's
    approval (``docs/teams.md#self-sign-up``): approving makes their user in ``group``,
    in ``team`` (when set) with ``role``; nothing is theirs before."""

    id: int
    name: str  # the user name they will have
    team: str  # the sign-up's default team ("": none)
    role: str
    group: str
    status: str  # one of SIGNUP_STATES
    created_at: float | None = None
    decided_at: float | None = None
