"""Self sign-up waiting for a site admin's approval, in the admin layer on SQLite and
PostgreSQL (docs/teams.md#self-sign-up): the person waits with nothing of theirs, a
site admin alone approves (the user is made in the sign-up's group, team and role) or
rejects them, and the messages every front shows."""

from __future__ import annotations

import pytest

from gateway_core.admin import Conflict, Forbidden, Invalid, NotFound
from gateway_core.admin import audit, signups, sso_users, teams, users
from gateway_core.admin.sso_users import Pending, Refused, SignOn, SignUp
from tests.test_teams import As, admin, registry, store, world  # noqa: F401 (the fixtures, on both stores)

APPROVAL = SignUp(enabled=True, approval=True, team="eng", role="viewer", group="trial")


def newcomer(name: str = "zoe@example.com") -> SignOn:
    return SignOn(name, {}, ("ops",))  # no mapped group of theirs


async def test_a_new_person_waits_for_approval_and_lands_once_approved(admin, world):
    eng, _, callers = world
    for _ in range(2):  # signing in again keeps the one sign-up
        with pytest.raises(Pending, match="waiting for an administrator's approval"):
            await sso_users.sign_on(admin, newcomer(), APPROVAL)
    assert await admin.store.find_user("zoe@example.com") is None  # no user, no key, no money
    [pending] = await signups.list_signups(admin)
    assert (pending.name, pending.team, pending.role, pending.group, pending.status) == ("zoe@example.com", "eng", "viewer", "trial", "pending")
    requested = [entry for entry in await audit.list_entries(admin) if entry.action == "signup.request"]
    assert [(entry.via, entry.user_name, entry.target) for entry in requested] == [("sso", "zoe@example.com", f"signup {pending.id}")]

    for caller in ("lead", "dev", "outsider"):
        with pytest.raises(Forbidden, match="Only a site admin may approve or reject sign-ups"):
            await signups.approve_signup(admin, pending.id, caller=callers[caller])
        with pytest.raises(Forbidden):
            await signups.list_signups(admin, caller=callers[caller])
    after, user = await signups.approve_signup(admin, pending.id, caller=callers["root"])
    assert after.status == "approved" and after.decided_at is not None
    assert (user.name, user.groups, user.balance_micros, user.is_admin) == ("zoe@example.com", ("trial",), 0, False)
    assert [(m.team_name, m.role) for m in await admin.store.memberships(user.id)] == [("eng", "viewer")]
    assert await admin.store.list_keys(user.id) == []

    signed_in = await sso_users.sign_on(admin, newcomer(), APPROVAL)
    assert signed_in.id == user.id
    assert [(m.team_name, m.role) for m in await admin.store.memberships(user.id)] == [("eng", "viewer")]  # kept: not a mapped team
    with pytest.raises(Conflict, match="the sign-up of 'zoe@example.com' is approved already"):
        await signups.approve_signup(admin, pending.id)
    assert await signups.list_signups(admin) == []


async def test_a_rejected_person_is_refused_and_a_taken_name_or_a_gone_team_is_handled(admin, world):
    eng, _, _ = world
    with pytest.raises(Pending):
        await sso_users.sign_on(admin, newcomer("yan@example.com"), APPROVAL)
    yan = await signups.find_signup(admin, "yan@example.com")
    rejected = await signups.reject_signup(admin, yan.id)
    assert rejected.status == "rejected"
    with pytest.raises(Refused, match="declined your sign-up") as refused:
        await sso_users.sign_on(admin, newcomer("yan@example.com"), APPROVAL)
    assert not isinstance(refused.value, Pending)
    with pytest.raises(Conflict, match="rejected already"):
        await signups.reject_signup(admin, yan.id)
    with pytest.raises(NotFound, match="no sign-up with id 999"):
        await signups.approve_signup(admin, 999)
    with pytest.raises(NotFound, match="no sign-up of 'nobody'"):
        await signups.find_signup(admin, "nobody")
    with pytest.raises(Invalid, match="status must be one of pending, approved, rejected"):
        await signups.list_signups(admin, status="maybe")

    for name in ("kim@example.com", "lee@example.com"):
        with pytest.raises(Pending):
            await sso_users.sign_on(admin, newcomer(name), APPROVAL)
    await users.create_user(admin, "kim@example.com")  # added by hand meanwhile
    kim = await signups.find_signup(admin, "kim@example.com")
    with pytest.raises(Conflict, match="user 'kim@example.com' already exists"):
        await signups.approve_signup(admin, kim.id)
    assert (await signups.find_signup(admin, "kim@example.com")).status == "pending"
    await teams.delete_team(admin, eng.id)
    _, lee = await signups.approve_signup(admin, (await signups.find_signup(admin, "lee@example.com")).id)
    assert lee.groups == ("trial",) and await admin.store.memberships(lee.id) == []  # its team is gone: no membership


async def test_without_approval_or_with_a_mapped_group_nobody_waits(admin, world):
    user = await sso_users.sign_on(admin, newcomer(), SignUp(enabled=True, team="eng", role="member"))
    assert [(m.team_name, m.role) for m in await admin.store.memberships(user.id)] == [("eng", "member")]
    mapped = await sso_users.sign_on(admin, SignOn("max@example.com", {"ops": "member"}, ("ops",)), APPROVAL)
    assert [m.team_name for m in await admin.store.memberships(mapped.id)] == ["ops"]  # the operator's mapping needs no approval
    assert await signups.list_signups(admin, status=None) == []
    with pytest.raises(Refused, match="cannot be a user name here"):
        await sso_users.sign_on(admin, newcomer("two words"), APPROVAL)
