"""Teams (``docs/teams.md``): created, renamed and deleted by a site admin, given
groups, rate limits, budgets and money by a site admin, with members in roles.

A team's wallet, groups, rate limits and budgets are its account's (a ``users``
row named ``team:NAME``: :data:`gateway_core.team_records.ACCOUNT_PREFIX`), so the
request path, the ledger, budgets and ``relaygate check`` treat them as any
user's. Every operation takes the ``caller`` (:mod:`.team_access`) and checks
their role first; keys are in :mod:`.team_keys`."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..records import BUDGET_COLUMNS, DEFAULT_GROUP, LIMIT_COLUMNS, UserRecord, UsageFilter, UsageTotal
from ..team_records import ACCOUNT_PREFIX, ROLES, TeamMember, TeamRecord, account_name
from . import usage, users, wallet
from .context import Admin
from .errors import Conflict, Invalid, NotFound
from .groups import check_group_names
from .port import LimitChanges
from .rules import MAX_USER_NAME, check_amount, check_limits, check_user_name
from .team_access import KEYS, MANAGE, READ, SITE, SITE_ONLY, Caller, caller_role, is_site, require_site, team_for


MANAGE_MEMBERS = "manage this team's members"


@attrs.frozen
class TeamView:
    """A team as its members see it: its account (wallet, groups), limits and members."""

    team: TeamRecord
    role: str  # the caller's: site, admin, member or viewer
    account: UserRecord
    limits: dict[str, int | None]  # rate limits and budgets (users' columns)
    members: list[TeamMember]

    @property
    def site(self) -> bool:
        """The caller is a site admin: the team's groups, wallet, limits and budgets are theirs to set."""
        return self.role == SITE

    @property
    def manages(self) -> bool:
        """The caller may manage the team's members and every key of it."""
        return self.role in MANAGE

    @property
    def makes_own_keys(self) -> bool:
        """The caller may make their own keys in the team (a site admin makes its service keys)."""
        return self.role in KEYS and self.role != SITE


def check_team_name(name: object) -> str:
    """A team name: the rule of user names, short enough for its account's name."""
    try:
        check_user_name(name)
    except Invalid as exc:
        raise Invalid(exc.detail, "team") from None
    assert isinstance(name, str)
    if len(name) > MAX_USER_NAME - len(ACCOUNT_PREFIX):
        raise Invalid(f"must be at most {MAX_USER_NAME - len(ACCOUNT_PREFIX)} characters", "team")
    return name


def check_role(role: object) -> str:
    if role not in ROLES:
        raise Invalid(f"must be one of {', '.join(ROLES)}, got {role!r}", "role")
    assert isinstance(role, str)
    return role


async def create_team(admin: Admin, name: str, *, groups: Sequence[str] = (DEFAULT_GROUP,), caller: Caller | None = None) -> TeamRecord:
    """A team with an empty wallet, opened to ``groups`` (site admins only)."""
    require_site(caller, "create teams")
    check_team_name(name)
    if not groups:
        raise Invalid("needs at least one group", "groups")
    check_group_names(groups)
    if await admin.store.find_team(name) is not None or await admin.store.find_user(account_name(name)) is not None:
        raise Conflict(f"team {name!r} already exists")
    try:
        return await admin.store.create_team(name, account_name(name), list(groups))
    except Conflict:
        raise Conflict(f"team {name!r} already exists") from None


async def find_team(admin: Admin, name: str, *, caller: Caller | None = None) -> TeamRecord:
    """The live team named ``name``, if the caller may see it."""
    team = await admin.store.find_team(name)
    if team is None or team.deleted or await caller_role(admin, team, caller) is None:
        raise NotFound(f"no team named {name!r}")
    return team


async def list_teams(admin: Admin, *, caller: Caller | None = None) -> list[tuple[TeamRecord, str]]:
    """The live teams the caller may see (all, for a site admin), with their role in each."""
    if is_site(caller):
        return [(team, "site") for team in await admin.store.list_teams() if not team.deleted]
    assert caller is not None
    teams = {team.id: team for team in await admin.store.list_teams()}
    return [(teams[m.team_id], m.role) for m in await admin.store.memberships(caller.user_id) if m.team_id in teams]


async def team_view(admin: Admin, team_id: int, *, caller: Caller | None = None) -> TeamView:
    """The team, its wallet, groups, limits and members (any role)."""
    team, role = await team_for(admin, team_id, caller, READ, "see this team")
    account = await users.get_user(admin, team.account_id)
    limits = await users.user_limits(admin, account)
    return TeamView(team, role, account, limits, await admin.store.list_members(team.id))


async def edit_team(
    admin: Admin, team_id: int, *, name: str | None = None, opened: Sequence[str] = (), closed: Sequence[str] = (),
    limits: LimitChanges | None = None, caller: Caller | None = None,
) -> TeamView:  # fmt: skip
    """Rename a team, open or close groups to it, set its rate limits and budgets
    (``rpm``, ``daily_budget_micros``, …; ``None`` clears one): site admins only."""
    team, _ = await team_for(admin, team_id, caller, SITE_ONLY, "change a team's name, groups, rate limits or budgets")
    if name is not None and name != team.name:
        check_team_name(name)
        if await admin.store.find_team(name) is not None or await admin.store.find_user(account_name(name)) is not None:
            raise Conflict(f"team {name!r} already exists")
        if not await admin.store.rename_team(team.id, name, account_name(name)):
            raise NotFound(f"no team with id {team_id}")
    if opened or closed:
        await users.change_groups(admin, team.account_id, opened=opened, closed=closed)
    if limits:
        check_team_limits(limits)
        await users.set_user_limits(admin, await users.get_user(admin, team.account_id), limits)
    return await team_view(admin, team_id, caller=caller)


