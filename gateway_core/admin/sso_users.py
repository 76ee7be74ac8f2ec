"""People who sign in through an OpenID provider (``docs/teams.md#single-sign-on``):
their user made just in time, and their team memberships and roles set from the
provider's group claims at every sign-in.

A front (the console) verifies the ID token and hands over the person's name and
the teams and roles their claims map to; this module decides, writes through the
admin port and records an audit row for each change, with ``via`` ``"sso"``.
Only the teams the operator's mapping names are kept in step with the claims: a
membership in another team, given by hand, is left alone."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NoReturn

import attrs

from ..store.access_records import Actor
from ..records import DEFAULT_GROUP, UserRecord
from ..team_records import ROLES
from . import audit, signups, teams, users
from .context import Admin
from .errors import Invalid

RANK = {role: len(ROLES) - i for i, role in enumerate(ROLES)}  # admin > member > viewer


class Refused(Exception):
    """The person may not sign in; the message says why, for them to read."""


class Pending(Refused):
    """The person's sign-up waits for a site admin's approval (:mod:`.signups`)."""


@attrs.frozen
class SignOn:
    """What the provider's verified claims say of one person."""

    name: str  # the user name: the email, or the preferred user name
    memberships: Mapping[str, str]  # team name -> role, from the mapped claims
    managed_teams: Collection[str]  # every team the mapping names: their memberships follow the claims


@attrs.frozen
class SignUp:
    """Self sign-up: a person the gateway does not know, and whose claims map to no
    team, gets a user in ``group`` and, when ``team`` is set, ``role`` in it; with
    ``approval``, only once a site admin approves their sign-up."""

    enabled: bool = False
    team: str = ""
    role: str = "member"
    group: str = DEFAULT_GROUP
    approval: bool = False


def strongest(roles: Sequence[str]) -> str:
    """The role of a person whose claims give them several in one team."""
    return max(roles, key=lambda role: RANK[role])


async def sign_on(admin: Admin, person: SignOn, signup: SignUp, *, request_id: str | None = None) -> UserRecord:
    """The user ``person`` signs in as, created when new (their claims map to a team,
    or self sign-up is on), with their memberships set from their claims.
    :class:`Refused` when they may not sign in."""
    user = await admin.store.find_user(person.name)
    if user is not None and (user.deleted or not user.enabled):
        raise Refused("This account is disabled on the gateway: ask an administrator.")
    if user is not None and await _is_team_account(admin, user.id):
        raise Refused("This name belongs to a team's wallet: nobody signs in as it.")
    wanted = dict(person.memberships)
    if user is None:
        if not wanted and not signup.enabled:
            raise Refused("Your account is not set up on this gateway, and sign-up is closed: ask an administrator to add you.")
        if not wanted and signup.approval:
            await _wait_for_approval(admin, person.name, signup, request_id)
        groups = (signup.group,) if signup.enabled else (DEFAULT_GROUP,)
        try:
            user = await users.create_user(admin, person.name, groups=groups)
        except Invalid as exc:
            raise Refused(f"Your name from the identity provider cannot be a user name here: it {exc.detail}.") from None
        await audit.record(admin, _actor(user, request_id), "user.create", f"user {user.id}", None, user)
        if not wanted and signup.team:
            wanted[signup.team] = signup.role
            person = attrs.evolve(person, managed_teams=(*person.managed_teams, signup.team))
    await _sync_memberships(admin, user, wanted, person.managed_teams, request_id)
    return user


async def _wait_for_approval(admin: Admin, name: str, signup: SignUp, request_id: str | None) -> NoReturn:
    """Keep the person's sign-up for a site admin (:class:`Pending`), or refuse one rejected."""
    try:
        found, created = await signups.request_signup(admin, name, team=signup.team, role=signup.role, group=signup.group)
    except Invalid as exc:
        raise Refused(f"Your name from the identity provider cannot be a user name here: it {exc.detail}.") from None
    if created:
        who = audit.actor("sso", None, name, request_id=request_id)
        await audit.record(admin, who, "signup.request", f"signup {found.id}", None, found)
    if found.status == "rejected":
        raise Refused("An administrator declined your sign-up on this gateway: ask them if this is a mistake.")
    raise Pending("Your sign-up is waiting for an administrator's approval: sign in again once they have approved it.")


async def _sync_memberships(admin: Admin, user: UserRecord, wanted: Mapping[str, str], managed: Collection[str], request_id: str | None) -> None:
    """Add, change and end ``user``'s memberships in the ``managed`` teams to match ``wanted``."""
    who = _actor(user, request_id)
    current = {member.team_name: member for member in await admin.store.memberships(user.id)}
    for team_name, role in sorted(wanted.items()):
        before = current.get(team_name)
        if before is not None and before.role == role:
            continue
        team = await admin.store.find_team(team_name)
        if team is None or team.deleted:
            continue  # a mapping to a team that does not exist (yet) gives nothing until it does
        after = await teams.set_member(admin, team.id, user.id, role)
        await audit.record(admin, who, "team.member.add" if before is None else "team.member.role", f"team {team.id}", before, after)
    for team_name, member in sorted(current.items()):
        if team_name in managed and team_name not in wanted:
            await teams.remove_member(admin, member.team_id, user.id)
            await audit.record(admin, who, "team.member.remove", f"team {member.team_id}", member, None)


async def _is_team_account(admin: Admin, user_id: int) -> bool:
    return any(team.account_id == user_id for team in await admin.store.list_teams())


def _actor(user: UserRecord, request_id: str | None) -> Actor:
    return audit.actor("sso", user.id, user.name, request_id=request_id)
