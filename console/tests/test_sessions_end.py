"""A password change or reset ends the user's console sessions (the one that changed
it gets a new one), and a user enabled again does not get back the sessions it had
before it was disabled: they stay signed out until they sign in again."""

from __future__ import annotations


async def signed_in(browser) -> bool:
    status, page = await browser.get("/console/keys")
    return status == 200 and "Sign out" in page


async def test_changing_ones_password_ends_the_other_sessions_and_keeps_this_one(gateway, browsers):
    here, elsewhere = await browsers("alice"), await browsers("alice")
    status, page = await here.post(
        "/console/account", {"current": "alice-password-1", "new": "alice-password-2", "again": "alice-password-2"}, csrf_from="/console/account"
    )
    assert status == 200, page[:300]
    assert await signed_in(here)
    assert not await signed_in(elsewhere)
    status, page = await elsewhere.sign_in("alice", "alice-password-2")
    assert status == 200 and "Sign out" in page


async def test_an_admin_reset_ends_the_users_sessions(gateway, browsers, users):
    alice, root = await browsers("alice"), await browsers("root")
    status, _ = await root.post(f"/console/admin/users/{users['alice']}/password", {"password": "reset-password-9"}, csrf_from=f"/console/admin/users/{users['alice']}")
    assert status == 200
    assert not await signed_in(alice)
    assert await signed_in(root)  # the admin's own session is untouched


async def test_enabling_a_user_again_does_not_revive_old_sessions(gateway, browsers, users):
    alice, root = await browsers("alice"), await browsers("root")
    page = f"/console/admin/users/{users['alice']}"
    assert (await root.post(page + "/disable", {}, csrf_from=page))[0] == 200
    assert not await signed_in(alice)
    assert (await root.post(page + "/enable", {}, csrf_from=page))[0] == 200
    assert not await signed_in(alice)  # the old cookie stays dead
    status, _ = await alice.sign_in("alice")
    assert status == 200 and await signed_in(alice)
