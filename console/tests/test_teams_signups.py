"""Sign-ups waiting for approval on the console's users page (docs/teams.md#self-sign-up):
a site admin approves or rejects them, with the admin layer's rules and messages;
nobody else may. The sign-in that makes them is console/tests/sso/test_browser_sso.py's."""

from __future__ import annotations

from gateway_core.admin import Admin, signups


async def test_a_site_admin_approves_and_rejects_sign_ups_on_the_users_page(browsers, seed, users):
    async def ask(port):
        admin = Admin(port)
        for name in ("zoe@example.com", "yan@example.com"):
            await signups.request_signup(admin, name, team="", role="member", group="default")
        return {s.name: s.id for s in await signups.list_signups(admin)}

    ids = seed._admin(ask)
    root = await browsers("root")
    status, page = await root.get("/console/admin/users")
    assert status == 200 and 'id="pending-signups"' in page and 'data-signup="zoe@example.com"' in page
    status, page = await root.get("/console/admin/users", headers={"Accept-Language": "zh-CN"})
    assert "等待批准的注册" in page and "批准" in page
    status, _ = await root.post(f"/console/admin/signups/{ids['zoe@example.com']}/approve", {}, csrf_from="/console/admin/users", allow_redirects=False)
    assert status == 303
    status, _ = await root.post(f"/console/admin/signups/{ids['yan@example.com']}/reject", {}, csrf_from="/console/admin/users", allow_redirects=False)
    assert status == 303
    _, page = await root.get("/console/admin/users")
    assert 'id="pending-signups"' not in page and ">zoe@example.com</a>" in page and "yan@example.com" not in page
    status, page = await root.post(f"/console/admin/signups/{ids['yan@example.com']}/approve", {}, csrf_from="/console/admin/users")
    assert status == 409 and "the sign-up of &#39;yan@example.com&#39; is rejected already" in page
    alice = await browsers("alice")
    status, _ = await alice.post(f"/console/admin/signups/{ids['yan@example.com']}/reject", {}, csrf_from="/console/dashboard")
    assert status == 403