def check_team_limits(limits: LimitChanges) -> None:
    """A team's rate limits (:data:`LIMIT_COLUMNS`) and budgets (:data:`BUDGET_COLUMNS`, micro-USD;
    ``None`` clears one), or :class:`Invalid` naming the first wrong one."""
    for column in limits:
        if column not in LIMIT_COLUMNS and column not in BUDGET_COLUMNS:
            raise Invalid(f"is not a team's limit (one of {', '.join((*LIMIT_COLUMNS, *BUDGET_COLUMNS))})", column)
    check_limits(limits)  # a user's, a key's and a group's rule


async def delete_team(admin: Admin, team_id: int, *, caller: Caller | None = None) -> TeamRecord:
    """Delete a team for good: every key of it stops, its members leave; its wallet,
    ledger and usage rows stay (history, as a deleted user's). Site admins only."""
    team, _ = await team_for(admin, team_id, caller, SITE_ONLY, "delete teams")
    if not await admin.store.delete_team(team.id):
        raise NotFound(f"no team with id {team_id}")
    admin.caches.user_changed(team.account_id)
    return team


async def set_member(admin: Admin, team_id: int, user_id: int | None, role: str, *, caller: Caller | None = None) -> TeamMember:
    """Add a person to a team in ``role``, or change their role (a team admin of
    the team, or a site admin). Their keys in the team follow at once: a viewer's stop."""
    team, _ = await team_for(admin, team_id, caller, MANAGE, MANAGE_MEMBERS)
    check_role(role)
    if isinstance(user_id, bool) or not isinstance(user_id, int):
        raise Invalid("is required: the id of the user", "user_id")
    person = await users.live_user(admin, user_id)
    if any(other.account_id == person.id for other in await admin.store.list_teams()):
        raise Invalid(f"{person.name!r} is a team's account, not a person", "user")
    await admin.store.set_member(team.id, person.id, role)
    admin.caches.user_changed(person.id)
    return next(m for m in await admin.store.list_members(team.id) if m.user_id == person.id)


async def add_member_by_name(admin: Admin, team_id: int, name: str, role: str, *, caller: Caller | None = None) -> TeamMember:
    """:func:`set_member` for the person named ``name`` (the console's form): the caller's
    role is checked before the name is looked up, so only those who may add members
    learn whether a name exists."""
    await team_for(admin, team_id, caller, MANAGE, MANAGE_MEMBERS)
    person = await users.find_user(admin, name)
    return await set_member(admin, team_id, person.id, role, caller=caller)


async def remove_member(admin: Admin, team_id: int, user_id: int, *, caller: Caller | None = None) -> None:
    """Take a person out of a team (a team admin of the team, or a site admin): their
    keys in the team are deleted and stop at once, in every gateway that hears the
    invalidation."""
    team, _ = await team_for(admin, team_id, caller, MANAGE, MANAGE_MEMBERS)
    if not await admin.store.remove_member(team.id, user_id):
        raise NotFound(f"user {user_id} is not a member of team {team.name!r}")
    admin.caches.user_changed(user_id)


async def topup_team(admin: Admin, team_id: int, amount_micros: int, note: str | None = None, *, caller: Caller | None = None) -> int:
    """Credit a team's wallet (a ``topup`` ledger row of its account); the new balance. Site admins only."""
    check_amount(amount_micros, "amount")
    team, _ = await team_for(admin, team_id, caller, SITE_ONLY, "top up a team's wallet")
    return await wallet.topup(admin, team.account_id, amount_micros, note)


async def team_usage(admin: Admin, team_id: int, *, since: float | None = None, until: float | None = None, caller: Caller | None = None) -> UsageTotal:
    """Requests, tokens, cost and errors charged to the team (any role), from the usage log."""
    team, _ = await team_for(admin, team_id, caller, READ, "read this team's usage")
    return await admin.store.usage_filter_totals(UsageFilter(team_id=team.id, since=since, until=until))


async def team_usage_by(
    admin: Admin, team_id: int, by: str, *, since: float = 0, until: float | None = None, caller: Caller | None = None
) -> list[UsageTotal]:
    """The team's totals by ``"model"``, ``"key"`` or ``"member"`` (who spent what: the
    member whose key made each request; ``None`` for the team's service keys), costliest
    first (any role)."""
    if by not in ("model", *usage.OWN_TOTALS_BY):
        raise Invalid(f"must be one of model, {', '.join(usage.OWN_TOTALS_BY)}, not {by!r}", "by")
    team, _ = await team_for(admin, team_id, caller, READ, "read this team's usage")
    return await usage.usage_totals(admin, by, since, 200, until=until, user_id=team.account_id)
