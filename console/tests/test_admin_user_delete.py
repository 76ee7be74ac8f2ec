"""An operator deletes a user from the user's page: keys gone, ledger kept; not
oneself; operators only."""

from __future__ import annotations


async def test_an_operator_deletes_a_user_but_not_themselves(browsers, seed, users, gateway):
    key_id, _ = seed.key(users["bob"], name="bobs")
    root = await browsers("root")
    bob_page = f"/console/admin/users/{users['bob']}"
    _, page = await root.get(bob_page)
    assert f'action="{bob_page}/delete"' in page
    _, own = await root.get(f"/console/admin/users/{users['root']}")
    assert f'/admin/users/{users["root"]}/delete"' not in own  # no button to delete oneself
    status, refused = await root.post(f"/console/admin/users/{users['root']}/delete", {}, csrf_from="/console/admin/users")
    assert status == 400 and "You cannot delete yourself." in refused
    ledger_before = seed.rows("SELECT COUNT(*) AS n FROM ledger WHERE user_id = ?", (users["bob"],))
    status, page = await root.post(bob_page + "/delete", {}, csrf_from=bob_page)
    assert status == 200
    assert seed.rows("SELECT deleted FROM api_keys WHERE id = ?", (key_id,)) == [{"deleted": 1}]
    assert seed.rows("SELECT COUNT(*) AS n FROM ledger WHERE user_id = ?", (users["bob"],)) == ledger_before
    _, page = await root.get(bob_page)
    assert ">deleted<" in page and f'action="{bob_page}/delete"' not in page
    status, page = await root.post(bob_page + "/delete", {}, csrf_from="/console/admin/users")
    assert status == 400 and "already deleted" in page
    assert [r["action"] for r in seed.rows("SELECT action FROM audit_log WHERE target = ?", (f"user {users['bob']}",))] == ["user.delete"]
    bob = await browsers()
    status, page = await bob.sign_in("bob")
    assert "Sign out" not in page


async def test_a_non_admin_cannot_delete_a_user(browsers, seed, users, gateway):
    alice = await browsers("alice")
    status, _ = await alice.post(f"/console/admin/users/{users['bob']}/delete", {}, csrf_from="/console/keys")
    assert status == 403
    assert seed.rows("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'user.delete'") == [{"n": 0}]
