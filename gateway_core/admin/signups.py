"""Self sign-up with an administrator's approval (``docs/teams.md#self-sign-up``).

When single sign-on's self sign-up waits for approval, a person the gateway does not
know and whose claims map to no team is kept as a pending sign-up: no user, no key,
no session, no money. A site admin lists the pending sign-ups and approves one (its
user is made, in the sign-up's default group and team with its role, in one
transaction; their next sign-in lands) or rejects it (their sign-ins are refused
until an administrator adds them by hand). Every front (the command line, the
console, the management API) calls these, with the same rules and messages."""

from __future__ import annotations

from ..records import UserRecord
from ..team_records import SIGNUP_STATES, SignupRecord
from .context import Admin
from .errors import Conflict, Invalid, NotFound
from .groups import check_group_names
from .rules import check_user_name
from .team_access import Caller, require_site

DECIDE = "approve or reject sign-ups"


async def request_signup(admin: Admin, name: str, *, team: str, role: str, group: str) -> tuple[SignupRecord, bool]:
    """The sign-up of the person named ``name`` (kept pending when new), and whether it is new."""
    check_user_name(name)
    check_group_names((group,))
    return await admin.store.add_signup(name, team, role, group)


async def list_signups(admin: Admin, *, status: str | None = "pending", caller: Caller | None = None) -> list[SignupRecord]:
    """The sign-ups in ``status`` (every one: ``None``), oldest first (site admins only)."""
    require_site(caller, "see sign-ups")
    if status is not None and status not in SIGNUP_STATES:
        raise Invalid(f"must be one of {', '.join(SIGNUP_STATES)}, got {status!r}", "status")
    return await admin.store.list_signups(status)


async def find_signup(admin: Admin, name: str, *, caller: Caller | None = None) -> SignupRecord:
    """The sign-up of the person named ``name`` (site admins only)."""
    require_site(caller, "see sign-ups")
    found = await admin.store.find_signup(name)
    if found is None:
        raise NotFound(f"no sign-up of {name!r}")
    return found


async def get_signup(admin: Admin, signup_id: int, *, caller: Caller | None = None) -> SignupRecord:
    """The sign-up with id ``signup_id`` (site admins only)."""
    require_site(caller, "see sign-ups")
    return await _by_id(admin, signup_id)


async def approve_signup(admin: Admin, signup_id: int, *, caller: Caller | None = None) -> tuple[SignupRecord, UserRecord]:
    """Approve a pending sign-up: its user is made in the sign-up's group and, when its
    team is live, a member of it in the sign-up's role (site admins only). The sign-up
    after, and the user."""
    require_site(caller, DECIDE)
    signup = await _pending(admin, signup_id)
    if await admin.store.find_user(signup.name) is not None:
        raise Conflict(f"user {signup.name!r} already exists: reject the sign-up of {signup.name!r} instead")
    team = await admin.store.find_team(signup.team) if signup.team else None
    team_id = team.id if team is not None and not team.deleted else None
    user = await admin.store.approve_signup(signup.id, [signup.group], team_id, signup.role)
    if user is None:  # decided by someone else meanwhile
        await _pending(admin, signup_id)
        raise NotFound(f"no sign-up with id {signup_id}")
    return await _by_id(admin, signup.id), user


async def reject_signup(admin: Admin, signup_id: int, *, caller: Caller | None = None) -> SignupRecord:
    """Reject a pending sign-up: that person's sign-ins are refused (site admins only)."""
    require_site(caller, DECIDE)
    await _pending(admin, signup_id)
    if not await admin.store.reject_signup(signup_id):
        await _pending(admin, signup_id)
    return await _by_id(admin, signup_id)


async def _by_id(admin: Admin, signup_id: int) -> SignupRecord:
    found = await admin.store.get_signup(signup_id)
    if found is None:
        raise NotFound(f"no sign-up with id {signup_id}")
    return found


async def _pending(admin: Admin, signup_id: int) -> SignupRecord:
    signup = await _by_id(admin, signup_id)
    if signup.status != "pending":
        raise Conflict(f"the sign-up of {signup.name!r} is {signup.status} already")
    return signup
